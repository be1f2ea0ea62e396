"""The plan file on disk: JSON writing and reading with every field checked.

`version` and `partitions` are Kafka's reassignment format; the reader (its schema is in
planfile_schema) names every problem of a damaged or hand-edited file, up to a cap.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kafka_rebalance.core.errors import InputError, problems_message
from kafka_rebalance.core.names import visible
from planner.goals import Budget, Goals
from planner.leader_balance import LeaderLevel
from planner.log_dirs import DirPlan
from planner.planfile import (
    PLAN_VERSION,
    BrokerStats,
    ClusterStats,
    LeaderInfo,
    PlanFile,
    ResourceStats,
    SolverInfo,
    SpreadInfo,
    TargetInfo,
    TieredInfo,
)
from planner.planfile_schema import (
    NOUNS,
    PLAN_ADAPTER,
    TOP_LEVEL_KEYS,
    BudgetEntry,
    GoalsEntry,
    LeaderBalanceEntry,
    PlanDocument,
    SolverEntry,
    SpreadEntry,
    StatsEntry,
    TargetsEntry,
    log_dirs_from_entry,
    log_dirs_to_dict,
    moves_from_entries,
    requests_from_entry,
    requests_to_dict,
)
from planner.result import Move, SolverStatus
from planner.spread import Crowding
from planner.validate import crowded_rack, rack_limit
from topology.documents import bulk_objects, parse_json, read_text, write_json_atomic
from topology.model import RESOURCES, Capacity, Load, is_kafka_id, is_topic_name
from topology.schema import Labeler, Loc, describe, near_misses

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
                     "capacity": {res.value: b.capacity.of(res) for res in RESOURCES},
                     **({"quota_window_seconds": b.quota_window_seconds}
                        if b.quota_window_seconds is not None else {})}
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
                  "rack_aware": g.rack_aware, "balance_leaders": g.balance_leaders,
                  **({"cordoned_brokers": sorted(g.cordoned_brokers)}
                     if g.cordoned_brokers else {}),
                  **({"topic_spread": g.topic_spread} if g.topic_spread is not None else {}),
                  **({"leader_balance": g.leader_balance}
                     if g.leader_balance is not None else {}),
                  **({"request_balance": g.request_balance}
                     if g.request_balance is not None else {}),
                  **({"level_log_dirs": False} if not g.level_log_dirs else {})},
        "budget": {"max_bytes": b.max_bytes, "max_moves": b.max_moves,
                   "time_limit_s": b.time_limit_s, "seed": b.seed},
        "before": _stats_dict(plan.before),
        "after": _stats_dict(plan.after),
        # "gap" keeps its name (plan files already written, their readers): excess over the bound
        "solver": {"status": s.status.value, "gap": s.excess_over_bound,
                   "lower_bound_bytes": s.lower_bound_bytes, "seconds": s.seconds,
                   "binding": list(s.binding), "proven_gap": s.proven_gap,
                   "disk_lower_bound_bytes": s.disk_lower_bound_bytes,
                   "phases": dict(s.phase_seconds)},
        "totals": {"bytes_moved": plan.bytes_moved, "moves": len(plan.moves),
                   "data_moves": plan.data_moves},
        "warnings": list(plan.warnings),
        "created_at": plan.created_at,
        **({"targets": _targets_dict(plan.targets)} if plan.targets is not None else {}),
        **({"topic_spread": _spread_dict(plan.spread)} if plan.spread is not None else {}),
        **({"leader_balance": _leaders_dict(plan.leaders)} if plan.leaders is not None else {}),
        **({"request_balance": requests_to_dict(plan.requests)}
           if plan.requests is not None else {}),
        **({"tiered_storage": {"remote_bytes": plan.tiered.remote_bytes,
                               "moved_remote_bytes": plan.tiered.moved_remote_bytes}}
           if plan.tiered is not None else {}),
        **({"log_dirs": log_dirs_to_dict(plan.log_dirs)} if plan.log_dirs is not None else {}),
    }


def _spread_dict(spread: SpreadInfo) -> dict[str, Any]:
    return {"tolerance": spread.tolerance,
            **{when: {"replicas_over": c.replicas, "leaders_over": c.leaders,
                      "topics_crowding": c.topics}
               for when, c in (("before", spread.before), ("after", spread.after))}}


def _leaders_dict(leaders: LeaderInfo) -> dict[str, Any]:
    return {"tolerance": leaders.tolerance,
            **{when: {"count_over_fair": level.count_over_fair,
                      "bytes_in_over_fair": level.bytes_in_over_fair,
                      "brokers_outside": level.brokers_outside}
               for when, level in (("before", leaders.before), ("after", leaders.after))}}


def _targets_dict(targets: TargetInfo) -> dict[str, Any]:
    return {"forced": {res.value: targets.forced[i] for i, res in enumerate(RESOURCES)},
            "reasons": list(targets.reasons),
            "brokers": [{"id": broker_id, **{res.value: row[i] for i, res in enumerate(RESOURCES)}}
                        for broker_id, row in sorted(targets.utilization.items())]}


def write_plan(path: Path, plan: PlanFile) -> None:
    """Write the plan file atomically (temp file, fsync, rename)."""
    write_json_atomic(path, plan_to_dict(plan), indent=1)


# --- reading ---------------------------------------------------------------------------------


def read_plan(path: Path) -> PlanFile:
    """Read and validate a plan file; InputError names the file and every problem (up to a cap).

    A valid file is parsed and checked in one pass; a refused one is parsed again to name the
    entries its problems are in.
    """
    text = read_text(path, "plan")
    with bulk_objects():
        try:
            checked = PLAN_ADAPTER.validate_json(text)
        except ValidationError:
            raw = parse_json(text, str(path))
            return _prefixed(path, lambda: plan_from_dict(raw))
        return _prefixed(path, lambda: _plan_file(_enveloped(checked)))


def plan_from_dict(doc: Any) -> PlanFile:
    """Validate a plan document; InputError names every problem (up to a cap)."""
    try:
        checked = PLAN_ADAPTER.validate_python(_enveloped(doc))
    except ValidationError as exc:
        described, total = describe(exc, PlanDocument, _labeler(doc), NOUNS)
        raise InputError(problems_message(described, total)) from None
    return _plan_file(checked)


def _prefixed(path: Path, read: Callable[[], PlanFile]) -> PlanFile:
    try:
        return read()
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None


def _enveloped(doc: Any) -> Any:
    """`doc` once it is a version-1 rebalance plan (not another file or a bare reassignment)."""
    if not isinstance(doc, Mapping):
        raise InputError("expected a JSON object with version, partitions, moves")
    version = doc.get("version")
    if version != PLAN_VERSION or isinstance(version, bool):
        raise InputError(f"unsupported plan version {version!r} (expected {PLAN_VERSION})")
    if "moves" not in doc and "brokers" in doc:
        raise InputError("this is a cluster snapshot, not a plan; make a plan from it with "
                         "`rebalance plan --snapshot FILE --out PLAN`")
    if "moves" not in doc:
        raise InputError("not a rebalance plan: it has no 'moves' (a bare Kafka reassignment "
                         "file?); make one with `rebalance plan`")
    problems = near_misses(doc.keys(), TOP_LEVEL_KEYS)
    if problems:
        raise InputError(problems_message(problems))
    return doc


def _labeler(doc: Mapping[str, Any]) -> Labeler:
    """Names a move by its partition where the file's topic and number are valid."""

    def label(loc: Loc) -> str | None:
        moves = doc.get("moves")
        if loc[:1] != ("moves",) or len(loc) != 2 or not isinstance(moves, list):
            return None
        entry = moves[int(loc[1])]
        if not isinstance(entry, Mapping):
            return None
        topic, number = entry.get("topic"), entry.get("partition")
        valid = isinstance(topic, str) and is_topic_name(topic) and is_kafka_id(number)
        return f"move {topic}-{number}" if valid else None

    return label


def _plan_file(doc: PlanDocument) -> PlanFile:
    """The PlanFile of a checked document; InputError names every inconsistency."""
    problems: list[str] = []
    moves = moves_from_entries(doc["moves"], problems)
    _check_bytes(doc, moves, problems)
    _check_partitions(doc, moves, problems)
    before = _stats(doc["before"])
    _check_brokers(moves, before, problems)
    log_dirs = doc.get("log_dirs")
    dirs = None if log_dirs is None else log_dirs_from_entry(log_dirs)
    if dirs is not None:
        _check_dirs(dirs, moves, {b.id for b in before.brokers}, problems)
    goals, budget = _goals(doc["goals"], problems), _budget(doc.get("budget"), problems)
    if goals is not None and not problems:
        _check_targets(moves, before, goals, problems)
    solver = _solver(doc["solver"], problems)
    if problems or goals is None or budget is None or solver is None:
        raise InputError(problems_message(problems))
    targets, spread, leaders = (doc.get("targets"), doc.get("topic_spread"),
                                doc.get("leader_balance"))
    tiered, requests = doc.get("tiered_storage"), doc.get("request_balance")
    return PlanFile(moves=moves, fingerprint=doc["fingerprint"], goals=goals, budget=budget,
                    before=before, after=_stats(doc["after"]), solver=solver,
                    created_at=doc.get("created_at") or "",
                    warnings=tuple(visible(w) for w in doc.get("warnings") or ()),
                    targets=None if targets is None else _targets(targets),
                    spread=None if spread is None else _spread(spread),
                    leaders=None if leaders is None else _leaders(leaders),
                    tiered=None if tiered is None else TieredInfo(
                        tiered["remote_bytes"], tiered["moved_remote_bytes"]),
                    log_dirs=dirs,
                    requests=None if requests is None else requests_from_entry(requests))


def _check_bytes(doc: PlanDocument, moves: Sequence[Move], problems: list[str]) -> None:
    """The bytes a move copies follow from its size and replicas: a file that says otherwise
    was edited, and the review would show numbers the file does not."""
    edited = " (the plan was edited; make a new one with `rebalance plan`)"
    stated = {(e["topic"], e["partition"]): e["bytes_moved"] for e in doc["moves"]}
    for move in moves:
        said = stated[(move.topic, move.partition)]
        if said != move.bytes_moved:
            problems.append(f"move {move.name}: 'bytes_moved' is {said}, but it copies "
                            f"{move.bytes_moved} ({move.size_bytes} bytes to "
                            f"{len(move.added_brokers)} new replica(s)){edited}")
    total = doc.get("totals", {}).get("bytes_moved")
    if total is not None and len(moves) == len(doc["moves"]) \
            and total != sum(m.bytes_moved for m in moves):
        problems.append(f"totals: 'bytes_moved' is {total}, but the moves copy "
                        f"{sum(m.bytes_moved for m in moves)}{edited}")


def _check_partitions(doc: PlanDocument, moves: Sequence[Move], problems: list[str]) -> None:
    """Kafka's `partitions` must list exactly the moves' targets (a move refused on its own,
    such as a target repeating a broker, has its problem said already)."""
    targets = {(m.topic, m.partition): m.target for m in moves}
    refused = {(e["topic"], e["partition"]) for e in doc["moves"]} - set(targets)
    if len(targets) != len(moves):
        problems.append("moves: a partition is moved more than once")
    seen: set[tuple[str, int]] = set()
    for index, entry in enumerate(doc["partitions"]):
        key, name = (entry["topic"], entry["partition"]), f"{entry['topic']}-{entry['partition']}"
        where = f"partitions[{index}]: partition {name}"
        if key in seen:
            problems.append(f"{where} is listed twice")
        elif key not in targets:
            if key not in refused:
                problems.append(f"{where} has no entry in 'moves'")
        elif targets[key] != tuple(entry["replicas"]):
            problems.append(f"{where} replicas {entry['replicas']} do not match its entry in "
                            "'moves'")
        seen.add(key)
    problems.extend(f"partitions: lacks {topic}-{number} that 'moves' lists"
                    for topic, number in sorted(set(targets) - seen))


def _check_brokers(moves: Sequence[Move], before: ClusterStats, problems: list[str]) -> None:
    """Every broker a move names must be one of the cluster the plan was made for."""
    known = {b.id for b in before.brokers}
    for move in moves:
        problems.extend(f"move {move.name}: broker {broker} is not in the cluster the plan was "
                        f"made for (brokers {sorted(known)})"
                        for broker in sorted(set(move.current + move.target) - known))


def _check_targets(moves: Sequence[Move], before: ClusterStats, goals: Goals,
                   problems: list[str]) -> None:
    """The hard rules the planner keeps in every target, by the plan's own record of the
    brokers: no replica on a broker offline or removed then, none added on a cordoned one, no
    rack over its share. A target that breaks one was edited after planning (the review would
    show it as planned; only `diff --snapshot` validated it)."""
    edited = "; the plan was edited: make a new one with `rebalance plan`"
    brokers = {b.id: b for b in before.brokers}
    racks, rack_count = rack_limit(brokers, goals)  # the validator's rule, on the file's record
    for move in (m for m in moves if not m.leadership_only):  # a new order keeps its set
        gone = [b for b in move.target if b in brokers and (not brokers[b].alive
                                                             or b in goals.remove_brokers)]
        if gone:
            problems.append(f"move {move.name}: target {list(move.target)} keeps a replica on "
                            f"broker(s) {gone}, offline or removed when it was planned{edited}")
        onto = sorted(set(move.added_brokers) & goals.cordoned_brokers)
        if onto:
            problems.append(f"move {move.name}: adds a replica on cordoned broker(s) "
                            f"{onto}{edited}")
        crowded = crowded_rack(move.target, racks, rack_count) if rack_count else None
        if crowded is not None:
            rack, held, _ = crowded
            problems.append(f"move {move.name}: target {list(move.target)} puts {held} "
                            f"replicas in rack {rack} ({rack_count} racks){edited}")


def _check_dirs(dirs: DirPlan, moves: Sequence[Move], known: set[int],
                problems: list[str]) -> None:
    """A dir is chosen only for a replica a move brings to its broker, a dir move names a
    broker of the cluster and two different dirs, and no replica moves between dirs twice."""
    arriving = {(m.key, b) for m in moves for b in m.added_brokers}
    for (tp, broker) in sorted(set(dirs.placements) - arriving,
                               key=lambda k: (k[0].topic, k[0].partition, k[1]))[:5]:
        problems.append(f"log_dirs: a dir is chosen for {tp.topic}-{tp.partition} on broker "
                        f"{broker}, which no move brings there")
    seen: set[str] = set()
    for move in dirs.moves:
        if move.broker not in known:
            problems.append(f"log_dirs: {move.replica} names broker {move.broker}, not in the "
                            f"cluster the plan was made for (brokers {sorted(known)})")
        if move.source == move.target:
            problems.append(f"log_dirs: {move.replica} moves from a dir to itself")
        if move.replica in seen:
            problems.append(f"log_dirs: {move.replica} moves between dirs twice")
        seen.add(move.replica)


def _goals(entry: GoalsEntry, problems: list[str]) -> Goals | None:
    try:
        return Goals(tolerance=entry["tolerance"], max_utilization=entry["max_utilization"],
                     add_brokers=frozenset(entry["add_brokers"]),
                     remove_brokers=frozenset(entry["remove_brokers"]),
                     rack_aware=entry.get("rack_aware", True),
                     balance_leaders=entry.get("balance_leaders", True),
                     cordoned_brokers=frozenset(entry.get("cordoned_brokers", ())),
                     topic_spread=entry.get("topic_spread"),
                     leader_balance=entry.get("leader_balance"),
                     request_balance=entry.get("request_balance"),
                     level_log_dirs=entry.get("level_log_dirs", True))
    except InputError as exc:
        problems.append(f"goals: {exc}")
        return None


def _budget(entry: BudgetEntry | None, problems: list[str]) -> Budget | None:
    entry = entry or {}
    time_limit = entry.get("time_limit_s")
    try:
        return Budget(entry.get("max_bytes"), entry.get("max_moves"),
                      60.0 if time_limit is None else time_limit, entry.get("seed", 0))
    except InputError as exc:
        problems.append(f"budget: {exc}")
        return None


def _stats(entry: StatsEntry) -> ClusterStats:
    resources = tuple(
        ResourceStats(res, r["average"], r["max_over_avg"], r["min_over_avg"],
                      r["within_tolerance"], r.get("deviation"), r.get("forced", False))
        for res, r in ((res, entry["resources"][res.value]) for res in RESOURCES))
    brokers = tuple(
        BrokerStats(b["id"], _rack(b.get("rack")), b.get("alive", True), b["replicas"],
                    b["leaders"],
                    Load(*(b["load"][res.value] for res in RESOURCES)),
                    Capacity(*(b["capacity"][res.value] for res in RESOURCES)),
                    b.get("quota_window_seconds"))
        for b in entry["brokers"])
    return ClusterStats(brokers, resources)


def _solver(entry: SolverEntry, problems: list[str]) -> SolverInfo | None:
    try:
        status = SolverStatus(entry["status"])
    except ValueError:
        known = ", ".join(s.value for s in SolverStatus)
        problems.append(f"solver: unknown status {entry['status']!r} (expected one of {known})")
        return None
    # plans written before the bound was honest carry a negative excess: it meant nothing
    excess, proven = entry.get("gap"), entry.get("proven_gap")
    return SolverInfo(status, entry["lower_bound_bytes"],
                      None if excess is None or excess < 0 else excess,
                      entry.get("seconds") or 0.0, tuple(entry.get("binding") or ()),
                      None if proven is None or proven < 0 else proven,
                      entry.get("disk_lower_bound_bytes"),
                      tuple((entry.get("phases") or {}).items()))


def _rack(rack: str | None) -> str | None:
    """A rack as the model keeps it (topology.model.Broker): its control characters written
    out, so that a file cannot steer the terminal through it."""
    return None if rack is None else visible(rack)


def _targets(entry: TargetsEntry) -> TargetInfo:
    forced = entry.get("forced", {})
    rows = {row["id"]: (row["disk"], row["net_in"], row["net_out"]) for row in entry["brokers"]}
    return TargetInfo(rows, (forced.get("disk", False), forced.get("net_in", False),
                             forced.get("net_out", False)),
                      tuple(visible(r) for r in entry.get("reasons") or ()))


def _spread(entry: SpreadEntry) -> SpreadInfo:
    before, after = (Crowding(c["replicas_over"], c["leaders_over"], c["topics_crowding"])
                     for c in (entry["before"], entry["after"]))
    return SpreadInfo(entry["tolerance"], before, after)


def _leaders(entry: LeaderBalanceEntry) -> LeaderInfo:
    before, after = (LeaderLevel(c["count_over_fair"], c["bytes_in_over_fair"],
                                 c["brokers_outside"]) for c in (entry["before"], entry["after"]))
    return LeaderInfo(entry["tolerance"], before, after)
