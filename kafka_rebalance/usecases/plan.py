"""Make a plan: read the cluster to plan for, then solve, validate and order; recheck a saved one.

`read_cluster` loads the topology (a snapshot file or the live cluster), applies the weights
and checks the brokers to add or remove against it; `build_plan` solves, validates and orders,
and never returns a plan the validator rejects; `check_plan_journal` refuses an --out whose run
journal still exists. The solver and the validator (numpy, OR-Tools) are imported where they are
used, so that `rebalance` starts fast for the other commands.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_rebalance.core.errors import InputError, PlanError
from kafka_rebalance.core.names import listed
from kafka_rebalance.usecases.cluster import read_live
from planner.goals import Budget, Goals
from planner.ordering import MoveOrder, order_moves, short_of_replicas
from planner.result import PlanResult, SolverStatus
from topology.bootstrap import parse_bootstrap
from topology.capacities import read_capacities
from topology.model import Topology
from topology.snapshot import read_snapshot

if TYPE_CHECKING:
    from planner.planfile import PlanFile

Solver = Callable[[Topology, Goals, Budget], PlanResult]
Notify = Callable[[str], None]
"""Tells the operator something worth knowing (a note on stderr, in the CLI)."""


def load_solver() -> Solver:
    """The planner's solver, imported on first use."""
    from planner.solve import plan as solve_plan

    return solve_plan


@dataclass(frozen=True, kw_only=True)
class PlanInputs:
    """What a plan is made for: exactly one of a snapshot file or the live cluster
    (`bootstrap`, with partition rates from `prometheus`), optional capacities, weights that
    replace the rates (sizes projected `horizon_days` ahead), and the brokers to fill or
    drain."""

    snapshot: Path | None = None
    bootstrap: str | None = None
    prometheus: str | None = None
    command_config: Path | None = None
    capacities: Path | None = None
    weights: Path | None = None
    horizon_days: float = 0.0
    add_brokers: tuple[int, ...] = ()
    remove_brokers: tuple[int, ...] = ()


@dataclass(frozen=True, kw_only=True)
class PlanSettings:
    """What a plan must achieve, what it may spend, and the order its moves run in."""

    goals: Goals
    budget: Budget
    order: MoveOrder = MoveOrder.SMALLEST_FIRST


def read_cluster(inputs: PlanInputs, *, note: Notify) -> Topology:
    """The topology to plan for, weighted, with every broker to add or remove checked against
    it. The topology's own notes and the weights' notes go to `note`."""
    topology = load_topology(inputs)
    for message in topology.notes:
        note(message)
    topology = with_weights(topology, inputs.weights, inputs.horizon_days, note)
    check_broker_flags(topology, inputs.add_brokers, inputs.remove_brokers)
    return topology


def load_topology(inputs: PlanInputs) -> Topology:
    """The cluster to plan for: a snapshot file, or the live cluster (read lazily)."""
    if (inputs.snapshot is None) == (inputs.bootstrap is None):
        raise InputError("give exactly one of --snapshot FILE or --bootstrap HOST:PORT")
    if inputs.bootstrap is not None:
        parse_bootstrap(inputs.bootstrap)  # a bad entry is refused before any file is read
    caps = read_capacities(inputs.capacities) if inputs.capacities else None
    if inputs.snapshot is not None:
        return read_snapshot(inputs.snapshot, caps)
    assert inputs.bootstrap is not None
    return read_live(inputs.bootstrap, inputs.prometheus, inputs.command_config, caps)


def with_weights(topology: Topology, weights: Path | None, horizon_days: float,
                 note: Notify) -> Topology:
    """The topology with the weights' rates and sizes (grown `horizon_days` ahead); what did
    not match goes to `note`."""
    if weights is None:
        if horizon_days:
            raise InputError("--horizon needs --weights FILE (sizes grow by the weights' growth)")
        return topology
    from kafka_rebalance.files.weights import read_weights
    from planner.weights import apply_weights

    weighted, notes = apply_weights(topology, read_weights(weights), horizon_days)
    for message in notes:
        note(message)
    return weighted


def check_broker_flags(topology: Topology, add: Sequence[int], remove: Sequence[int]) -> None:
    """Every --add-broker / --remove-broker id must be a broker of the topology, and a broker
    to fill must be alive (the planner places nothing on an offline broker)."""
    known = {b.id: b for b in topology.brokers}
    for flag, ids, fix in (("--add-broker", add, "start the broker first, or take a fresh "
                                                 "snapshot"),
                           ("--remove-broker", remove, "check the id")):
        for broker_id in ids:
            if broker_id not in known:
                raise InputError(
                    f"{flag} {broker_id}: no broker {broker_id} in the cluster (brokers are "
                    f"{sorted(known)}); {fix}")
    offline = sorted(b for b in set(add) if not known[b].alive)
    if offline:
        raise InputError(f"--add-broker {offline[0]}: broker {offline[0]} is offline (alive: "
                         "false in the snapshot), so nothing can move onto it; start it and "
                         "take a fresh snapshot")
    if not any(b.alive and b.id not in remove for b in topology.brokers):
        raise InputError("no broker would remain: every broker is removed or not alive "
                         "(alive: false in the snapshot)")


def with_cordons(goals: Goals, topology: Topology) -> Goals:
    """`goals` with the brokers the snapshot says are cordoned (KIP-1066): none gets a new
    replica (InputError when one is also to be filled with --add-broker)."""
    cordoned = frozenset(b.id for b in topology.brokers if b.cordoned)
    if cordoned <= goals.cordoned_brokers:
        return goals
    return replace(goals, cordoned_brokers=goals.cordoned_brokers | cordoned)


def build_plan(topology: Topology, settings: PlanSettings, *, created_at: str | None = None,
               solver: Solver | None = None) -> PlanFile:
    """Solve, validate and order; a cluster already balanced gets an empty plan. `created_at`
    defaults to now; `solver` to the planner's (`load_solver`)."""
    from planner.log_dirs import log_dir_plan
    from planner.phases import Phases
    from planner.planfile import SolverInfo, make_plan_file
    from planner.validate import exposure_warnings, validate_plan

    goals, budget = with_cordons(settings.goals, topology), settings.budget
    created_at = created_at or datetime.now(UTC).isoformat(timespec="seconds")
    current = validate_plan(topology, (), goals)
    if (not current.errors and current.balanced and goals.topic_spread is None
            and goals.leader_balance is None and goals.request_balance is None):
        # (with --topic-spread, --leader-balance or --request-balance the planner says whether
        # those goals hold already)
        return make_plan_file(topology, (), goals, budget,
                              SolverInfo(SolverStatus.ALREADY_BALANCED, 0), created_at,
                              list(current.warnings),
                              log_dirs=log_dir_plan(topology, (), goals, budget))
    result = (solver or load_solver())(topology, goals, budget)
    phases = Phases()
    with phases("validate"):
        report = validate_plan(topology, result.moves, goals)
        report.raise_if_invalid()
    with phases("order"):
        ordered = order_moves(result.moves, settings.order,
                              live_replicas=short_of_replicas(topology))
    info = SolverInfo(result.status, result.lower_bound_bytes, result.excess_over_bound,
                      result.solve_seconds, result.binding, result.proven_gap,
                      result.disk_lower_bound_bytes, (*result.phase_seconds, *phases.items()))
    return make_plan_file(topology, ordered, goals, budget, info, created_at,
                          [*exposure_warnings(topology, ordered), *report.warnings,
                           *(result.log_dirs.warnings if result.log_dirs else ())],
                          result.targets or report.targets, result.log_dirs)


def build_demotion(topology: Topology, brokers: Sequence[int], settings: PlanSettings, *,
                   created_at: str | None = None) -> PlanFile:
    """The leadership-only plan that takes preferred leadership off `brokers` (planner.demote):
    no data moves, balance is reported, never a reason to refuse (leadership piles where it
    may). A partition the brokers must keep leading is a warning."""
    from planner.demote import demote
    from planner.planfile import SolverInfo, make_plan_file
    from planner.validate import validate_plan

    goals = with_cordons(settings.goals, topology)
    demotion = demote(topology, brokers)
    report = validate_plan(topology, demotion.moves, goals, worse_balance_is_error=False,
                           untouched_breaks_are_errors=False)
    report.raise_if_invalid()
    stuck = ([f"{len(demotion.stuck)} partition(s) stay led by the demoted broker(s): no other "
              f"live replica may lead them ({listed(demotion.stuck, 5)})"]
             if demotion.stuck else [])
    return make_plan_file(topology, demotion.moves, goals, settings.budget,
                          SolverInfo(SolverStatus.LEADERS_ONLY, 0),
                          created_at or datetime.now(UTC).isoformat(timespec="seconds"),
                          [*stuck, *report.warnings])


def recheck(plan_file: PlanFile, topology: Topology, *, warn: Notify) -> PlanFile:
    """The plan's review recomputed on `topology`; PlanError when it no longer applies. A
    topology other than the one the plan was made against is told to `warn`."""
    from planner.planfile import make_plan_file
    from planner.validate import exposure_warnings, validate_plan
    from topology.units import size_text

    moved = topology.fingerprint() != plan_file.fingerprint
    report = validate_plan(topology, plan_file.moves, plan_file.goals)
    if moved and report.errors:
        # the cause first, in one line: the list of stale moves only says what follows from it
        known = {b.id for b in plan_file.before.brokers}
        ids = set(topology.broker_ids)
        other = ("another cluster (its brokers are not the plan's)" if not known & ids
                 else "another replica placement (the cluster changed since, or it is another "
                      "cluster)")
        raise PlanError(f"this plan was made against {other}; make a new plan from this "
                        f"snapshot. {len(report.errors)} problem(s) follow from it, the first: "
                        f"{report.errors[0]}")
    if moved:
        warn("the snapshot's replica placement differs from the one the plan was made against "
             "(fingerprint mismatch)")
    sizes = {p.key: p.size_bytes for p in topology.partitions}
    resized = [m for m in plan_file.moves if sizes.get(m.key, m.size_bytes) != m.size_bytes]
    if resized:
        most = max(resized, key=lambda m: abs(m.size_bytes - sizes[m.key]))
        warn(f"{len(resized)} move(s) have another partition size in the plan than in this "
             f"snapshot (e.g. {most.name}: {size_text(most.size_bytes)} in the plan, "
             f"{size_text(sizes[most.key])} here): the plan was made from other data (--weights, "
             "or an older snapshot); its moves, ETA and solver status are the plan's, the "
             "balance tables this snapshot's")
    report.raise_if_invalid()
    return make_plan_file(topology, plan_file.moves, plan_file.goals, plan_file.budget,
                          plan_file.solver, plan_file.created_at,
                          [*exposure_warnings(topology, plan_file.moves), *report.warnings],
                          log_dirs=plan_file.log_dirs)


def check_plan_journal(path: Path) -> None:
    """A plan must not be written where a run's journal (PLAN.json.journal) still exists:
    `execute` of the new plan would be refused, and the old run would lose its plan's name."""
    from executor.journal import find_journal, journal_in_use

    journal = find_journal(path, None)
    if not journal.exists():
        return
    running = " and an executor is running on it" if journal_in_use(journal) else ""
    raise InputError(
        f"--out {path}: the journal {journal} of a run of that plan exists{running}, so "
        f"`rebalance execute {path}` would be refused; write the plan to another --out, or "
        f"finish (`rebalance resume`) or cancel (`rebalance cancel`) that run and move "
        f"{journal} away (`rebalance status --journal {journal}` shows where it stands)")
