"""kill -9 at every step: resume completes, cancel reverts, clear-throttles restores; nothing left.

The fake admin raises `Crash` (not an Exception: nothing catches it) at its k-th call, either
before the call takes effect or just after; the journal records are replayed from JSON exactly as
a new process would read them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from executor.journal import JournalFile, header_record
from executor.records import RunOutcome
from executor.runner import Executor, clear_throttles_from
from executor.state import TERMINAL, MoveState
from executor.throttle import FOLLOWER_RATE, LEADER_RATE, LEADER_REPLICAS
from kafka_rebalance.core.errors import ExecutionError
from tests.unit.executor.fakes import Crash, World, make_world


def prepared() -> World:
    world = make_world()
    world.admin.broker_cfg[1] = {LEADER_RATE: "4000000"}
    world.admin.broker_cfg[4] = {FOLLOWER_RATE: "90000000", "num.io.threads": "8"}
    world.admin.topic_cfg["orders"] = {LEADER_REPLICAS: "7:1"}
    return world


def total_calls() -> int:
    world = prepared()
    Executor.start(world.plan, world.ports(), world.config, world.open_sink).run()
    return len(world.admin.calls)


TOTAL = total_calls()


def crash(world: World, k: int, after: bool) -> list[dict[str, object]]:
    """Run until the k-th admin call kills the process; the journal as a new process reads it."""
    world.admin.crash_at, world.admin.crash_after_effect = k, after
    with pytest.raises(Crash):
        Executor.start(world.plan, world.ports(), world.config, world.open_sink).run()
    world.admin.crash_at = None
    records: list[dict[str, object]] = json.loads(json.dumps(world.sink.records))
    return records


def assert_clean(world: World, before: object) -> None:
    assert world.admin.configs() == before, "a throttle was left behind or not restored"
    assert world.admin.moving == {}


@pytest.mark.parametrize("after", [False, True], ids=["before-effect", "after-effect"])
def test_crash_anywhere_then_resume_completes_and_leaves_nothing(after: bool) -> None:
    assert TOTAL > 60
    for k in range(1, TOTAL + 1):
        world = prepared()
        before = world.admin.configs()
        records = crash(world, k, after)
        if records:
            executor = Executor.resume(records, world.sink, world.ports(), world.config)
        else:  # died during preflight: nothing was journaled or changed; start again
            executor = Executor.start(world.plan, world.ports(), world.config, world.open_sink)
        report = executor.run()
        assert report.outcome is RunOutcome.COMPLETED, (k, report)
        assert {m.name: world.admin.replicas()[m.name] for m in world.plan.moves} == {
            m.name: m.target for m in world.plan.moves}, k
        assert_clean(world, before)


@pytest.mark.parametrize("after", [False, True], ids=["before-effect", "after-effect"])
def test_crash_anywhere_then_cancel_reverts_what_was_in_flight(after: bool) -> None:
    for k in range(1, TOTAL + 1):
        world = prepared()
        before = world.admin.configs()
        records = crash(world, k, after)
        if not records:
            continue
        executor = Executor.for_cancel(records, world.sink, world.ports(), world.config)
        executor.cancel()
        report = executor.run()
        assert report.outcome is RunOutcome.CANCELLED, k
        assert all(state in TERMINAL for state in report.states.values())
        for m in world.plan.moves:  # each partition is either untouched or fully moved
            assert world.admin.replicas()[m.name] in (m.current, m.target), (k, m.name)
            if world.admin.replicas()[m.name] == m.target != m.current:
                # its copy ended before the cancel reached it: the data is there, so it is
                # done (told so), never reported cancelled while it sits on its target
                assert report.states[m.name] is MoveState.DONE, (k, m.name)
        assert_clean(world, before)


def test_crash_anywhere_then_clear_throttles_restores_every_config() -> None:
    """A copy still in flight keeps its throttle (it would run at full speed without it) and
    is named; once it has ended, clear-throttles restores the rest exactly."""
    for k in range(1, TOTAL + 1):
        world = prepared()
        before = world.admin.configs()
        records = crash(world, k, after=True)
        if not records:
            continue
        copying = sorted(str(tp) for tp in world.admin.moving)
        problems = clear_throttles_from(records, world.sink, world.ports(), world.config)
        assert sorted(p.split(":")[0] for p in problems) == copying, (k, problems)
        if copying:
            assert all("still copying" in p for p in problems)
            assert world.admin.configs() != before, k  # the copies keep their throttle
            world.clock.sleep(3600)  # the copies end
            problems = clear_throttles_from(world.sink.records, world.sink, world.ports(),
                                            world.config)
            assert problems == [], (k, problems)
        assert world.admin.configs() == before, k


def test_resume_from_a_real_journal_file_with_a_torn_tail(tmp_path: Path) -> None:
    world = prepared()
    before = world.admin.configs()
    path = tmp_path / "run.journal"
    files: list[JournalFile] = []

    def open_file(header: dict[str, object]) -> JournalFile:
        files.append(JournalFile.create(path, header))
        return files[-1]
    world.admin.crash_at = TOTAL // 2
    with pytest.raises(Crash):
        Executor.start(world.plan, world.ports(), world.config, open_file).run()
    files[0].close()  # the process is gone: its lock with it
    with path.open("ab") as f:
        f.write(b'{"kind":"state","move":"orders-1","state":"thr')
    world.admin.crash_at = None
    sink, records = JournalFile.open(path)
    report = Executor.resume(records, sink, world.ports(), world.config).run()
    sink.close()
    assert report.outcome is RunOutcome.COMPLETED
    assert_clean(world, before)


def test_resume_refuses_a_finished_run_and_a_foreign_reassignment() -> None:
    world = prepared()
    Executor.start(world.plan, world.ports(), world.config, world.open_sink).run()
    with pytest.raises(Exception, match="nothing to resume"):
        Executor.resume(world.sink.records, world.sink, world.ports(), world.config)
    world = prepared()
    records = crash(world, TOTAL // 3, after=False)
    from topology.model import TopicPartition
    world.admin.alter_partition_reassignments({TopicPartition("other", 0): [2, 3, 4]})
    with pytest.raises(Exception, match="already in progress for other-0"):
        Executor.resume(records, world.sink, world.ports(), world.config)


def test_resume_refuses_when_a_pending_move_went_stale() -> None:
    world = prepared()
    records = crash(world, 7, after=False)  # during the first move's start
    world.admin.add("events", 0, (2, 4), 1)  # someone moved events-0 meanwhile
    with pytest.raises(Exception, match=r"events-0 \(plan expects \[3, 1\], cluster has \[2, 4\]"):
        Executor.resume(records, world.sink, world.ports(), world.config)


def test_header_is_the_first_record() -> None:
    world = prepared()
    records = crash(world, TOTAL // 2, after=False)
    header = header_record(world.plan, world.config.to_journal())
    assert records[0] == json.loads(json.dumps(header))


def die_cancelling(world: World, j: int, after: bool) -> list[dict[str, object]]:
    """Kill the run mid-copy of its first move, then kill the process cancelling it at its
    j-th admin call; the journal as the next process reads it."""
    records = crash(world, 40, after=False)
    world.admin.crash_at, world.admin.crash_after_effect = len(world.admin.calls) + j, after
    with pytest.raises(Crash):
        first = Executor.for_cancel(records, world.sink, world.ports(), world.config)
        first.cancel()
        first.run()
    world.admin.crash_at = None
    again: list[dict[str, object]] = json.loads(json.dumps(world.sink.records))
    return again


def test_crash_during_cancel_then_cancel_again_is_clean() -> None:
    probe = prepared()
    records = crash(probe, 40, after=False)  # mid-copy of the first move
    calls_before = len(probe.admin.calls)
    executor = Executor.for_cancel(records, probe.sink, probe.ports(), probe.config)
    executor.cancel()
    executor.run()
    cancel_calls = len(probe.admin.calls) - calls_before
    assert cancel_calls >= 5
    for j in range(1, cancel_calls + 1):
        for after in (False, True):
            world = prepared()
            before = world.admin.configs()
            again = die_cancelling(world, j, after)
            second = Executor.for_cancel(again, world.sink, world.ports(), world.config)
            second.cancel()
            assert second.run().outcome is RunOutcome.CANCELLED
            assert world.admin.replicas()["orders-0"] == (1, 2), (j, after)
            assert_clean(world, before)


def test_a_resume_that_takes_over_a_killed_cancel_finishes_it_as_cancelled() -> None:
    """The process cancelling the run dies mid-cancel; a `resume` of the journal (not a second
    `cancel`) reverts what is left, starts nothing and ends the run cancelled."""
    for j in (1, 3):
        world = prepared()
        before = world.admin.configs()
        again = die_cancelling(world, j, after=False)
        resumed = Executor.resume(again, world.sink, world.ports(), world.config)
        report = resumed.run()
        assert report.outcome is RunOutcome.CANCELLED, j
        assert report.done == 0
        assert world.admin.replicas()["orders-0"] == (1, 2)
        assert_clean(world, before)


def test_resume_refuses_a_journal_whose_done_moves_are_not_on_the_cluster() -> None:
    """A finished run's journal cut in half after the cluster was put back: the moves it marks
    done sit at their original replicas. Resume names them and changes nothing."""
    world = prepared()
    Executor.start(world.plan, world.ports(), world.config, world.open_sink).run()
    records: list[dict[str, object]] = json.loads(json.dumps(world.sink.records))
    for move in world.plan.moves:  # an operator puts the cluster back
        part = world.admin.parts[move.key]
        part.replicas = part.isr = move.current
        part.leader = move.current[0]
    done_first = next(i for i, r in enumerate(records)
                      if r.get("kind") == "state" and r.get("state") == "done")
    cut = records[: done_first + 1]
    before_calls = list(world.admin.calls)
    before = world.admin.configs()
    with pytest.raises(ExecutionError, match="marks done are not in place"):
        Executor.resume(cut, world.sink, world.ports(), world.config)
    assert world.admin.configs() == before
    assert world.admin.moving == {}
    new_calls = [name for name, _ in world.admin.calls[len(before_calls):]]
    assert not [c for c in new_calls if c.startswith(("alter", "elect"))], new_calls


def test_a_resume_with_a_lower_cap_slows_the_copy_in_flight_at_once() -> None:
    """The copy a crash left in flight keeps its journaled throttle unless resumed with a
    lower --max-mbps: then every rate it set comes down to the new cap before the first poll,
    and the journal records the lower rates."""
    from dataclasses import replace

    from executor.config import Event, EventKind
    from executor.journal import replay

    world = prepared()
    before = world.admin.configs()

    def crash_copying(w: World, e: Event) -> None:
        if e.kind is EventKind.PROGRESS:
            raise Crash("killed while copying")
    world.hooks.append(crash_copying)
    with pytest.raises(Crash):
        Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                       reporter=world.reporter).run()
    world.hooks.clear()
    (copying,) = world.admin.moving
    lower = world.config.max_bytes_per_sec // 4
    executor = Executor.resume(world.sink.records, world.sink, world.ports(),
                               replace(world.config, max_bytes_per_sec=lower))
    journaled = replay(world.sink.records).moves[f"{copying.topic}-{copying.partition}"]
    assert journaled.throttle is not None and journaled.throttle.broker_rates
    for broker, rates in journaled.throttle.broker_rates.items():
        for name, rate in rates.items():  # journaled and set on the broker alike
            assert rate <= lower and int(world.admin.broker_cfg[broker][name]) == rate
    assert world.admin.copy_rate(copying) <= lower
    assert executor.run().outcome is RunOutcome.COMPLETED
    assert_clean(world, before)
    # the journal keeps the new cap from the resume on: views rate later moves against it
    run = replay(world.sink.records)
    resumed_at = next(r["at"] for r in world.sink.records if r["kind"] == "resume")
    assert [r.get("max_bytes_per_sec") for r in world.sink.records
            if r["kind"] == "resume"] == [lower]
    assert run.cap_at() == lower and run.cap_at(resumed_at - 1) == world.config.max_bytes_per_sec


def test_a_resume_under_its_own_cap_records_no_cap() -> None:
    world = prepared()
    records = crash(world, 40, after=False)
    assert Executor.resume(records, world.sink, world.ports(), world.config).run().outcome \
        is RunOutcome.COMPLETED
    assert not [r for r in world.sink.records if r["kind"] == "resume"]


def test_a_copy_that_ended_while_no_executor_ran_gets_no_made_up_rate() -> None:
    """Killed mid-copy; the copy finishes under its throttle while nothing runs; an hour
    later `resume` finds it done. When it ended is unknown: the journal says so, and the
    run's timeline gives it no copy time (its rate would count the hour)."""
    from executor.decide import COPY_ENDED_UNSEEN
    from executor.timeline import timeline

    world = prepared()
    records = crash(world, 40, after=False)  # mid-copy of the first move
    world.clock.sleep(3600.0)
    resumed = Executor.resume(records, world.sink, world.ports(), world.config)
    assert resumed.run().outcome is RunOutcome.COMPLETED
    first = world.plan.moves[0].name
    verifying = [r for r in world.sink.records if r.get("move") == first
                 and r.get("state") == "verifying"]
    assert [r.get("reason") for r in verifying] == [COPY_ENDED_UNSEEN]
    times = timeline(world.sink.records)
    assert times.of(first).copy_seconds is None
    later = world.plan.moves[1].name  # copied while this process watched: timed as ever
    assert times.of(later).copy_seconds is not None
