"""Plans and run journals for the report tests, as fixtures: a small plan whose rack, topic and
warning strings try to break out of HTML, a zone-bound plan whose targets are forced, a
5,000-move plan, and journals of a finished and of a running run of the small plan.

Journals are built with the executor's own record functions (`header_record`,
`state_record`, `plan_throttle`), so they are what a run writes; `replay` checks each.
"""

from __future__ import annotations

import os
import shutil

import pytest

from executor.journal import end_record, header_record, state_record
from executor.plan import ExecutionPlan
from executor.records import Record, RunOutcome
from executor.state import MoveState
from executor.throttle import (
    ThrottlePlan,
    ThrottlePriors,
    plan_throttle,
    plan_to_json,
    uniform_rates,
)
from planner.goals import Budget, Goals
from planner.planfile import PlanFile, SolverInfo, make_plan_file
from planner.result import Move, SolverStatus
from topology.model import Broker, Capacity, Partition, Topology
from topology.synthetic import generate_cluster, generate_zoned

MB = 1_000_000
CAP = 1 * MB  # the run's --max-mbps 1
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
HOSTILE_RACK = "<script>alert('rack')</script>&\"$x$"
HOSTILE_WARNING = "<img src=x onerror=alert(1)> & a warning"
S = MoveState


def small_topology() -> Topology:
    """Brokers 1-3 on a rack with a hostile name, 4-6 on rack b; broker 3 and 6 are empty."""
    cap = Capacity(400 * MB, 10 * MB, 10 * MB)
    brokers = tuple(Broker(i, HOSTILE_RACK if i <= 3 else "b", cap) for i in range(1, 7))
    parts = (Partition("orders", 0, (1, 4), 40 * MB, 1000.0, 3000.0),
             Partition("orders", 1, (4, 1), 30 * MB, 800.0, 1000.0),
             Partition("orders", 2, (2, 5), 20 * MB, 500.0, 500.0),
             Partition("events", 0, (5, 2), 10 * MB, 200.0, 200.0),
             Partition("events", 1, (1, 5), 10 * MB, 200.0, 200.0))
    return Topology(brokers, parts)


SMALL_MOVES = (Move("orders", 0, (1, 4), (3, 4), 40 * MB),
               Move("orders", 1, (4, 1), (6, 1), 30 * MB),
               Move("events", 0, (5, 2), (6, 2), 10 * MB),
               Move("events", 1, (1, 5), (5, 1), 10 * MB))  # leadership only


@pytest.fixture
def small_plan() -> PlanFile:
    return make_plan_file(small_topology(), SMALL_MOVES,
                          Goals(tolerance=0.10, add_brokers=frozenset({3, 6})), Budget(),
                          SolverInfo(SolverStatus.FEASIBLE, 70 * MB, 0.14, 1.5, ("none",)),
                          "2026-01-01T00:00:00+00:00", (HOSTILE_WARNING,))


@pytest.fixture
def zoned_plan() -> PlanFile:
    """Zones of 3, 2 and 2 brokers with RF 3: the rack rule forces targets off the average."""
    topology = generate_zoned((3, 2, 2), partitions=60, seed=3)
    return make_plan_file(topology, (), Goals(), Budget(),
                          SolverInfo(SolverStatus.BEST_EFFORT, 0), "2026-01-01T00:00:00+00:00")


def _move_many(topology: Topology, count: int) -> tuple[Move, ...]:
    """`count` moves: each partition's last replica goes to a broker of the same rack that
    does not hold it yet (the newest such broker), cycling over partitions."""
    rack = {b.id: b.rack for b in topology.brokers}
    moves: list[Move] = []
    for p in topology.partitions[:count]:
        last = p.replicas[-1]
        spare = [b.id for b in topology.brokers if rack[b.id] == rack[last]
                 and b.id not in p.replicas]
        if spare:
            moves.append(Move(p.topic, p.partition, p.replicas,
                              (*p.replicas[:-1], spare[(p.partition + len(moves)) % len(spare)]),
                              p.size_bytes))
    return tuple(moves)


def _spread_plan(brokers: int, new: int, partitions: int, moves: int, seed: int) -> PlanFile:
    """`brokers` + `new` brokers on 3 racks, the new ones added and broker 7 removed."""
    topology = generate_cluster(brokers=brokers, new_brokers=new, racks=3,
                                partitions=partitions, seed=seed)
    added = frozenset(b.id for b in topology.brokers[-new:])
    return make_plan_file(topology, _move_many(topology, moves),
                          Goals(add_brokers=added, remove_brokers=frozenset({7})), Budget(),
                          SolverInfo(SolverStatus.GREEDY, 0), "2026-01-01T00:00:00+00:00")


@pytest.fixture(scope="session")
def wide_plan() -> PlanFile:
    """40 brokers on 3 racks (rows of bars), three of them new and one removed."""
    return _spread_plan(37, 3, 1200, 400, seed=5)


@pytest.fixture(scope="session")
def strip_plan() -> PlanFile:
    """200 brokers on 3 racks (one strip of dots), four of them new and one removed."""
    return _spread_plan(196, 4, 4000, 600, seed=11)


@pytest.fixture(scope="session")
def big_plan() -> PlanFile:
    """5,000 moves on a 30-broker, 3-rack synthetic cluster."""
    topology = generate_cluster(brokers=24, new_brokers=6, racks=3, partitions=5600, seed=7)
    moves = _move_many(topology, 5600)[:5000]
    assert len(moves) == 5000
    return make_plan_file(topology, moves, Goals(), Budget(),
                          SolverInfo(SolverStatus.GREEDY, 0), "2026-01-01T00:00:00+00:00")


def _throttle(move: Move, rate: int = CAP) -> ThrottlePlan:
    return plan_throttle(move, ThrottlePriors({}, move.topic, {}), uniform_rates(move, rate))


def _walk(move: Move, at: float, states: list[tuple[MoveState, float]]) -> list[Record]:
    """State records of `move` from THROTTLING (with its throttle) at `at`."""
    return [state_record(move.name, S.THROTTLING, at, throttle=_throttle(move)),
            *(state_record(move.name, state, when) for state, when in states)]


def finished_run_records() -> list[Record]:
    """A run of SMALL_MOVES at a 1 MB/s cap, settle 11 s (the quota window):

    1. orders-0 copies 40 MB in 40 s, its gate holds 16 s past the settle time;
    2. orders-1 copies 30 MB in 30 s, its follower rate re-derived to 0.5 MB/s on the way;
    3. events-0 is cancelled while copying (broker 6 went offline); the run stops.
    """
    plan = ExecutionPlan(SMALL_MOVES)
    settings = {"max_bytes_per_sec": CAP, "concurrency": 1, "cooldown_seconds": 0.0,
                "quota_window_seconds": 11.0, "adaptive": True}
    first, second, third, _ = SMALL_MOVES
    records: list[Record] = [header_record(plan, settings, "run0123456789abc")]
    t = T0
    records += _walk(first, t, [(S.SUBMITTED, t + 1), (S.COPYING, t + 2), (S.VERIFYING, t + 42),
                                (S.UNTHROTTLING, t + 43), (S.ELECTING, t + 44),
                                (S.COOLING_DOWN, t + 45), (S.DONE, t + 45 + 11 + 16)])
    t = T0 + 80
    records += _walk(second, t, [(S.SUBMITTED, t + 1), (S.COPYING, t + 2)])
    rerated = plan_to_json(_throttle(second, CAP // 2))
    records.append({"kind": "rates", "move": second.name, "throttle": rerated, "at": t + 12})
    records += [state_record(second.name, state, when) for state, when in (
        (S.VERIFYING, t + 32), (S.UNTHROTTLING, t + 33), (S.ELECTING, t + 34),
        (S.COOLING_DOWN, t + 35), (S.DONE, t + 46))]
    t = T0 + 130
    records += _walk(third, t, [(S.SUBMITTED, t + 1), (S.COPYING, t + 2)])
    records.append(state_record(third.name, S.CANCELLING, t + 5,
                                reason="broker(s) [6] went offline during the move"))
    records.append(state_record(third.name, S.CANCELLED, t + 8,
                                reason="broker(s) [6] went offline during the move"))
    records.append({"kind": "note", "message": "a <note> from the operator", "at": t + 9})
    records.append(end_record(RunOutcome.STOPPED, t + 10, "move events-0 was cancelled"))
    return records


def running_run_records() -> list[Record]:
    """The same run while orders-0 is still copying (no end record)."""
    records = finished_run_records()
    return records[:4]  # header, THROTTLING, SUBMITTED, COPYING at T0 + 2


@pytest.fixture
def finished_run() -> list[Record]:
    return finished_run_records()


@pytest.fixture
def running_run() -> list[Record]:
    return running_run_records()


def browser_required() -> bool:
    return os.environ.get("REBALANCE_REQUIRE_INTEGRATION") == "1"


CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


@pytest.fixture(scope="session")
def browser_paths() -> tuple[str, str]:
    """Debian's Chromium and its driver; missing, the browser tests skip (fail when
    REBALANCE_REQUIRE_INTEGRATION=1: CI must open the reports in a real browser)."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if shutil.which(p) is None]
    if missing:
        message = (f"{' and '.join(missing)} not found: install Debian's chromium and "
                   "chromium-driver (bash scripts/install.sh does)")
        if browser_required():
            pytest.fail(message)
        pytest.skip(message)
    return CHROMIUM, CHROMEDRIVER

