"""Preflight: the checks a run must pass before anything on the cluster is changed.

Pure over what the admin port reports, so each refusal is unit-tested; the message names the
partitions and brokers involved so the operator can act.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from executor.plan import ExecutionPlan
from executor.readings import under_replicated
from executor.throttle import (
    BROKER_THROTTLE_CONFIGS,
    FOLLOWER_REPLICAS,
    TOPIC_THROTTLE_CONFIGS,
    is_wildcard,
    parse_replica_list,
)
from kafka_rebalance.core.errors import ExecutionError
from kafka_rebalance.core.names import listed
from kafka_rebalance.core.ports import BrokerInfo, KafkaAdmin, PartitionInfo, ReassignmentState
from planner.goals import Goals
from planner.result import Move
from planner.validate import validate_plan
from topology.model import TopicPartition, Topology


@dataclass(frozen=True, slots=True)
class PlanCheck:
    """What the plan validator found: reasons to refuse, and what is only told (the balance
    drift since the plan was made, a rule a partition the plan leaves alone already breaks)."""

    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


PlanValidator = Callable[[ExecutionPlan], PlanCheck]
"""A hook judging a plan (no errors = valid), e.g. the planner's validator."""


@dataclass(frozen=True, slots=True)
class ClusterView:
    """What preflight looks at, read once from the admin port."""

    brokers: tuple[BrokerInfo, ...]
    partitions: Mapping[TopicPartition, PartitionInfo]
    reassignments: Mapping[TopicPartition, ReassignmentState]

    @classmethod
    def read(cls, admin: KafkaAdmin) -> ClusterView:
        return cls(tuple(admin.brokers()), {p.key: p for p in admin.partitions()},
                   admin.list_partition_reassignments())

    @property
    def live_broker_ids(self) -> frozenset[int]:
        return frozenset(b.id for b in self.brokers)


def planner_validator(before: Topology, goals: Goals, *,
                      strict_balance: bool = False) -> PlanValidator:
    """The planner's independent validator as a preflight hook. The hard rules (replication
    factor, racks, live brokers, capacity) refuse; a resource the plan now leaves further from
    balance than the cluster is (traffic drifts in minutes, and a plan is often run hours
    after its review) is told with its numbers, and refuses only with `strict_balance`. A
    partition the plan leaves alone is not judged: running the plan cannot change what it
    already breaks."""
    def validate(plan: ExecutionPlan) -> PlanCheck:
        report = validate_plan(before, list(plan.moves), goals,
                               worse_balance_is_error=strict_balance,
                               untouched_breaks_are_errors=False)
        return PlanCheck(tuple(report.errors), tuple(report.warnings))
    return validate


def _names(keys: Iterable[TopicPartition], limit: int = 10) -> str:
    return listed([str(k) for k in sorted(keys, key=lambda k: (k.topic, k.partition))], limit)


def mismatch(moves: Iterable[Move], view: ClusterView) -> list[str]:
    """The refusal of moves the cluster no longer matches (`stale_moves`), said on its own and
    before any read of their topics: a topic deleted since the plan, or the plan of another
    cluster, is a stale plan, not a cluster that cannot be read."""
    stale = stale_moves(moves, view)
    if not stale:
        return []
    return ["the cluster no longer matches the plan: " + "; ".join(stale[:10])
            + (f" ... ({len(stale)} moves in all)" if len(stale) > 10 else "")
            + "; make a new plan"]


def stale_moves(moves: Iterable[Move], view: ClusterView) -> list[str]:
    """Moves whose partition is gone or whose replicas are neither the plan's current ones nor
    its target (a move found at its target, such as one that failed after its copy ended, runs
    as a reassignment that changes nothing and finishes its steps)."""
    problems = []
    for m in moves:
        live = view.partitions.get(m.key)
        if live is None:
            problems.append(f"{m.name} (no longer exists)")
        elif live.replicas not in (m.current, m.target):
            problems.append(f"{m.name} (plan expects {list(m.current)}, "
                            f"cluster has {list(live.replicas)})")
    return problems


def no_live_replica(moves: Iterable[Move], view: ClusterView) -> list[TopicPartition]:
    """The moves' partitions whose every replica is on an offline broker now: no leader to
    copy from, so their reassignment cannot complete (planner.ordering.stranded)."""
    live = view.live_broker_ids
    return [m.key for m in moves
            if (p := view.partitions.get(m.key)) is not None and not live & set(p.replicas)]


def done_not_in_place(moves: Iterable[Move], view: ClusterView) -> list[str]:
    """Moves a journal marks done whose partition does not hold the move's target replicas:
    the journal does not describe this cluster (damaged, or the cluster was put back)."""
    problems = []
    for m in moves:
        live = view.partitions.get(m.key)
        if live is None:
            problems.append(f"{m.name} (no longer exists)")
        elif set(live.replicas) != set(m.target):
            problems.append(f"{m.name} (target {list(m.target)}, cluster has "
                            f"{list(live.replicas)})")
    return problems


def preflight_problems(plan: ExecutionPlan, view: ClusterView, *,
                       allow_under_replicated: bool = False,
                       validation: Sequence[str] = (),
                       own_in_flight: frozenset[TopicPartition] = frozenset(),
                       pending: Sequence[Move] | None = None,
                       done: Sequence[Move] = ()) -> list[str]:
    """Every reason not to start (or resume): empty means go.

    `own_in_flight`: reassignments this run itself has in flight (resume); `pending`: the moves
    still to start (default: all of them); `done`: moves the journal says are done (resume),
    which must be in place on the cluster.
    """
    problems: list[str] = []
    missing = done_not_in_place(done, view)
    if missing:
        problems.append("moves the journal marks done are not in place on the cluster: "
                        + "; ".join(missing[:10]) + (" ..." if len(missing) > 10 else "")
                        + "; the journal does not describe this cluster (damaged, or the "
                        "cluster changed since): make a new plan")
    foreign = set(view.reassignments) - own_in_flight
    if foreign:
        problems.append(f"a reassignment is already in progress for {_names(foreign)}; "
                        "wait for it or cancel it first")
    waiting = plan.moves if pending is None else pending
    problems.extend(mismatch(waiting, view))
    wanted = sorted({b for m in plan.moves for b in m.target} - view.live_broker_ids)
    if wanted:
        problems.append(f"target broker(s) {wanted} are offline or unknown")
    stranded = no_live_replica(waiting, view)
    if stranded:
        problems.append(f"{len(stranded)} move(s) are of partitions with no live replica "
                        f"({_names(stranded)}): every replica is on an offline broker, so "
                        "nothing can copy them; make a new plan (it leaves them in place) or "
                        "bring a broker of theirs back")
    urp = under_replicated(view.partitions.values(), view.live_broker_ids) - own_in_flight
    if urp and not allow_under_replicated:
        problems.append(f"{len(urp)} partition(s) are under-replicated ({_names(urp)}); "
                        "fix them first or override")
    problems.extend(f"plan validation: {p}" for p in validation)
    return problems


def onto_cordoned(moves: Sequence[Move], admin: KafkaAdmin, live: frozenset[int]) -> list[str]:
    """The run's refusal when a move would add a replica on a live broker cordoned now
    (KIP-1066): the cordon may be newer than the plan. (An offline receiver is refused apart.)"""
    receivers = {b for m in moves for b in m.added_brokers} & live
    cordoned = admin.cordoned_brokers(receivers) if receivers else frozenset()
    onto = frozenset(m.key for m in moves if cordoned & set(m.added_brokers))
    if not onto:
        return []
    return [f"broker(s) {sorted(cordoned)} are cordoned (cordoned.log.dirs) and {len(onto)} "
            f"move(s) would add a replica there ({_names(onto, 5)}); make a new plan, or "
            "uncordon them"]


def _offline_faults(view: ClusterView) -> frozenset[TopicPartition]:
    """Partitions under-replicated only because brokers are offline: under-replicated, and
    not for a live broker's replica."""
    partitions = view.partitions.values()
    return under_replicated(partitions) - under_replicated(partitions, view.live_broker_ids)


def _heals(move: Move, live: frozenset[int]) -> bool:
    """The move takes its partition's replicas off offline brokers, onto live ones."""
    return not (set(move.target) - live) and bool(set(move.current) - set(move.target) - live)


def exposed_moves(view: ClusterView, moves: Sequence[Move]) -> dict[str, int]:
    """The moves that heal a partition under-replicated by offline brokers, with its in-sync
    replicas left: the run starts them first, the fewest left first."""
    faults, live = _offline_faults(view), view.live_broker_ids
    return {m.name: len(view.partitions[m.key].isr) for m in moves
            if m.key in faults and _heals(m, live)}


def offline_replicas(view: ClusterView, moves: Sequence[Move]) -> list[str]:
    """A warning about partitions under-replicated only because brokers are offline (not
    refused: a pause cannot cure them, and draining those brokers is what does), with those
    down to one in-sync replica and how many of them the plan heals (first)."""
    faults, live = _offline_faults(view), view.live_broker_ids
    if not faults:
        return []
    offline = sorted({b for k in faults for b in view.partitions[k].replicas} - live)
    healed = sum(1 for m in moves if m.key in faults and _heals(m, live))
    last = frozenset(k for k in faults if len(view.partitions[k].isr) <= 1)
    lone = (f"; {len(last)} are down to one in-sync replica or none ({_names(last, 5)}): one "
            "more failure loses their data" if last else "")
    heals = (f"The plan heals {healed} of them; the run moves those first, the fewest in-sync "
             "replicas first" if healed else "The plan heals none of them: a plan that drains "
             f"those brokers (plan --remove-broker {offline[0]}) would")
    return [f"{len(faults)} partition(s) are under-replicated because broker(s) {offline} "
            f"are offline ({_names(faults)}){lone}. {heals}"]


def existing_throttles(brokers: Mapping[int, Mapping[str, str | None]],
                       topics: Mapping[str, Mapping[str, str | None]],
                       cap_bytes_per_sec: int) -> list[str]:
    """Warnings about throttle configs already set on the plan's brokers and topics.

    They are not refused: they may be an operator's on purpose. But a rate left over from an
    earlier reassignment silently slows every move through that broker, so each is named with
    what the run will do about it and how to remove it if it is a leftover.
    """
    warnings = []
    for broker, values in sorted(brokers.items()):
        for name, value in sorted(values.items()):
            if value is None:
                continue
            slower = value.isdigit() and int(value) < cap_bytes_per_sec
            effect = (f"lower than the cap, so moves through broker {broker} run at it"
                      if slower else "moves use the cap")
            warnings.append(
                f"broker {broker} already has {name}={value} ({effect}); it is put back as it "
                "was after each move. If it is left over from an earlier reassignment, remove "
                f"it first: kafka-configs --entity-type brokers --entity-name {broker} --alter "
                f"--delete-config {name}")
    for topic, values in sorted(topics.items()):
        for name, value in sorted(values.items()):
            if value:
                warnings.append(
                    f"topic {topic} already has {name}={value}; its entries stay, the run adds "
                    "and removes only its own")
    return warnings


def read_existing_throttles(admin: KafkaAdmin, plan: ExecutionPlan, cap_bytes_per_sec: int,
                            live: frozenset[int]) -> list[str]:
    """`existing_throttles` over the configs of every live broker and topic the plan touches
    (an offline broker answers nothing, and no throttle is set on it)."""
    brokers = sorted({b for m in plan.moves for b in (*m.current, *m.target)} & live)
    topics = sorted({m.topic for m in plan.moves})
    return existing_throttles(
        admin.broker_configs(brokers, BROKER_THROTTLE_CONFIGS) if brokers else {},
        admin.topic_configs(topics, TOPIC_THROTTLE_CONFIGS) if topics else {},
        cap_bytes_per_sec)


def warm_follower_quotas(view: ClusterView, moves: Sequence[Move],
                         follower_lists: Mapping[str, str | None],
                         own_entries: frozenset[tuple[str, str]] = frozenset()) -> list[str]:
    """Topic follower lists that keep the follower quota of a broker `moves` copy onto warm.

    Kafka records into a broker's follower quota every fetched byte of the partitions it
    follows that a follower list throttles ("*", or entries naming it), in sync or not. Its
    rate is the bytes of the last 11 one-second samples over the time they span: a broker that
    keeps recording a trickle has a long, nearly empty window, so a new replica then copies up
    to the cap x 11 s at full speed before the quota closes. A broker holds what it holds now
    and what earlier moves of the run give it. Entries this run added itself (`own_entries`:
    (topic, "partition:broker")) are not counted.
    """
    receivers = frozenset(b for m in moves for b in m.added_brokers)
    held = _holdings(view, moves, receivers)
    problems = []
    for topic, value in sorted(follower_lists.items()):
        pairs = held.get(topic, set())
        if is_wildcard(value):
            warm = {b for _, b in pairs}
        else:
            warm = {b for part, b in _entries(parse_replica_list(value))
                    if (part, b) in pairs and (topic, f"{part}:{b}") not in own_entries}
        if warm:
            problems.append(_warm_quota_problem(topic, value or "", sorted(warm)))
    return problems


def _holdings(view: ClusterView, moves: Sequence[Move], receivers: frozenset[int]
              ) -> dict[str, set[tuple[int, int]]]:
    """Per topic, the (partition, broker) replicas the receivers hold now or after a move."""
    held: dict[str, set[tuple[int, int]]] = {}
    for info in view.partitions.values():
        for b in receivers.intersection(info.replicas):
            held.setdefault(info.topic, set()).add((info.partition, b))
    for m in moves:
        for b in receivers.intersection(m.target):
            held.setdefault(m.topic, set()).add((m.partition, b))
    return held


def _entries(values: Sequence[str]) -> list[tuple[int, int]]:
    pairs = []
    for entry in values:
        part, _, broker = entry.partition(":")
        if part.strip().isdigit() and broker.strip().isdigit():
            pairs.append((int(part), int(broker)))
    return pairs


def _warm_quota_problem(topic: str, value: str, brokers: list[int]) -> str:
    shown = value if len(value) <= 60 else value[:57] + "..."
    return (f"topic {topic} has {FOLLOWER_REPLICAS}={shown}, which throttles broker(s) "
            f"{brokers} on replicas they hold (or get from this run): Kafka counts that "
            "traffic into their follower quota, so a move onto them would copy up to the cap "
            "x 11 s at full speed before the throttle holds. Remove it for the run "
            f"(kafka-configs --entity-type topics --entity-name {topic} --alter "
            f"--delete-config {FOLLOWER_REPLICAS}, and set it again afterwards), or accept the "
            "burst with --allow-quota-burst")


def read_follower_lists(admin: KafkaAdmin, view: ClusterView,
                        moves: Sequence[Move]) -> dict[str, str | None]:
    """The follower list of every topic a broker `moves` copy onto holds (or will hold)."""
    receivers = frozenset(b for m in moves for b in m.added_brokers)
    topics = sorted(_holdings(view, moves, receivers))
    if not topics:
        return {}
    found = admin.topic_configs(topics, (FOLLOWER_REPLICAS,))
    return {t: values.get(FOLLOWER_REPLICAS) for t, values in found.items()}


def require_preflight(problems: list[str]) -> None:
    """Raise one ExecutionError listing every preflight problem."""
    if problems:
        raise ExecutionError("preflight refused the run, nothing was changed:\n- "
                             + "\n- ".join(problems))
