"""The plan file on disk: JSON writing and reading with every field checked.

`version` and `partitions` are Kafka's reassignment format; the reader names the first thing
that is wrong with a damaged or hand-edited file.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from planner.goals import Budget, Goals
from planner.planfile import (
    PLAN_VERSION,
    BrokerStats,
    ClusterStats,
    PlanFile,
    ResourceStats,
    SolverInfo,
    TargetInfo,
)
from planner.result import Move, SolverStatus
from topology.errors import InputError, PlanError
from topology.model import RESOURCES, Capacity, Load, Resource
from topology.snapshot import read_json_object, write_json_atomic

_MAX_SIZE = 10**24  # bytes: beyond any real partition, so a unit mix-up


# --- writing ---------------------------------------------------------------------------------


def _move_dict(move: Move) -> dict[str, Any]:
    return {"topic": move.topic, "partition": move.partition, "current": list(move.current),
            "target": list(move.target), "size_bytes": move.size_bytes,
            "bytes_moved": move.bytes_moved}


def _stats_dict(stats: ClusterStats) -> dict[str, Any]:
    return {
        "resources": {r.resource.value: {"average": r.average, "max_over_avg": r.max_over_avg,
                                         "min_over_avg": r.min_over_avg,
                                         "within_tolerance": r.within_tolerance,
                                         "deviation": r.deviation, "forced": r.forced}
                      for r in stats.resources},
        "brokers": [{"id": b.id, "rack": b.rack, "alive": b.alive, "replicas": b.replicas,
                     "leaders": b.leaders,
                     "load": {res.value: b.load.of(res) for res in RESOURCES},
                     "capacity": {res.value: b.capacity.of(res) for res in RESOURCES}}
                    for b in stats.brokers],
    }


def plan_to_dict(plan: PlanFile) -> dict[str, Any]:
    """The plan file document (Kafka's `version` + `partitions` first)."""
    g, b, s = plan.goals, plan.budget, plan.solver
    return {
        "version": PLAN_VERSION,
        "partitions": [{"topic": m.topic, "partition": m.partition, "replicas": list(m.target)}
                       for m in plan.moves],
        "moves": [_move_dict(m) for m in plan.moves],
        "fingerprint": plan.fingerprint,
        "goals": {"tolerance": g.tolerance, "max_utilization": g.max_utilization,
                  "add_brokers": sorted(g.add_brokers), "remove_brokers": sorted(g.remove_brokers),
                  "rack_aware": g.rack_aware, "balance_leaders": g.balance_leaders},
        "budget": {"max_bytes": b.max_bytes, "max_moves": b.max_moves,
                   "time_limit_s": b.time_limit_s, "seed": b.seed},
        "before": _stats_dict(plan.before),
        "after": _stats_dict(plan.after),
        "solver": {"status": s.status.value, "gap": s.gap,
                   "lower_bound_bytes": s.lower_bound_bytes, "seconds": s.seconds,
                   "binding": list(s.binding), "proven_gap": s.proven_gap,
                   "disk_lower_bound_bytes": s.disk_lower_bound_bytes},
        "totals": {"bytes_moved": plan.bytes_moved, "moves": len(plan.moves),
                   "data_moves": plan.data_moves},
        "warnings": list(plan.warnings),
        "created_at": plan.created_at,
        **({"targets": _targets_dict(plan.targets)} if plan.targets is not None else {}),
    }


def _targets_dict(targets: TargetInfo) -> dict[str, Any]:
    return {"forced": {res.value: targets.forced[i] for i, res in enumerate(RESOURCES)},
            "reasons": list(targets.reasons),
            "brokers": [{"id": broker_id, **{res.value: row[i] for i, res in enumerate(RESOURCES)}}
                        for broker_id, row in sorted(targets.utilization.items())]}


def write_plan(path: Path, plan: PlanFile) -> None:
    """Write the plan file atomically (temp file, fsync, rename)."""
    write_json_atomic(path, plan_to_dict(plan), indent=1)


# --- reading ---------------------------------------------------------------------------------


_KIND_NAMES = {list: "a list", str: "a string", int: "an integer", float: "a number",
               bool: "true or false"}


def _get(doc: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in doc:
        raise InputError(f"{where}: missing '{key}'")
    value = doc[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        raise InputError(f"{where}: '{key}' has the wrong type ({value!r})")
    if not isinstance(value, kinds):
        names = " or ".join(_KIND_NAMES.get(k, k.__name__) for k in kinds)
        raise InputError(f"{where}: '{key}' must be {names}, got {value!r}")
    return value


def _broker_ids(doc: Mapping[str, Any], key: str, where: str) -> tuple[int, ...]:
    value = _get(doc, key, list, where)
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
        raise InputError(f"{where}: '{key}' must be a list of broker ids (integers >= 0), "
                         f"got {value!r}")
    return tuple(value)


def _strings(doc: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = doc.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{where}: '{key}' must be a list of strings, got {value!r}")
    return tuple(value)


def _flag(doc: Mapping[str, Any], key: str, where: str, default: bool) -> bool:
    value = doc.get(key, default)
    if not isinstance(value, bool):
        raise InputError(f"{where}: '{key}' must be true or false, got {value!r}")
    return value


def _optional_number(doc: Mapping[str, Any], key: str, where: str, default: float) -> float:
    if doc.get(key) is None:
        return default
    return float(_get(doc, key, (int, float), where))


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InputError(f"{where}: expected an object, got {value!r}")
    return value


def _move(raw: Any, index: int) -> Move:
    where = f"moves[{index}]"
    doc = _object(raw, where)
    topic = _get(doc, "topic", str, where)
    number = _get(doc, "partition", int, where)
    if not topic or number < 0:
        raise InputError(f"{where}: needs a non-empty 'topic' and a 'partition' >= 0")
    where = f"move {topic}-{number}"
    current = _broker_ids(doc, "current", where)
    if len(set(current)) != len(current):
        raise InputError(f"{where}: current replicas {list(current)} repeat a broker")
    target = _broker_ids(doc, "target", where)
    size = _get(doc, "size_bytes", int, where)
    if size > _MAX_SIZE:
        raise InputError(f"{where}: 'size_bytes' is implausibly large (over {_MAX_SIZE:.0e})")
    try:
        move = Move(topic, number, current, target, size)
    except PlanError as exc:
        raise InputError(str(exc)) from None
    return move


def _check_partitions(doc: Mapping[str, Any], moves: Sequence[Move]) -> None:
    """Kafka's `partitions` must list exactly the moves' targets."""
    targets = {(m.topic, m.partition): m.target for m in moves}
    if len(targets) != len(moves):
        raise InputError("moves: a partition is moved more than once")
    seen: set[tuple[str, int]] = set()
    for index, raw in enumerate(_get(doc, "partitions", list, "plan")):
        where = f"partitions[{index}]"
        entry = _object(raw, where)
        key = (_get(entry, "topic", str, where), _get(entry, "partition", int, where))
        replicas = _broker_ids(entry, "replicas", where)
        if key in seen:
            raise InputError(f"{where}: partition {key[0]}-{key[1]} is listed twice")
        seen.add(key)
        if key not in targets:
            raise InputError(f"{where}: partition {key[0]}-{key[1]} has no entry in 'moves'")
        if targets[key] != replicas:
            raise InputError(f"{where}: partition {key[0]}-{key[1]} replicas {list(replicas)} "
                             "do not match its entry in 'moves'")
    missing = sorted(set(targets) - seen)
    if missing:
        raise InputError(f"partitions: lacks {missing[0][0]}-{missing[0][1]} that 'moves' lists")


def _goals(raw: Any) -> Goals:
    doc = _object(raw, "goals")
    return Goals(
        tolerance=float(_get(doc, "tolerance", (int, float), "goals")),
        max_utilization=float(_get(doc, "max_utilization", (int, float), "goals")),
        add_brokers=frozenset(_broker_ids(doc, "add_brokers", "goals")),
        remove_brokers=frozenset(_broker_ids(doc, "remove_brokers", "goals")),
        rack_aware=_flag(doc, "rack_aware", "goals", True),
        balance_leaders=_flag(doc, "balance_leaders", "goals", True),
    )


def _budget(raw: Any) -> Budget:
    doc = _object(raw if raw is not None else {}, "budget")
    max_bytes, max_moves = doc.get("max_bytes"), doc.get("max_moves")
    for key, value in (("max_bytes", max_bytes), ("max_moves", max_moves)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 0):
            raise InputError(f"budget: '{key}' must be an integer >= 0 or null, got {value!r}")
    seed = _get(doc, "seed", int, "budget") if "seed" in doc else 0
    return Budget(max_bytes, max_moves, _optional_number(doc, "time_limit_s", "budget", 60.0),
                  seed)


def _resource_map(raw: Any, where: str) -> dict[Resource, float]:
    doc = _object(raw, where)
    return {res: float(_get(doc, res.value, (int, float), where)) for res in RESOURCES}


def _stats(raw: Any, where: str) -> ClusterStats:
    doc = _object(raw, where)
    resources = []
    res_doc = _object(doc.get("resources"), f"{where}.resources")
    for res in RESOURCES:
        entry = _object(res_doc.get(res.value), f"{where}.resources.{res.value}")
        w = f"{where}.resources.{res.value}"
        dev = entry.get("deviation")
        resources.append(ResourceStats(
            res, float(_get(entry, "average", (int, float), w)),
            float(_get(entry, "max_over_avg", (int, float), w)),
            float(_get(entry, "min_over_avg", (int, float), w)),
            bool(_get(entry, "within_tolerance", bool, w)),
            None if dev is None else float(_get(entry, "deviation", (int, float), w)),
            _flag(entry, "forced", w, False)))
    brokers = []
    for index, raw_broker in enumerate(_get(doc, "brokers", list, where)):
        w = f"{where}.brokers[{index}]"
        entry = _object(raw_broker, w)
        load = _resource_map(entry.get("load"), f"{w}.load")
        cap = _resource_map(entry.get("capacity"), f"{w}.capacity")
        rack = entry.get("rack")
        brokers.append(BrokerStats(
            _get(entry, "id", int, w), rack if isinstance(rack, str) else None,
            bool(entry.get("alive", True)), _get(entry, "replicas", int, w),
            _get(entry, "leaders", int, w), Load(*(load[r] for r in RESOURCES)),
            Capacity(*(cap[r] for r in RESOURCES))))
    return ClusterStats(tuple(brokers), tuple(resources))


def _solver(raw: Any) -> SolverInfo:
    doc = _object(raw, "solver")
    status = _get(doc, "status", str, "solver")
    try:
        solver_status = SolverStatus(status)
    except ValueError:
        known = ", ".join(s.value for s in SolverStatus)
        raise InputError(f"solver: unknown status {status!r} (expected one of {known})") from None
    gaps = []
    for key in ("gap", "proven_gap"):
        value = doc.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or not math.isfinite(value)):
            raise InputError(f"solver: '{key}' must be a number or null, got {value!r}")
        # plans written before the bound was honest carry a negative gap: it meant nothing
        gaps.append(None if value is None or value < 0 else float(value))
    disk_bound = doc.get("disk_lower_bound_bytes")
    if disk_bound is not None:
        disk_bound = _get(doc, "disk_lower_bound_bytes", int, "solver")
    return SolverInfo(solver_status, _get(doc, "lower_bound_bytes", int, "solver"),
                      gaps[0], _optional_number(doc, "seconds", "solver", 0.0),
                      _strings(doc, "binding", "solver"), gaps[1], disk_bound)


def plan_from_dict(doc: Mapping[str, Any]) -> PlanFile:
    """Validate a plan document; InputError names the first thing that is wrong."""
    version = doc.get("version")
    if version != PLAN_VERSION:
        raise InputError(f"unsupported plan version {version!r} (expected {PLAN_VERSION})")
    if "moves" not in doc:
        raise InputError("not a rebalance plan: it has no 'moves' (a bare Kafka reassignment "
                         "file?); make one with `rebalance plan`")
    moves = tuple(_move(m, i) for i, m in enumerate(_get(doc, "moves", list, "plan")))
    _check_partitions(doc, moves)
    before = _stats(doc.get("before"), "before")
    _check_brokers(moves, before)
    return PlanFile(
        moves=moves,
        fingerprint=_get(doc, "fingerprint", str, "plan"),
        goals=_goals(doc.get("goals")),
        budget=_budget(doc.get("budget")),
        before=before,
        after=_stats(doc.get("after"), "after"),
        solver=_solver(doc.get("solver")),
        created_at=str(doc.get("created_at", "")),
        warnings=_strings(doc, "warnings", "plan"),
        targets=None if doc.get("targets") is None else _targets(doc["targets"]),
    )


def _targets(raw: Any) -> TargetInfo:
    doc = _object(raw, "targets")
    forced_doc = _object(doc.get("forced", {}), "targets.forced")
    forced = tuple(_flag(forced_doc, res.value, "targets.forced", False) for res in RESOURCES)
    rows: dict[int, tuple[float, float, float]] = {}
    for index, raw_row in enumerate(_get(doc, "brokers", list, "targets")):
        where = f"targets.brokers[{index}]"
        entry = _object(raw_row, where)
        broker_id = _get(entry, "id", int, where)
        values = [float(_get(entry, res.value, (int, float), where)) for res in RESOURCES]
        if not all(0 <= v < math.inf for v in values):
            raise InputError(f"{where}: target utilizations must be finite and >= 0")
        rows[broker_id] = (values[0], values[1], values[2])
    return TargetInfo(rows, (forced[0], forced[1], forced[2]),
                      _strings(doc, "reasons", "targets"))


def _check_brokers(moves: Sequence[Move], before: ClusterStats) -> None:
    """Every broker a move names must be one of the cluster the plan was made for."""
    known = {b.id for b in before.brokers}
    for move in moves:
        unknown = sorted(set(move.current + move.target) - known)
        if unknown:
            raise InputError(f"move {move.name}: broker {unknown[0]} is not in the cluster the "
                             f"plan was made for (brokers {sorted(known)})")


def read_plan(path: Path) -> PlanFile:
    """Read and validate a plan file."""
    doc = read_json_object(path, "plan", "version, partitions, moves")
    try:
        return plan_from_dict(doc)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None
    except (TypeError, ValueError) as exc:
        raise InputError(f"{path}: malformed plan ({exc})") from None
