"""The run loop against fakes: order, throttles set/read back/restored, gates, holds, faults."""

from __future__ import annotations

import pytest

from executor.config import Event, EventKind
from executor.gates import GatePolicy
from executor.journal import replay
from executor.preflight import PlanCheck
from executor.records import RunOutcome
from executor.runner import Executor, clear_throttles_from
from executor.state import MoveState
from executor.throttle import FOLLOWER_RATE, FOLLOWER_REPLICAS, LEADER_RATE, LEADER_REPLICAS
from kafka_rebalance.core.errors import ExecutionError
from planner.result import Move
from tests.unit.executor.fakes import MB, World, make_world
from topology.model import TopicPartition

S = MoveState


def start(world: World) -> Executor:
    return Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                          reporter=world.reporter)


def with_operator_throttles(world: World) -> None:
    world.admin.broker_cfg[1] = {LEADER_RATE: "4000000", "log.cleaner.threads": "2"}
    world.admin.broker_cfg[4] = {FOLLOWER_RATE: "90000000"}
    world.admin.topic_cfg["orders"] = {LEADER_REPLICAS: "7:1", "retention.ms": "1000"}


def test_runs_moves_one_at_a_time_in_plan_order_and_ends_as_planned() -> None:
    world = make_world()
    with_operator_throttles(world)
    before = world.admin.configs()
    t0 = world.clock.now()
    report = start(world).run()
    assert report.outcome is RunOutcome.COMPLETED
    assert report.done == 3 and report.throttles_left == ()
    assert sorted(world.admin.completed, key=str) == sorted((m.key for m in world.plan.moves),
                                                             key=str)
    starts = [r["move"] for r in world.sink.records if r.get("state") == "throttling"]
    assert starts == [m.name for m in world.plan.moves]  # started in plan order
    for m in world.plan.moves:
        assert world.admin.replicas()[m.name] == m.target
    assert world.admin.replicas()["other-0"] == (1, 2, 3)
    assert world.admin.configs() == before  # operator values restored exactly
    submits = [args for name, args in world.admin.calls if name == "alter_partition_reassignments"]
    assert len(submits) == 3  # one submission per move, never batched
    # bytes / cap = 60 MB / 10 MB/s = 6 s (move 1 is capped lower by the operator's 4 MB/s)
    elapsed = world.clock.now() - t0
    assert 30 / 4 + 30 / 10 <= elapsed <= 30 / 4 + 30 / 10 + 15


def test_no_move_is_submitted_before_its_throttle_is_read_back() -> None:
    world = make_world()
    start(world).run()
    names = [name for name, _ in world.admin.calls]
    for i, name in enumerate(names):
        if name != "alter_partition_reassignments":
            continue
        last_write = max(j for j in range(i) if names[j] == "alter_topic_configs")
        assert "broker_configs" in names[last_write + 1:i]
        assert "topic_configs" in names[last_write + 1:i]


def test_throttles_during_the_move_are_the_planned_ones() -> None:
    world = make_world()
    seen: dict[str, object] = {}

    def capture(w: World, e: Event) -> None:
        if e.kind is EventKind.PROGRESS and e.move == "orders-0" and not seen:
            seen["brokers"], seen["topics"] = w.admin.configs()
    world.hooks.append(capture)
    start(world).run()
    assert seen["brokers"] == {1: {LEADER_RATE: str(10 * MB)}, 2: {LEADER_RATE: str(10 * MB)},
                               3: {FOLLOWER_RATE: str(10 * MB)}}
    assert seen["topics"] == {"orders": {LEADER_REPLICAS: "0:1,0:2", FOLLOWER_REPLICAS: "0:3"}}
    assert world.admin.configs() == ({}, {})


def test_leaders_are_elected_after_each_move() -> None:
    world = make_world()
    start(world).run()
    assert world.admin.parts[TopicPartition("events", 0)].leader == 1
    elections = [a for n, a in world.admin.calls if n == "elect_preferred_leaders"]
    assert len(elections) == 3


def test_gate_waits_for_the_network_to_settle() -> None:
    world = make_world(cooldown_seconds=0.0)

    def noisy(w: World, e: Event) -> None:
        if e.kind is EventKind.STATE and e.message == "orders-0: cooling_down":
            w.metrics.extra[3] = 50 * MB  # broker 3 keeps receiving after the move
            w.hooks.append(calm_later)

    def calm_later(w: World, e: Event) -> None:
        waits = sum("waiting" in m for m in w.messages(EventKind.GATE))
        if e.kind is EventKind.GATE and waits >= 4:
            w.metrics.extra.clear()
    world.hooks.append(noisy)
    start(world).run()
    gates = world.messages(EventKind.GATE)
    waits = [g for g in gates if "broker 3 network in" in g]
    assert len(waits) >= 4
    # the second move was submitted only after the gate opened
    opened = next(i for i, e in enumerate(world.events)
                  if e.kind is EventKind.GATE and e.move == "orders-0" and ": open," in e.message)
    started = next(i for i, e in enumerate(world.events)
                   if e.kind is EventKind.STATE and e.message == "orders-1: submitted")
    assert opened < started
    assert TopicPartition("orders", 1) in world.admin.completed[1:]


def test_metrics_outage_holds_then_continues() -> None:
    world = make_world()
    world.metrics.down = True
    world.metrics.down_until = world.clock.now() + 7
    t0 = world.clock.now()
    started_at: list[float] = []

    def watch(w: World, e: Event) -> None:
        if e.kind is EventKind.HOLD:  # nothing was touched while holding
            assert not [n for n, _ in w.admin.calls if n.startswith("alter")]
        if e.kind is EventKind.STATE and e.message == "orders-0: throttling":
            started_at.append(w.clock.now())
    world.hooks.append(watch)
    report = start(world).run()
    assert report.outcome is RunOutcome.COMPLETED
    holds = world.messages(EventKind.HOLD)
    assert len(holds) >= 7 and "unreachable" in holds[0] and "orders-0 not started" in holds[0]
    assert started_at == [t0 + 7]


def test_metrics_outage_during_the_gate_holds_the_next_move() -> None:
    world = make_world()

    def outage(w: World, e: Event) -> None:
        if e.kind is EventKind.STATE and e.message == "orders-0: cooling_down":
            w.metrics.down = True
            w.metrics.down_until = w.clock.now() + 20
            w.hooks.remove(outage)
    world.hooks.append(outage)
    report = start(world).run()
    assert report.outcome is RunOutcome.COMPLETED
    gates = world.messages(EventKind.GATE)
    assert sum("hold" in g for g in gates) >= 15


def test_broker_death_mid_move_cancels_restores_and_stops() -> None:
    world = make_world()
    before = world.admin.configs()

    died_at: list[int] = []

    def kill(w: World, e: Event) -> None:
        if e.kind is EventKind.PROGRESS and e.move == "orders-1":
            w.admin.dead.add(4)  # orders-1's new replica
            died_at.append(len(w.admin.calls))
            w.hooks.remove(kill)
    world.hooks.append(kill)
    report = start(world).run()
    assert report.outcome is RunOutcome.STOPPED
    # no config write is tried through the dead broker (on a real cluster each waits out
    # the request timeout)
    assert not [args for name, args in world.admin.calls[died_at[0]:]
                if name == "alter_broker_configs" and 4 in args]  # type: ignore[operator]
    assert report.states == {"orders-0": S.DONE, "orders-1": S.FAILED, "events-0": S.PENDING}
    assert "broker(s) [4] went offline" in report.reasons["orders-1"]
    assert "clear-throttles" in report.reasons["orders-1"]
    assert world.admin.replicas()["orders-1"] == (2, 3)  # reverted
    assert report.throttles_left == ("orders-1",)
    # only the dead broker's own rate is left: the live brokers and the topic lists are restored
    broker_cfg, topic_cfg = world.admin.configs()
    assert {b: v for b, v in broker_cfg.items() if b != 4} == {
        b: v for b, v in before[0].items() if b != 4}
    assert topic_cfg == before[1]
    assert "broker 4: could not restore" in report.reasons["orders-1"]
    world.admin.dead.clear()  # the broker is back: clear what was left
    assert clear_throttles_from(world.sink.records, world.sink, world.ports(),
                                world.config) == []
    assert world.admin.configs() == before
    assert replay(world.sink.records).moves["orders-1"].throttles_left is False


def test_a_kept_replicas_broker_dying_as_the_copy_ends_leaves_the_move_done_and_rate_waiting(
) -> None:
    """orders-1 keeps its replica on broker 2 and adds one on 4; broker 2 dies as the copy
    ends (seen on the sandbox: the reassignment completed, then the ISR lost it). The move is
    done (its copy to 4 is in sync), the partition is under-replicated by the death, not by the
    move, and the rate on broker 2 waits for clear-throttles once it is back; the run goes on
    with the rest. (A kept broker that dies while the copy runs keeps Kafka from completing
    the reassignment: that move is reverted, as for a dead target.)"""
    world = make_world()
    before = world.admin.configs()

    def kill(w: World, e: Event) -> None:
        if e.kind is EventKind.STATE and e.message == "orders-1: verifying":
            w.admin.dead.add(2)
            part = w.admin.parts[TopicPartition("orders", 1)]
            part.isr, part.leader = (4,), 4
            w.hooks.remove(kill)
    world.hooks.append(kill)
    report = start(world).run()
    assert report.states["orders-1"] is S.DONE, report.reasons
    assert world.admin.replicas()["orders-1"] == (2, 4)
    assert report.states["events-0"] is S.DONE  # shares no broker with the death
    run = replay(world.sink.records)
    assert run.moves["orders-1"].throttles_left and report.throttles_left == ("orders-1",)
    said = [str(r.get("reason")) for r in world.sink.records
            if r.get("move") == "orders-1" and r.get("kind") == "state"]
    assert any("broker(s) [2] kept their replica but are out of sync" in r for r in said), said
    assert any("broker 2: could not restore (it is offline): the partition is in place" in r
               for r in said), said
    # events-0 took broker 4 over from orders-1 and shares broker 3 with it: it put their
    # rates back as it ended (orders-1, ended, holds none), so only the dead broker's is left
    broker_cfg, topic_cfg = world.admin.configs()
    assert {b: v for b, v in broker_cfg.items() if b != 2} == {
        b: v for b, v in before[0].items() if b != 2}
    assert topic_cfg == before[1]
    world.admin.dead.clear()  # the broker is back: clear what was left
    assert clear_throttles_from(world.sink.records, world.sink, world.ports(),
                                world.config) == []
    assert world.admin.configs() == before


def test_no_progress_cancels_the_move() -> None:
    world = make_world()
    before = world.admin.configs()
    world.admin.stalled = True
    report = start(world).run()
    assert report.states["orders-0"] is S.CANCELLED
    assert "no progress for 5 polls" in report.reasons["orders-0"]
    assert report.states["orders-1"] is S.PENDING
    assert world.admin.replicas()["orders-0"] == (1, 2)
    assert world.admin.configs() == before and world.admin.moving == {}


def test_operator_cancel_mid_move_reverts_and_restores() -> None:
    world = make_world()
    with_operator_throttles(world)
    before = world.admin.configs()

    def cancel(w: World, e: Event) -> None:
        if e.kind is EventKind.PROGRESS and e.move == "orders-1":
            w.sink.cancel = True
    world.hooks.append(cancel)
    report = start(world).run()
    assert report.outcome is RunOutcome.CANCELLED
    assert report.states == {"orders-0": S.DONE, "orders-1": S.CANCELLED,
                             "events-0": S.CANCELLED}
    assert world.admin.replicas()["orders-1"] == (2, 3)
    assert world.admin.replicas()["orders-0"] == (3, 2)
    assert world.admin.moving == {} and world.admin.configs() == before
    assert world.sink.cancel is False
    assert replay(world.sink.records).outcome is RunOutcome.CANCELLED


def test_concurrency_runs_disjoint_moves_together() -> None:
    from planner.result import Move
    moves = [Move("a", 0, (1,), (2,), 20 * MB), Move("b", 0, (3,), (4,), 20 * MB)]
    world = make_world(moves, concurrency=2)
    peak: list[int] = []
    world.hooks.append(lambda w, e: peak.append(len(w.admin.moving)))
    t0 = world.clock.now()
    assert start(world).run().outcome is RunOutcome.COMPLETED
    assert max(peak) == 2
    assert world.clock.now() - t0 < 2 * 20 / 10


def test_adaptive_rate_uses_headroom() -> None:
    from topology.model import Capacity
    caps = {b: Capacity(1e12, 12 * MB, 12 * MB) for b in (1, 2, 3, 4)}
    world = make_world(adaptive=True, adaptive_floor_bytes_per_sec=1 * MB, capacities=caps)
    world.metrics.base[3] = 9 * MB  # broker 3 is busy: 3 MB/s headroom
    seen: list[dict[int, dict[str, str]]] = []
    world.hooks.append(lambda w, e: seen.append(w.admin.configs()[0])
                       if e.kind is EventKind.PROGRESS and e.move == "orders-0" else None)
    start(world).run()
    assert seen[0][3] == {FOLLOWER_RATE: str(3 * MB)}
    assert seen[0][1] == {LEADER_RATE: str(10 * MB)}  # capped at --max-mbps


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda w: w.admin.add("orders", 1, (3, 4), 1), "orders-1 (plan expects [2, 3], cluster has "
                                                     "[3, 4])"),
    (lambda w: w.admin.dead.add(4), "target broker(s) [4] are offline"),
    # a topic deleted since the plan: a stale plan, said before its configs are read
    (lambda w: w.admin.delete_topic("events"), "the cluster no longer matches the plan: "
                                               "events-0 (no longer exists); make a new plan"),
    (lambda w: w.admin.alter_partition_reassignments({TopicPartition("other", 0): [2, 3, 4]}),
     "already in progress for other-0"),
    (lambda w: setattr(w.admin.parts[TopicPartition("other", 0)], "isr", (1, 2)),
     "1 partition(s) are under-replicated (other-0)"),
])
def test_preflight_refuses_and_changes_nothing(mutate: object, message: str) -> None:
    world = make_world()
    mutate(world)  # type: ignore[operator]
    world.admin.calls.clear()
    with pytest.raises(ExecutionError, match="preflight refused") as info:
        start(world)
    assert message in str(info.value)
    assert not [n for n, _ in world.admin.calls if n.startswith("alter")]
    assert world.sink.records == []


def under_replicated_world(**config: object) -> World:
    """The standard world with `other-0`, which no move touches, out of sync."""
    world = make_world(**config)
    world.admin.parts[TopicPartition("other", 0)].isr = (1, 2)
    return world


def test_preflight_override_for_under_replicated() -> None:
    with pytest.raises(ExecutionError, match=r"under-replicated \(other-0\)"):
        start(under_replicated_world())
    world = under_replicated_world(allow_under_replicated=True)
    start(world).tick()
    assert [r["kind"] for r in world.sink.records][:1] == ["run"]
    submitted = [args for name, args in world.admin.calls
                 if name == "alter_partition_reassignments"]
    assert submitted == [{TopicPartition("orders", 0): [3, 2]}]  # the plan's first move


def test_preflight_runs_the_plan_validator() -> None:
    world = make_world()
    with pytest.raises(ExecutionError, match="plan validation: rack rule broken for orders-0"):
        Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                       validator=lambda plan: PlanCheck(("rack rule broken for orders-0",)))


def test_progress_events_count_bytes() -> None:
    world = make_world()
    start(world).run()
    progress = [e for e in world.events if e.kind is EventKind.PROGRESS and e.move == "orders-0"]
    assert progress[0].bytes_total == 30 * MB and progress[0].total == 3
    assert progress[-1].bytes_done > progress[0].bytes_done


def test_transient_cluster_errors_are_retried() -> None:
    from tests.unit.executor.fakes import FlakyAdmin
    world = make_world()
    flaky = FlakyAdmin(world.clock, parts=world.admin.parts)
    world.admin = flaky
    world.metrics.admin = flaky

    def hiccup(w: World, e: Event) -> None:
        if e.kind is EventKind.PROGRESS and e.move == "orders-1":
            flaky.failing = 3
            w.hooks.remove(hiccup)
    world.hooks.append(hiccup)
    report = start(world).run()
    assert report.outcome is RunOutcome.COMPLETED
    assert len([m for m in world.messages(EventKind.NOTE) if "retrying" in m]) == 3


def test_a_cluster_that_stays_unreachable_stops_the_run_resumably() -> None:
    from kafka_rebalance.core.errors import ClusterError
    from tests.unit.executor.fakes import FlakyAdmin
    world = make_world()
    flaky = FlakyAdmin(world.clock, parts=world.admin.parts)
    world.admin = flaky
    world.metrics.admin = flaky
    world.hooks.append(lambda w, e: setattr(flaky, "failing", 10**6)
                       if e.kind is EventKind.PROGRESS else None)
    with pytest.raises(ClusterError, match="5 polls in a row"):
        start(world).run()
    flaky.failing = 0
    world.hooks.clear()
    report = Executor.resume(world.sink.records, world.sink, world.ports(), world.config).run()
    assert report.outcome is RunOutcome.COMPLETED
    assert world.admin.configs() == ({}, {})


def test_gate_timeout_stops_the_run_resumably() -> None:
    world = make_world(gate_timeout_seconds=10.0, cooldown_seconds=2.0)

    def noisy(w: World, e: Event) -> None:
        if e.kind is EventKind.STATE and e.message == "orders-0: cooling_down":
            w.metrics.extra[3] = 50 * MB
    world.hooks.append(noisy)
    report = start(world).run()
    assert report.outcome is RunOutcome.STOPPED
    assert report.states == {"orders-0": S.DONE, "orders-1": S.PENDING, "events-0": S.PENDING}
    assert "gate after orders-0 stayed closed for 10 s" in report.reasons["orders-0"]
    assert "broker 3 network in" in report.reasons["orders-0"]
    world.metrics.extra.clear()
    world.hooks.clear()
    again = Executor.resume(world.sink.records, world.sink, world.ports(), world.config)
    assert again.run().outcome is RunOutcome.COMPLETED


def test_preview_reads_only_and_shows_the_throttles() -> None:
    from executor.runner import preview
    world = make_world()
    with_operator_throttles(world)
    world.admin.add("events", 0, (2, 4), 1)  # stale
    world.admin.calls.clear()
    seen = preview(world.plan, world.ports(), world.config)
    problems, throttles = seen.problems, seen.throttles
    assert len(problems) == 1 and "events-0 (plan expects [3, 1]" in problems[0]
    assert [t.move for t in throttles] == ["orders-0", "orders-1", "events-0"]
    assert throttles[0].broker_rates[1] == {LEADER_RATE: 4_000_000}  # operator's lower rate
    assert throttles[0].notes and throttles[0].leader_entries == ("0:1", "0:2")
    assert not [n for n, _ in world.admin.calls if n.startswith("alter")]
    # the throttles already set are named, with the lower rate called out
    assert any(w.startswith(f"broker 1 already has {LEADER_RATE}=4000000 (lower than the cap")
               and "--delete-config" in w for w in seen.warnings), seen.warnings
    assert any(w.startswith(f"broker 4 already has {FOLLOWER_RATE}=90000000 (moves use the cap")
               for w in seen.warnings), seen.warnings
    assert any(w.startswith(f"topic orders already has {LEADER_REPLICAS}=7:1")
               for w in seen.warnings), seen.warnings
    assert len(seen.warnings) == 3


def test_a_run_names_throttles_already_set_before_it_starts() -> None:
    world = make_world()
    with_operator_throttles(world)
    report = start(world).run()
    assert report.outcome is RunOutcome.COMPLETED
    notes = world.messages(EventKind.NOTE)
    first_state = next(i for i, e in enumerate(world.events) if e.kind is EventKind.STATE)
    early = [e.message for e in world.events[:first_state] if e.kind is EventKind.NOTE]
    assert len(early) == 3 and all("already has" in n for n in early), notes


def test_a_clean_cluster_gets_no_throttle_warnings() -> None:
    world = make_world()
    start(world).run()
    assert not [n for n in world.messages(EventKind.NOTE) if "already has" in n]


def run_until_broker_4_dies_mid_move(world: World) -> None:
    """orders-1's new broker dies while it copies: the move fails, the run stops; then the
    broker comes back."""
    def kill(w: World, e: Event) -> None:
        if e.kind is EventKind.PROGRESS and e.move == "orders-1":
            w.admin.dead.add(4)
            w.hooks.remove(kill)
    world.hooks.append(kill)
    assert start(world).run().outcome is RunOutcome.STOPPED
    world.admin.dead.clear()


def test_resume_after_a_broker_death_restores_the_failed_moves_throttles() -> None:
    world = make_world()
    before = world.admin.configs()
    run_until_broker_4_dies_mid_move(world)
    # the failed move stays failed; the plan's events-0 still runs; nothing is left behind
    report = Executor.resume(world.sink.records, world.sink, world.ports(), world.config).run()
    assert report.states == {"orders-0": S.DONE, "orders-1": S.FAILED, "events-0": S.DONE}
    assert report.outcome is RunOutcome.STOPPED and report.throttles_left == ()
    assert world.admin.configs() == before


def test_cancel_of_an_ended_run_says_what_to_do() -> None:
    world = make_world()
    start(world).run()
    with pytest.raises(ExecutionError, match=r"nothing to cancel: the run ended \(completed\)"):
        Executor.for_cancel(world.sink.records, world.sink, world.ports(), world.config)


def test_a_reassignment_cancelled_outside_the_run_is_noticed() -> None:
    world = make_world()
    before = world.admin.configs()

    def outsider(w: World, e: Event) -> None:
        if e.kind is EventKind.PROGRESS and e.move == "orders-0":
            w.admin.moving.clear()  # somebody ran kafka-reassign-partitions --cancel
            w.hooks.remove(outsider)
    world.hooks.append(outsider)
    report = start(world).run()
    assert report.states["orders-0"] is S.CANCELLED
    assert "ended outside this run: cluster has [1, 2]" in report.reasons["orders-0"]
    assert report.states["orders-1"] is S.PENDING
    assert world.admin.configs() == before


def test_leadership_only_move_sets_no_throttle_and_elects_the_new_leader() -> None:
    from planner.result import Move
    move = Move("orders", 0, (1, 2), (2, 1), 30 * MB)
    world = make_world([move])
    report = start(world).run()
    assert report.outcome is RunOutcome.COMPLETED
    assert world.admin.replicas()["orders-0"] == (2, 1)
    assert world.admin.parts[TopicPartition("orders", 0)].leader == 2
    assert not [n for n, _ in world.admin.calls if n in ("alter_broker_configs",
                                                         "alter_topic_configs")]


def test_adaptive_rates_follow_headroom_during_a_move() -> None:
    from topology.model import Capacity
    caps = {b: Capacity(1e12, 12 * MB, 12 * MB) for b in (1, 2, 3, 4)}
    world = make_world(adaptive=True, adaptive_floor_bytes_per_sec=1 * MB, capacities=caps,
                       adaptive_every_polls=2, stall_intervals=50)
    world.metrics.base[3] = 11 * MB  # broker 3 busy: 1 MB/s (the floor) at first
    seen: list[str | None] = []

    def watch(w: World, e: Event) -> None:
        if e.kind is EventKind.PROGRESS and e.move == "orders-0":
            seen.append(w.admin.broker_cfg.get(3, {}).get(FOLLOWER_RATE))
            if len(seen) == 3:
                w.metrics.base[3] = 4 * MB  # traffic drops: 8 MB/s headroom
    world.hooks.append(watch)
    before = world.admin.configs()
    report = start(world).run()
    assert report.outcome is RunOutcome.COMPLETED
    assert seen[0] == str(1 * MB) and str(8 * MB) in seen
    notes = [m for m in world.messages(EventKind.NOTE) if "adaptive rates now" in m]
    assert notes and "broker 3 follower rate 8.00 MB/s" in notes[0]
    assert world.admin.configs() == before
    rates = [r for r in world.sink.records if r["kind"] == "rates"]
    assert len(rates) == 1
    replayed = replay(world.sink.records).moves["orders-0"].throttle
    assert replayed is not None and replayed.broker_rates[3] == {FOLLOWER_RATE: 8 * MB}


def test_failed_moves_start_again_with_retry_failed_once_their_broker_is_back() -> None:
    """A broker dies mid-move: the move fails and leaves the dead broker's rate behind. While
    the broker is still down, resume --retry-failed is refused and journals nothing; once it
    is back, the retry restores what the failure left and runs the move like a fresh one to
    its target (no clear-throttles needed first)."""
    world = make_world()
    before = world.admin.configs()
    run_until_broker_4_dies_mid_move(world)
    world.admin.dead.add(4)  # down again
    records = len(world.sink.records)
    with pytest.raises(ExecutionError, match="clear-throttles"):
        Executor.resume(world.sink.records, world.sink, world.ports(), world.config,
                        retry_failed=True)
    assert len(world.sink.records) == records  # refused: nothing journaled
    world.admin.dead.clear()
    report = Executor.resume(world.sink.records, world.sink, world.ports(), world.config,
                             retry_failed=True).run()
    assert report.outcome is RunOutcome.COMPLETED, report.reasons
    assert report.states == {"orders-0": S.DONE, "orders-1": S.DONE, "events-0": S.DONE}
    for move in world.plan.moves:
        assert world.admin.replicas()[move.name] == move.target
    assert world.admin.configs() == before
    with pytest.raises(ExecutionError, match="nothing to resume"):
        Executor.resume(world.sink.records, world.sink, world.ports(), world.config,
                        retry_failed=True)


def test_a_run_ended_with_failed_moves_points_at_retry_failed() -> None:
    world = make_world()
    world.admin.stalled = True
    start(world).run()  # the first move is cancelled for lack of progress; the run stops
    world.admin.stalled = False
    report = Executor.resume(world.sink.records, world.sink, world.ports(), world.config).run()
    assert report.states["orders-0"] is S.CANCELLED and report.outcome is RunOutcome.STOPPED
    with pytest.raises(ExecutionError, match=r"1 failed or cancelled move\(s\) can start again "
                                             "with --retry-failed"):
        Executor.resume(world.sink.records, world.sink, world.ports(), world.config)
    report = Executor.resume(world.sink.records, world.sink, world.ports(), world.config,
                             retry_failed=True).run()
    assert report.outcome is RunOutcome.COMPLETED


def test_a_cancel_waits_for_metadata_that_still_shows_the_replicas_in_flight() -> None:
    """Right after Kafka reverts a reassignment, metadata may still list the current and the
    target replicas together; the cancel must not take that for 'nothing to reorder'."""
    from dataclasses import replace as with_fields

    world = make_world([Move("orders", 0, (1, 2), (3, 2), 30 * MB)])
    real = world.admin.partitions
    stale = {"left": 0}

    def lagging(topics: object = None) -> list[object]:
        found = real(topics)  # type: ignore[arg-type]
        if stale["left"] > 0 and not world.admin.moving:
            stale["left"] -= 1
            return [with_fields(p, replicas=(3, 2, 1)) if p.key == TopicPartition("orders", 0)
                    else p for p in found]
        return found
    world.admin.partitions = lagging  # type: ignore[method-assign]

    def cancel(w: World, e: Event) -> None:
        if e.kind is EventKind.PROGRESS and not w.sink.cancel:
            w.sink.cancel = True
            stale["left"] = 2
    world.hooks.append(cancel)
    assert start(world).run().outcome is RunOutcome.CANCELLED
    assert world.admin.replicas()["orders-0"] == (1, 2)  # the original order, leader first
    assert stale["left"] == 0


def test_a_run_whose_lease_passed_to_another_process_stops_and_changes_nothing_more() -> None:
    from kafka_rebalance.core.errors import LeaseLost

    world = make_world()
    executor = start(world)
    lost = [""]
    executor.lease_lost = lambda: lost[0]
    at_loss = [0]

    def taken_over(w: World, e: Event) -> None:
        if e.kind is EventKind.PROGRESS and not lost[0]:
            lost[0] = "the cluster's run lease of run r passed to another process"
            at_loss[0] = len(w.admin.calls)
    world.hooks.append(taken_over)
    with pytest.raises(LeaseLost, match="passed to another process"):
        executor.run()
    after = [name for name, _ in world.admin.calls[at_loss[0]:]]
    assert "alter_partition_reassignments" not in after  # no move started after the loss
    assert world.admin.moving  # the copy it had started is the new holder's to drive


def test_cancelling_a_move_never_submitted_leaves_its_partition_alone() -> None:
    """Killed as it journaled its throttle, then cancelled: the partition's leader is not the
    preferred one for reasons of its own (a broker restarted earlier). The cancel restores
    the throttle and elects nothing, submits nothing."""
    from tests.unit.executor.fakes import Crash

    world = make_world()
    first = world.plan.moves[0]
    world.admin.parts[first.key].leader = first.current[1]  # not the preferred leader
    before = world.admin.configs()

    def killed_while_throttling(w: World, e: Event) -> None:
        if e.kind is EventKind.STATE and e.message == f"{first.name}: throttling":
            raise Crash("killed")
    world.hooks.append(killed_while_throttling)
    with pytest.raises(Crash):
        start(world).run()
    world.hooks.clear()
    calls = len(world.admin.calls)
    executor = Executor.for_cancel(world.sink.records, world.sink, world.ports(), world.config)
    executor.cancel()
    assert executor.run().outcome is RunOutcome.CANCELLED
    names = [name for name, _ in world.admin.calls[calls:]]
    assert "elect_preferred_leaders" not in names
    assert "alter_partition_reassignments" not in names
    assert world.admin.parts[first.key].leader == first.current[1]
    assert world.admin.configs() == before


def test_a_failed_move_holds_only_the_moves_that_share_its_brokers() -> None:
    """Broker 4 dies under orders-1: that move fails, events-0 (onto 4) is left pending for
    resume --retry-failed, and far-0 (brokers 5, 6, 7) is carried out all the same."""
    moves = [Move("orders", 1, (2, 3), (2, 4), 20 * MB),
             Move("events", 0, (3, 1), (1, 4), 10 * MB),
             Move("far", 0, (5, 6), (5, 7), 10 * MB)]
    world = make_world(moves)
    world.admin.broker_ids = (1, 2, 3, 4, 5, 6, 7)
    world.metrics.base.update({b: 100_000.0 for b in (5, 6, 7)})

    def kill(w: World, e: Event) -> None:
        if e.kind is EventKind.PROGRESS and e.move == "orders-1":
            w.admin.dead.add(4)
            w.hooks.remove(kill)
    world.hooks.append(kill)
    report = start(world).run()
    assert report.outcome is RunOutcome.STOPPED
    assert report.states == {"orders-1": S.FAILED, "events-0": S.PENDING, "far-0": S.DONE}
    assert world.admin.replicas()["far-0"] == (5, 7)
    end = replay(world.sink.records).end_reason
    assert "1 move(s) not started, as they share brokers with a failed move (events-0)" in end


def test_leadership_only_moves_wait_for_no_gate() -> None:
    """A demotion's moves copy nothing: each is done once its leader is elected, with no gate
    between them (the gate protects the next copy from the last one's traffic)."""
    from planner.result import Move
    moves = [Move("orders", p, (1, 2), (2, 1), 30 * MB) for p in range(3)]
    world = make_world(moves, gate=GatePolicy(consecutive=3), cooldown_seconds=0.0)
    for move in moves[1:]:
        world.admin.add(move.topic, move.partition, move.current, move.size_bytes)
    report = start(world).run()
    assert report.outcome is RunOutcome.COMPLETED
    assert [world.admin.replicas()[m.name] for m in moves] == [(2, 1)] * 3
    assert world.messages(EventKind.GATE) == []
    assert all("no gate" in report.reasons[m.name] for m in moves), report.reasons


def test_a_topic_deleted_mid_copy_ends_its_move_and_the_run_goes_on() -> None:
    """The topic of the move in flight is deleted (Kafka drops its reassignment with it): the
    move ends cancelled with the reason, its broker rates are restored, and the moves of
    other topics still run, through the same brokers too. Before, every poll failed on the
    missing topic until the run stopped as if Kafka were unreachable, throttles left."""
    world = make_world()
    before_brokers = dict(world.admin.broker_cfg)
    deleted: list[str] = []

    def delete(w: World, e: Event) -> None:
        if e.kind is EventKind.PROGRESS and e.move == "orders-1" and not deleted:
            w.admin.delete_topic("orders")
            deleted.append("orders")
    world.hooks.append(delete)
    report = start(world).run()
    assert deleted
    assert report.states["orders-0"] is S.DONE and report.states["events-0"] is S.DONE
    assert report.states["orders-1"] is S.CANCELLED
    assert "topic orders was deleted during the run" in report.reasons["orders-1"]
    assert report.throttles_left == ()
    assert world.admin.moving == {}
    assert not before_brokers  # no throttle rate of any broker is left behind
    assert all(value is None for configs in world.admin.broker_cfg.values()
               for value in configs.values()), world.admin.broker_cfg


def test_a_broker_answering_with_topic_configs_from_before_an_alter_fails_no_move() -> None:
    """Each alter of a topic's throttle lists is described the old way twice more, as by a
    broker that has not applied it yet: the read-back asks again and every move completes
    with nothing left (it failed a finished copy and left its rates)."""
    world = make_world()
    world.admin.stale_topic_reads = 2
    before = world.admin.configs()
    report = start(world).run()
    assert report.outcome is RunOutcome.COMPLETED, report.reasons
    assert world.admin.configs() == before


def test_a_failed_move_already_at_its_target_is_retried_in_place() -> None:
    """A move failed after its copy ended (its throttles could not be read back as restored):
    `resume --retry-failed` finds its partition at the target and finishes it instead of
    refusing the cluster as no longer matching the plan."""
    world = make_world()
    before = world.admin.configs()

    def lag_from_the_restore(w: World, e: Event) -> None:
        if e.kind is EventKind.STATE and e.state == S.UNTHROTTLING.value:
            w.admin.stale_topic_reads = 1000  # every read-back sees the lists still there
    world.hooks.append(lag_from_the_restore)
    report = start(world).run()
    world.hooks.clear()
    first = world.plan.moves[0]
    assert report.states[first.name] is S.FAILED, report.states
    assert world.admin.replicas()[first.name] == first.target
    world.admin.stale_topic_reads = 0
    world.admin._stale.clear()
    report = Executor.resume(world.sink.records, world.sink, world.ports(), world.config,
                             retry_failed=True).run()
    assert report.outcome is RunOutcome.COMPLETED, report.reasons
    assert world.admin.configs() == before
