"""The plan file as a declared schema (pydantic), checked in one pass that reports every problem.

Entries that drive a run (moves, Kafka's partitions, goals, budget) may hold only known keys: a
key the tool does not read is a misspelling or an edit it would silently ignore. The review
sections (statistics, solver, targets, totals) are the tool's own report and ignore unknown
keys; what they hold is still checked, since the review and the executor print and use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NotRequired, Required

from pydantic import ConfigDict, TypeAdapter, with_config
from typing_extensions import TypedDict

from kafka_rebalance.core.errors import PlanError
from planner.log_dirs import DirMove, DirPlan, DirSpread
from planner.result import Move
from topology.model import TopicPartition
from topology.schema import (
    BROKER_IDS,
    STRINGS,
    ByteCount,
    Count,
    Flag,
    Integer,
    KafkaId,
    Number,
    Positive,
    Quantity,
    Text,
    TopicName,
)

if TYPE_CHECKING:  # the planner's modules load numpy: `rebalance --help` needs none of it
    from planner.planfile import RequestInfo
    from planner.requests import RequestLevel

_FORBID = ConfigDict(extra="forbid")
_IGNORE = ConfigDict(extra="ignore")


@with_config(_FORBID)
class MoveEntry(TypedDict):
    """A move as the journal's run header records it."""

    topic: TopicName
    partition: KafkaId
    current: list[KafkaId]
    target: list[KafkaId]
    size_bytes: ByteCount


@with_config(_FORBID)
class PlanMoveEntry(MoveEntry):
    """A move of the plan file: also the bytes it copies (size x replicas added)."""

    bytes_moved: ByteCount


@with_config(_FORBID)
class ReassignmentEntry(TypedDict):
    """One entry of Kafka's reassignment `partitions` list (log_dirs are not supported)."""

    topic: TopicName
    partition: KafkaId
    replicas: list[KafkaId]


@with_config(_FORBID)
class GoalsEntry(TypedDict):
    tolerance: Number
    max_utilization: Number
    add_brokers: list[KafkaId]
    remove_brokers: list[KafkaId]
    rack_aware: NotRequired[Flag]
    balance_leaders: NotRequired[Flag]
    cordoned_brokers: NotRequired[list[KafkaId]]
    topic_spread: NotRequired[Number | None]
    leader_balance: NotRequired[Number | None]
    request_balance: NotRequired[Number | None]
    level_log_dirs: NotRequired[Flag]


@with_config(_FORBID)
class BudgetEntry(TypedDict, total=False):
    max_bytes: ByteCount | None
    max_moves: Count | None
    time_limit_s: Number | None
    seed: Integer


@with_config(_IGNORE)
class ResourceEntry(TypedDict, total=False):
    average: Required[Quantity]
    max_over_avg: Required[Quantity]
    min_over_avg: Required[Quantity]
    within_tolerance: Required[Flag]
    deviation: Quantity | None
    forced: Flag


@with_config(_IGNORE)
class ResourcesEntry(TypedDict):
    disk: ResourceEntry
    net_in: ResourceEntry
    net_out: ResourceEntry


@with_config(_IGNORE)
class LoadEntry(TypedDict):
    disk: Quantity
    net_in: Quantity
    net_out: Quantity


@with_config(_IGNORE)
class CapacityEntry(TypedDict):
    disk: Positive
    net_in: Positive
    net_out: Positive


@with_config(_IGNORE)
class BrokerStatsEntry(TypedDict, total=False):
    id: Required[KafkaId]
    rack: Text | None
    alive: Flag
    replicas: Required[Count]
    leaders: Required[Count]
    load: Required[LoadEntry]
    capacity: Required[CapacityEntry]
    quota_window_seconds: Positive


@with_config(_IGNORE)
class StatsEntry(TypedDict):
    resources: ResourcesEntry
    brokers: list[BrokerStatsEntry]


@with_config(_IGNORE)
class SolverEntry(TypedDict, total=False):
    status: Required[Text]
    lower_bound_bytes: Required[ByteCount]
    gap: Number | None  # SolverInfo.excess_over_bound: bytes moved / lower bound - 1
    proven_gap: Number | None
    seconds: Quantity | None
    binding: list[Text] | None
    disk_lower_bound_bytes: ByteCount | None
    phases: dict[Text, Quantity] | None  # seconds per planner phase


@with_config(_IGNORE)
class TargetRowEntry(TypedDict):
    id: KafkaId
    disk: Quantity
    net_in: Quantity
    net_out: Quantity


@with_config(_IGNORE)
class ForcedEntry(TypedDict, total=False):
    disk: Flag
    net_in: Flag
    net_out: Flag


@with_config(_IGNORE)
class TargetsEntry(TypedDict, total=False):
    forced: ForcedEntry
    reasons: list[Text] | None
    brokers: Required[list[TargetRowEntry]]


@with_config(_IGNORE)
class CrowdingEntry(TypedDict):
    replicas_over: Count
    leaders_over: Count
    topics_crowding: Count


@with_config(_IGNORE)
class SpreadEntry(TypedDict):
    tolerance: Quantity
    before: CrowdingEntry
    after: CrowdingEntry


@with_config(_IGNORE)
class LeaderLevelEntry(TypedDict):
    count_over_fair: Quantity
    bytes_in_over_fair: Quantity
    brokers_outside: Count


@with_config(_IGNORE)
class LeaderBalanceEntry(TypedDict):
    tolerance: Quantity
    before: LeaderLevelEntry
    after: LeaderLevelEntry


@with_config(_IGNORE)
class RequestLevelEntry(TypedDict):
    over_fair: Quantity
    brokers_outside: Count
    total_per_sec: Quantity


@with_config(_IGNORE)
class BrokerRequestsEntry(TypedDict):
    id: KafkaId
    before: Quantity
    after: Quantity
    fair: Quantity
    low: NotRequired[Quantity]  # the band; plans written before it was kept lack it
    high: NotRequired[Quantity]


@with_config(_IGNORE)
class RequestBalanceEntry(TypedDict):
    tolerance: Quantity
    before: RequestLevelEntry
    after: RequestLevelEntry
    brokers: NotRequired[list[BrokerRequestsEntry]]


@with_config(_IGNORE)
class TieredEntry(TypedDict):
    remote_bytes: ByteCount
    moved_remote_bytes: ByteCount


@with_config(_FORBID)
class DirPlacementEntry(TypedDict):
    topic: TopicName
    partition: KafkaId
    broker: KafkaId
    log_dir: Text


@with_config(_FORBID)
class DirMoveEntry(TypedDict):
    topic: TopicName
    partition: KafkaId
    broker: KafkaId
    source: Text
    target: Text
    size_bytes: ByteCount


@with_config(_IGNORE)
class DirSpreadEntry(TypedDict):
    dirs: Count
    outside: Count
    worst: Quantity


@with_config(_FORBID)
class LogDirsEntry(TypedDict):
    """JBOD brokers (KIP-858): the dir of each arriving replica, the moves between a broker's
    dirs, and the dirs' spread before and after."""

    tolerance: Quantity
    placements: list[DirPlacementEntry]
    moves: list[DirMoveEntry]
    before: DirSpreadEntry
    after: DirSpreadEntry


@with_config(_IGNORE)
class TotalsEntry(TypedDict, total=False):
    bytes_moved: ByteCount
    moves: Count
    data_moves: Count


@with_config(ConfigDict(extra="allow"))
class PlanDocument(TypedDict, total=False):
    version: Required[Any]
    partitions: Required[list[ReassignmentEntry]]
    moves: Required[list[PlanMoveEntry]]
    fingerprint: Required[Text]
    goals: Required[GoalsEntry]
    budget: BudgetEntry | None
    before: Required[StatsEntry]
    after: Required[StatsEntry]
    solver: Required[SolverEntry]
    totals: TotalsEntry
    warnings: list[Text] | None
    created_at: Text | None
    targets: TargetsEntry | None
    topic_spread: SpreadEntry | None
    leader_balance: LeaderBalanceEntry | None
    request_balance: RequestBalanceEntry | None
    tiered_storage: TieredEntry | None
    log_dirs: LogDirsEntry | None


PLAN_ADAPTER = TypeAdapter(PlanDocument)
MOVES_ADAPTER = TypeAdapter(list[MoveEntry])
LOG_DIRS_ADAPTER = TypeAdapter(LogDirsEntry)
TOP_LEVEL_KEYS = tuple(PlanDocument.__annotations__)
NOUNS = {"current": BROKER_IDS, "target": BROKER_IDS, "replicas": BROKER_IDS,
         "add_brokers": BROKER_IDS, "remove_brokers": BROKER_IDS, "binding": STRINGS,
         "cordoned_brokers": BROKER_IDS,
         "warnings": STRINGS, "reasons": STRINGS, "moves": "a list of move objects",
         "partitions": "a list of partition objects"}


def moves_from_entries(entries: Sequence[MoveEntry], problems: list[str]) -> tuple[Move, ...]:
    """Moves of checked entries (a plan's or a journal header's); what Move refuses, or a
    current replica list that repeats a broker, is added to `problems`."""
    moves = []
    for entry in entries:
        try:
            move = Move(entry["topic"], entry["partition"], tuple(entry["current"]),
                        tuple(entry["target"]), entry["size_bytes"])
        except PlanError as exc:
            problems.append(str(exc))
            continue
        if len(set(move.current)) != len(move.current):
            problems.append(f"move {move.name}: current replicas {list(move.current)} repeat "
                            "a broker")
        moves.append(move)
    return tuple(moves)


def requests_to_dict(requests: RequestInfo) -> RequestBalanceEntry:
    """The plan file's (and the review's --json) form of the request balance."""
    def level(r: RequestLevel) -> RequestLevelEntry:
        return {"over_fair": r.over_fair, "brokers_outside": r.brokers_outside,
                "total_per_sec": r.total_per_sec}
    brokers: list[BrokerRequestsEntry] = [
        {"id": b.id, "before": b.before, "after": b.after, "fair": b.fair, "low": b.low,
         "high": b.high} for b in requests.brokers]
    return {"tolerance": requests.tolerance, "before": level(requests.before),
            "after": level(requests.after), "brokers": brokers}


def requests_from_entry(entry: RequestBalanceEntry) -> RequestInfo:
    """The request balance of a checked entry (a plan written before the band was kept gets
    the fair share +/- the tolerance)."""
    from planner.planfile import BrokerRequests, RequestInfo
    from planner.requests import RequestLevel

    tol = entry["tolerance"]
    before, after = (RequestLevel(c["over_fair"], c["brokers_outside"], c["total_per_sec"])
                     for c in (entry["before"], entry["after"]))
    brokers = tuple(BrokerRequests(b["id"], b["before"], b["after"], b["fair"],
                                   b.get("low", b["fair"] * (1 - tol)),
                                   b.get("high", b["fair"] * (1 + tol)))
                    for b in entry.get("brokers", ()))
    return RequestInfo(tol, before, after, brokers)


def log_dirs_to_dict(plan: DirPlan) -> LogDirsEntry:
    """The plan file's (and the journal header's) form of a log-dir plan."""
    def spread(s: DirSpread) -> DirSpreadEntry:
        return {"dirs": s.dirs, "outside": s.outside, "worst": s.worst}
    placements: list[DirPlacementEntry] = [
        {"topic": tp.topic, "partition": tp.partition, "broker": b, "log_dir": path}
        for (tp, b), path in plan.sorted_placements()]
    moves: list[DirMoveEntry] = [
        {"topic": m.topic, "partition": m.partition, "broker": m.broker, "source": m.source,
         "target": m.target, "size_bytes": m.size_bytes} for m in plan.moves]
    return {"tolerance": plan.tolerance, "placements": placements, "moves": moves,
            "before": spread(plan.before), "after": spread(plan.after)}


def log_dirs_from_entry(entry: LogDirsEntry) -> DirPlan:
    """The log-dir plan of a checked entry."""
    def spread(e: DirSpreadEntry) -> DirSpread:
        return DirSpread(e["dirs"], e["outside"], e["worst"])
    placements = {(TopicPartition(e["topic"], e["partition"]), e["broker"]): e["log_dir"]
                  for e in entry["placements"]}
    moves = tuple(DirMove(e["topic"], e["partition"], e["broker"], e["source"], e["target"],
                          e["size_bytes"]) for e in entry["moves"])
    return DirPlan(placements, moves, spread(entry["before"]), spread(entry["after"]),
                   entry["tolerance"])
