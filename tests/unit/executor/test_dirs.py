"""The log-dir stage: replicas moved between a JBOD broker's dirs under a throttle that is
journaled before it is set and put back after; a resumed stage asks only for what is left, a
cancel keeps replicas where they are, and a refusal costs only that replica's move."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from executor.config import ExecutorConfig, Ports
from executor.dirs import DIR_RATE, DirStage
from executor.journal import Journal, header_record, replay
from executor.plan import ExecutionPlan
from executor.records import Record
from kafka_rebalance.core.ports import BrokerLogDirs, ConfigChanges, LogDirInfo
from planner.log_dirs import DirMove, DirPlan
from tests.unit.executor.fakes import FakeClock, MemorySink
from topology.model import TopicPartition

MB = 1_000_000
MOVES = (DirMove("orders", 0, 1, "/a", "/b", 30 * MB), DirMove("orders", 1, 1, "/a", "/b", MB),
         DirMove("events", 0, 2, "/c", "/d", 5 * MB))


class DirAdmin:
    """Brokers 1 (dirs /a, /b) and 2 (/c, /d): a dir move takes `polls` log-dir reads."""

    def __init__(self, polls: int = 2, refuse: Iterable[str] = ()) -> None:
        self.dirs = {(m.key, m.broker): m.source for m in MOVES}
        self.moving: dict[tuple[TopicPartition, int], list[object]] = {}
        self.stuck = False  # copies make no progress (a wedged disk)
        self.configs: dict[int, dict[str, str | None]] = {1: {DIR_RATE: None},
                                                          2: {DIR_RATE: "1000"}}
        self.polls, self.refuse, self.asked = polls, set(refuse), []

    def broker_configs(self, broker_ids: Iterable[int], names: Sequence[str]
                       ) -> dict[int, dict[str, str | None]]:
        return {b: {n: self.configs[b].get(n) for n in names} for b in broker_ids}

    def alter_broker_configs(self, changes: Mapping[int, ConfigChanges]) -> None:
        for b, values in changes.items():
            self.configs[b].update(values)

    def alter_replica_log_dirs(self, targets: Mapping[tuple[TopicPartition, int], str]
                               ) -> dict[tuple[TopicPartition, int], str | None]:
        self.asked.append(dict(targets))
        out: dict[tuple[TopicPartition, int], str | None] = {}
        for key, path in targets.items():
            if f"{key[0].topic}-{key[0].partition}@{key[1]}" in self.refuse:
                out[key] = "LogDirNotFoundError"
                continue
            if path == self.dirs[key]:
                self.moving.pop(key, None)  # to its own dir: the copy under way is dropped
            else:
                self.moving[key] = [path, self.polls]
            out[key] = None
        return out

    def log_dirs(self, broker_ids: Iterable[int]) -> dict[int, BrokerLogDirs]:
        for key, state in list(self.moving.items()):
            if self.stuck:
                continue
            state[1] = int(str(state[1])) - 1
            state.append(None)  # one more poll of copying: its bytes grow
            if int(str(state[1])) <= 0:
                self.dirs[key] = str(state[0])
                del self.moving[key]
        paths = {1: ("/a", "/b"), 2: ("/c", "/d")}
        return {b: BrokerLogDirs(
            tuple(LogDirInfo(p) for p in paths[b]),
            {tp: (d, MB) for (tp, broker), d in self.dirs.items() if broker == b},
            {tp: (str(s[0]), MB * (len(s) - 2)) for (tp, broker), s in self.moving.items()
             if broker == b})
            for b in broker_ids}


def _stage(admin: DirAdmin, records: list[Record] | None = None,
           sink: MemorySink | None = None) -> tuple[DirStage, Journal, MemorySink]:
    plan = ExecutionPlan((), None, DirPlan({}, MOVES))
    sink = sink or MemorySink()
    journal = Journal(replay(records or [header_record(plan, {})]), sink)
    ports = Ports(admin, None, FakeClock())  # type: ignore[arg-type]  # no metrics needed
    config = ExecutorConfig(max_bytes_per_sec=2000, poll_seconds=1.0)
    return DirStage(ports, config, journal, lambda _: None), journal, sink


def test_every_replica_reaches_its_dir_under_a_throttle_that_is_put_back() -> None:
    admin = DirAdmin()
    stage, journal, sink = _stage(admin)
    assert stage.run()
    assert {key: d for key, d in admin.dirs.items()} == {(m.key, m.broker): m.target
                                                         for m in MOVES}
    # the cap on broker 1; broker 2 keeps the lower rate an operator had set
    kinds = [r["kind"] for r in sink.records]
    assert kinds[0] == "dir_throttle" and sink.records[0]["present"] is True
    assert sink.records[0]["priors"] == {"1": None, "2": "1000"}
    assert kinds[-1] == "dir_throttle" and sink.records[-1]["present"] is False
    assert admin.configs == {1: {DIR_RATE: None}, 2: {DIR_RATE: "1000"}}
    assert journal.run.dirs_ended == {m.replica for m in MOVES} and not journal.run.dir_throttles


def test_a_resumed_stage_asks_only_for_what_is_left_and_keeps_the_priors_it_recorded() -> None:
    admin = DirAdmin(polls=50)
    stage, journal, sink = _stage(admin)
    stage._throttle([1, 2])
    admin.alter_replica_log_dirs({(MOVES[0].key, 1): "/b"})
    journal.dir_moved(MOVES[2].replica, 0.0)  # ended before the kill
    admin.polls = 1
    records = [header_record(journal.run.plan, {}), *sink.records]
    again, resumed, _ = _stage(admin, records)
    assert resumed.run.dir_throttles == {1: None, 2: "1000"}
    assert again.run()
    assert set(admin.asked[-1]) == {(MOVES[0].key, 1), (MOVES[1].key, 1)}
    assert admin.configs == {1: {DIR_RATE: None}, 2: {DIR_RATE: "1000"}}


def test_a_cancel_keeps_replicas_where_they_are_and_restores_the_throttle() -> None:
    admin = DirAdmin(polls=50)
    stage, journal, sink = _stage(admin)
    stage._throttle([1, 2])
    admin.alter_replica_log_dirs({(m.key, m.broker): m.target for m in MOVES})
    sink.cancel = True
    assert not stage._wait()
    stage.cancel()
    assert not admin.moving and all(admin.dirs[(m.key, m.broker)] == m.source for m in MOVES)
    assert admin.configs == {1: {DIR_RATE: None}, 2: {DIR_RATE: "1000"}}
    assert journal.run.dirs_ended == {m.replica for m in MOVES}


def test_a_refused_replica_stays_and_the_others_move() -> None:
    admin = DirAdmin(refuse={MOVES[1].replica})
    stage, _, sink = _stage(admin)
    assert stage.run()
    assert admin.dirs[(MOVES[1].key, 1)] == "/a"
    assert admin.dirs[(MOVES[0].key, 1)] == "/b"
    refused = [r for r in sink.records if r["kind"] == "dir_move" and "reason" in r]
    assert [r["replica"] for r in refused] == [MOVES[1].replica]
    assert "LogDirNotFoundError" in str(refused[0]["reason"])


def test_a_dir_cordoned_since_the_plan_gets_nothing() -> None:
    admin = DirAdmin()
    cordoned = admin.log_dirs

    def with_cordon(broker_ids: Iterable[int]) -> dict[int, BrokerLogDirs]:
        seen = cordoned(broker_ids)
        if 1 in seen:
            seen[1] = BrokerLogDirs((LogDirInfo("/a"), LogDirInfo("/b", cordoned=True)),
                                    seen[1].replicas, seen[1].futures)
        return seen
    admin.log_dirs = with_cordon  # type: ignore[method-assign]
    stage, journal, _ = _stage(admin)
    assert stage.run()
    assert admin.dirs[(MOVES[0].key, 1)] == admin.dirs[(MOVES[1].key, 1)] == "/a"
    assert admin.dirs[(MOVES[2].key, 2)] == "/d"
    assert journal.run.dirs_ended == {m.replica for m in MOVES}


def test_the_run_report_and_status_tell_the_moves_between_dirs() -> None:
    from executor.status import summarize
    from kafka_rebalance.report.run_view import run_view

    admin = DirAdmin(refuse={MOVES[1].replica})
    stage, journal, sink = _stage(admin)
    assert stage.run()
    records = [header_record(journal.run.plan, {}), *sink.records,
               {"kind": "end", "outcome": "completed", "at": 1_000_100.0}]
    said = [message for _, message in run_view(records).notes]
    assert said[0] == "log-dir throttle set on broker(s) [1, 2]"
    assert f"{MOVES[0].replica}: moved to its new log dir" in said
    assert any(m.startswith(f"{MOVES[1].replica}: not moved between log dirs (refused by "
                            "Kafka: LogDirNotFoundError") for m in said)
    assert said[-1] == "log-dir throttle put back as it was on broker(s) [1, 2]"
    status = summarize(replay(records))
    assert (status.dir_moves_ended, status.dir_moves_total) == (3, 3)
    assert not status.throttles_left


def test_a_copy_that_makes_no_progress_is_given_up_and_the_replica_kept() -> None:
    admin = DirAdmin(polls=1000)
    stage, _, sink = _stage(admin)
    stage._throttle([1, 2])
    admin.alter_replica_log_dirs({(m.key, m.broker): m.target for m in MOVES})
    for _ in range(3):
        admin.log_dirs([1, 2])  # the copies start and grow
    admin.stuck = True
    assert stage.run()
    assert not admin.moving and all(admin.dirs[(m.key, m.broker)] == m.source for m in MOVES)
    reasons = {r["replica"]: r.get("reason") for r in sink.records if r["kind"] == "dir_move"}
    # 2 MiB (two fetches) at the slowest rate in force, broker 2's 1,000 B/s: 2,098 polls
    assert reasons == {m.replica: f"no progress in 2098 polls: kept in {m.source}"
                       for m in MOVES}
    assert admin.configs == {1: {DIR_RATE: None}, 2: {DIR_RATE: "1000"}}


def test_a_copy_the_broker_lost_is_asked_for_again() -> None:
    admin = DirAdmin(polls=3)
    stage, _, _ = _stage(admin)
    real = admin.alter_replica_log_dirs
    calls = []

    def forgetful(targets: Mapping[tuple[TopicPartition, int], str]
                  ) -> dict[tuple[TopicPartition, int], str | None]:
        calls.append(dict(targets))
        answers = real(targets)
        if len(calls) == 1:  # the first request is accepted, then lost (a broker restart)
            admin.moving.clear()
        return answers
    admin.alter_replica_log_dirs = forgetful  # type: ignore[method-assign]
    assert stage.run()
    assert all(admin.dirs[(m.key, m.broker)] == m.target for m in MOVES)
    assert len(calls) >= 2 and set(calls[1]) == {(m.key, m.broker) for m in MOVES}
