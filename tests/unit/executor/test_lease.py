"""The run lease: who may take it (a pure table), and the keeper's claim, heartbeat, release
and abandon over an in-memory store (the Kafka store is tested on the sandbox)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace

import pytest

from executor.lease import TTL_SECONDS, LeaseKeeper, LeaseRecord, claim_problem
from kafka_rebalance.core.errors import LeaseLost, LeaseRefused

NOW = 1_000_000.0
LIVE = LeaseRecord("run-a", "host-1 pid 7, journal /x/plan.json.journal", NOW - 5)
STALE = LeaseRecord("run-a", "host-1 pid 7, journal /x/plan.json.journal", NOW - TTL_SECONDS - 1)


def age(record: LeaseRecord | None) -> float:
    return 0.0 if record is None else NOW - record.at


@pytest.mark.parametrize(("current", "take_over", "refused"), [
    (None, None, None),
    (LeaseRecord("run-a", "h", NOW - 5, held=False), None, None),  # released
    (LIVE, None, "another run holds this cluster: run run-a"),
    (STALE, None, "has not renewed it for 46 s (killed?)"),
    (STALE, "run-a", None),  # the operator names the dead run
    (STALE, "run-z", "--take-over-lease run-a"),  # naming another run takes nothing
    (LIVE, "run-a", "is alive: it renewed the cluster's lease 5 s ago"),  # it would stop mid-move
])
def test_who_may_take_the_lease(current: LeaseRecord | None, take_over: str | None,
                                refused: str | None) -> None:
    problem = claim_problem(current, "run-b", age(current), take_over)
    if refused is None:
        assert problem is None
    else:
        assert problem is not None and refused in problem
        assert "nothing was changed" in problem


def test_the_same_run_takes_its_own_lease_back_live_or_stale() -> None:
    assert claim_problem(LIVE, "run-a", age(LIVE)) is None
    assert claim_problem(STALE, "run-a", age(STALE)) is None


def test_the_same_run_live_on_another_machine_keeps_its_lease() -> None:
    """A copy of the journal resumed elsewhere while the run still works: the file lock
    cannot see it, the lease's host can. On the same machine the journal's lock decides;
    once stale, the lease passes to the run wherever it resumes."""
    live = replace(LIVE, host="host-1")
    problem = claim_problem(live, "run-a", age(live), host="host-2")
    assert problem is not None and "alive on host-1" in problem
    assert "nothing was changed" in problem
    assert claim_problem(live, "run-a", age(live), host="host-1") is None
    assert claim_problem(replace(STALE, host="host-1"), "run-a", age(STALE), host="host-2") is None
    assert claim_problem(LIVE, "run-a", age(LIVE), host="host-2") is None  # an older lease: no host


def test_records_round_trip_and_garbage_is_no_record() -> None:
    assert LeaseRecord.decode(LIVE.encode()) == LIVE
    assert LeaseRecord.decode(replace(LIVE, host="h").encode()) == replace(LIVE, host="h")
    assert LeaseRecord.decode(b"not json") is None
    assert LeaseRecord.decode(b'{"run_id": "x"}') is None


class MemoryStore:
    """A LeaseStore in memory; claims are serialized like the fenced Kafka claims."""

    def __init__(self) -> None:
        self.value: bytes | None = None
        self.puts: list[LeaseRecord] = []
        self.written_ago: float | None = None  # the cluster's age of the value (None: unknown)
        self._lock = threading.Lock()

    def claim(self, decide: Callable[[bytes | None, float | None], bytes]) -> None:
        with self._lock:
            self.value = decide(self.value, self.written_ago)
            record = LeaseRecord.decode(self.value)
            assert record is not None
            self.puts.append(record)

    def close(self) -> None:
        pass

    def current(self) -> LeaseRecord | None:
        return None if self.value is None else LeaseRecord.decode(self.value)


def test_a_second_run_is_refused_until_the_first_releases() -> None:
    store = MemoryStore()
    first = LeaseKeeper(store, heartbeat_seconds=60)
    first.acquire("run-a", "host-1")
    with pytest.raises(LeaseRefused, match="another run holds this cluster: run run-a"):
        LeaseKeeper(store, heartbeat_seconds=60).acquire("run-b", "host-2")
    assert store.current() is not None and store.current().run_id == "run-a"  # type: ignore[union-attr]
    first.release()
    released = store.current()
    assert released is not None and not released.held
    second = LeaseKeeper(store, heartbeat_seconds=60)
    second.acquire("run-b", "host-2")
    second.release()


def test_an_abandoned_lease_passes_only_to_its_run_or_a_named_take_over() -> None:
    clock = [NOW]
    store = MemoryStore()
    killed = LeaseKeeper(store, clock=lambda: clock[0], heartbeat_seconds=60)
    killed.acquire("run-a", "host-1")
    killed.abandon()  # interrupted mid-move: not released
    clock[0] += TTL_SECONDS + 10
    with pytest.raises(LeaseRefused, match="--take-over-lease run-a"):
        LeaseKeeper(store, clock=lambda: clock[0]).acquire("run-b", "host-2")
    resumed = LeaseKeeper(store, clock=lambda: clock[0], heartbeat_seconds=60)
    resumed.acquire("run-a", "host-3")  # the same run's resume
    resumed.release()


def test_the_holder_renews_its_lease_while_it_runs() -> None:
    store = MemoryStore()
    keeper = LeaseKeeper(store, heartbeat_seconds=0.05)
    keeper.acquire("run-a", "host-1")
    deadline = time.monotonic() + 5
    while len(store.puts) < 3:
        assert time.monotonic() < deadline, "no heartbeat"
        time.sleep(0.02)
    keeper.release()
    beats = [r for r in store.puts if r.held][1:]  # after the claim
    assert all(r.run_id == "run-a" for r in store.puts)
    assert [r.at for r in beats] == sorted(r.at for r in beats)
    assert not store.puts[-1].held


def test_a_holder_taken_over_stops_renewing_and_never_releases_the_new_holders_lease() -> None:
    """The run's process hung past the TTL and an operator took its lease over: the old
    process's next heartbeat finds the lease is not its claim any more, stops and says so,
    and its release leaves the new holder's lease as it is."""
    clock = [NOW]
    store = MemoryStore()
    hung = LeaseKeeper(store, clock=lambda: clock[0], heartbeat_seconds=0.05)
    hung.acquire("run-a", "host-1 pid 7")
    hung._stop_beating()  # hung: no beat for a while
    clock[0] += TTL_SECONDS + 10
    taker = LeaseKeeper(store, clock=lambda: clock[0], heartbeat_seconds=60)
    taker.acquire("run-b", "host-2 pid 9", take_over="run-a")
    with pytest.raises(LeaseLost, match="held by run run-b"):
        hung._write_if_ours(LeaseRecord("run-a", "host-1 pid 7", NOW, host=""), held=True)
    with pytest.raises(LeaseLost):
        hung.release()
    current = store.current()
    assert current is not None and current.run_id == "run-b" and current.held
    taker.release()


def test_the_heartbeat_notices_the_take_over_by_itself() -> None:
    store = MemoryStore()
    keeper = LeaseKeeper(store, heartbeat_seconds=0.05)
    keeper.acquire("run-a", "host-1 pid 7")
    other = LeaseKeeper(store, heartbeat_seconds=60)
    other.acquire("run-a", "host-1 pid 8")  # the same run resumed by another process
    deadline = time.monotonic() + 5
    while not keeper.lost:
        assert time.monotonic() < deadline, "the take-over went unnoticed"
        time.sleep(0.02)
    assert "held by run run-a (host-1 pid 8)" in keeper.lost
    assert store.current() is not None and store.current().holder == "host-1 pid 8"  # type: ignore[union-attr]
    other.release()


@pytest.mark.parametrize(("skew", "written_ago", "refused"), [
    (-3600.0, 2.0, "another run holds this cluster"),  # holder's clock an hour behind: live
    (+3600.0, TTL_SECONDS + 5, "has not renewed it for 50 s"),  # an hour ahead: killed
    (-3600.0, None, "has not renewed it for 3600 s"),  # no cluster clock: the holder's `at`
])
def test_the_lease_age_is_the_clusters_when_the_store_can_tell(
        skew: float, written_ago: float | None, refused: str) -> None:
    """The holder's `at` comes from its own clock; the claimant trusts the store's age (the
    broker's append times) over its own clock against the holder's."""
    store = MemoryStore()
    store.value = LeaseRecord("run-a", "host-1 pid 7", NOW + skew).encode()
    store.written_ago = written_ago
    with pytest.raises(LeaseRefused, match=refused):
        LeaseKeeper(store, clock=lambda: NOW, heartbeat_seconds=60).acquire("run-b", "host-2")
