"""Pure throttle policy: which replication throttles one move sets, and how to undo exactly that.

Kafka throttles reassignment traffic with two per-broker rates (`leader.replication.throttled.rate`
on the brokers that send, `follower.replication.throttled.rate` on the brokers that receive) that
only apply to the replicas listed in two per-topic lists ("partition:broker,..." or "*").

Policy (decided here, documented for operators):
- the leader rate goes on the brokers holding the current replicas, the follower rate on the
  brokers that receive a new replica; every rate is at most the cap (`--max-mbps`);
- an operator's pre-existing rate that is *lower* than ours is kept: the tool never loosens a
  throttle somebody set on purpose (the plan carries a note saying so);
- only this partition's entries are added to the topic lists, merged with what is there; a "*"
  list already throttles everything and is left alone;
- a move that adds several replicas splits the cap between them (each follower rate is the
  cap over their number), so a leader feeding them together still sends at most the cap;
- restore puts every broker rate back to its prior value (None = delete the override) and removes
  from each topic list exactly the entries this move added (other moves' entries stay);
- moves of one run running side by side share a broker rate (a broker that keeps its replica in
  one move is a source of another): the later move keeps the rate in force and takes over the
  earlier one's prior, so every move that sets a rate records the value from before the run, and
  a rate is put back only by the last move that holds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from kafka_rebalance.core.errors import ExecutionError, InputError
from kafka_rebalance.core.ports import ConfigChanges
from planner.result import Move
from topology.model import Capacity

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
BROKER_THROTTLE_CONFIGS: tuple[str, ...] = (LEADER_RATE, FOLLOWER_RATE)
TOPIC_THROTTLE_CONFIGS: tuple[str, ...] = (LEADER_REPLICAS, FOLLOWER_REPLICAS)
WILDCARD = "*"

ConfigValues = Mapping[str, str | None]
SharedRates = Mapping[tuple[int, str], int]  # (broker, config) -> rate another move holds


@dataclass(frozen=True)
class ThrottlePriors:
    """The values a move's throttle configs had before the move touched them (None = unset)."""

    brokers: Mapping[int, ConfigValues]
    topic: str
    topic_values: ConfigValues


@dataclass(frozen=True)
class ThrottlePlan:
    """What one move sets: broker rates, the topic-list entries it adds, and the priors."""

    move: str
    priors: ThrottlePriors
    broker_rates: Mapping[int, Mapping[str, int]] = field(default_factory=dict)
    leader_entries: tuple[str, ...] = ()
    follower_entries: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        """True when the move sets nothing (a leadership-only move)."""
        return not self.broker_rates and not self.leader_entries and not self.follower_entries

    @property
    def brokers(self) -> tuple[int, ...]:
        return tuple(sorted(self.broker_rates))

    def added_entries(self, name: str) -> tuple[str, ...]:
        """The entries this move adds to topic config `name`."""
        return self.leader_entries if name == LEADER_REPLICAS else self.follower_entries


def parse_replica_list(value: str | None) -> tuple[str, ...]:
    """Entries of a throttled-replicas value, in order: "0:1, 0:2" -> ("0:1", "0:2")."""
    if value is None:
        return ()
    return tuple(e.strip() for e in value.split(",") if e.strip())


def is_wildcard(value: str | None) -> bool:
    return parse_replica_list(value) == (WILDCARD,)


def merge_entries(value: str | None, entries: tuple[str, ...]) -> str | None:
    """`value` with `entries` appended where missing; a wildcard or nothing to add: unchanged."""
    if is_wildcard(value) or not entries:
        return value
    present = parse_replica_list(value)
    merged = present + tuple(e for e in entries if e not in present)
    return ",".join(merged)


def remove_entries(value: str | None, entries: tuple[str, ...], prior: str | None) -> str | None:
    """`value` without `entries`. When nothing is left: delete (None), or "" when the prior value
    was an explicit empty list. Prior entries gone from `value` were removed by someone else
    (another move's restore, an operator) and are not brought back.
    """
    if is_wildcard(value) or not entries:
        return value
    kept = tuple(e for e in parse_replica_list(value) if e not in entries)
    if kept and kept == parse_replica_list(prior):
        return prior  # byte for byte what the operator wrote
    if kept:
        return ",".join(kept)
    return prior if prior is not None and not parse_replica_list(prior) else None


def parse_rate(value: str | None) -> int | None:
    """A broker rate config as an integer (bytes/s); None when unset or unreadable."""
    if value is None:
        return None
    try:
        return int(float(value))
    except ValueError:
        return None


def adaptive_rate(capacity: float, traffic: float, floor: int, cap: int) -> int:
    """Headroom (capacity minus non-replication traffic) clamped to [floor, cap]."""
    if not 0 < floor <= cap:
        raise InputError(f"adaptive floor must be positive and at most the cap ({cap}), "
                         f"got {floor}")
    return int(max(floor, min(cap, capacity - traffic)))


@dataclass(frozen=True)
class RateLimits:
    """The rate (bytes/s) to set per broker: leader rate on sources, follower rate on targets."""

    leader: Mapping[int, int]
    follower: Mapping[int, int]


def follower_share(move: Move, cap: int) -> int:
    """Each receiver's part of the cap: a leader feeding k new replicas at once sends at most
    the cap in total (Kafka's leader quota alone lets concurrent fetches overshoot it)."""
    return max(1, cap // max(1, len(move.added_brokers)))


def uniform_rates(move: Move, cap: int) -> RateLimits:
    """The cap on every source, and each receiver's share of it."""
    share = follower_share(move, cap)
    return RateLimits({b: cap for b in move.current}, {b: share for b in move.added_brokers})


def adaptive_rates(move: Move, cap: int, floor: int, capacities: Mapping[int, Capacity],
                   traffic_in: Mapping[int, float], traffic_out: Mapping[int, float]) -> RateLimits:
    """Per-broker rates from headroom: sources by network out, receivers by network in.

    A broker without a known capacity gets the cap (the limit the operator asked for).
    """
    def rate(b: int, capacity_of: str, traffic: Mapping[int, float]) -> int:
        capacity = capacities.get(b)
        if capacity is None:
            return cap
        return adaptive_rate(getattr(capacity, capacity_of), traffic.get(b, 0.0), floor, cap)

    share = follower_share(move, cap)
    return RateLimits(
        {b: rate(b, "net_out_bytes_per_sec", traffic_out) for b in move.current},
        {b: min(share, rate(b, "net_in_bytes_per_sec", traffic_in)) for b in move.added_brokers},
    )


def rates_differ(old: ThrottlePlan, new: ThrottlePlan, relative: float) -> bool:
    """True when some broker rate changes by more than `relative` (e.g. 0.1 = 10 %)."""
    for b, rates in new.broker_rates.items():
        for name, rate in rates.items():
            before = old.broker_rates.get(b, {}).get(name)
            if before is None or abs(rate - before) > relative * before:
                return True
    return False


def kept_rate(wanted: int, prior: str | None) -> int:
    """`wanted`, or the lower rate an operator had set already: the tool never loosens a
    throttle somebody set on purpose."""
    existing = parse_rate(prior)
    return existing if existing is not None and 0 < existing < wanted else wanted


def _choose_rate(broker: int, name: str, wanted: int, prior: str | None,
                 notes: list[str]) -> int:
    rate = kept_rate(wanted, prior)
    if rate != wanted:
        notes.append(f"broker {broker}: keeping the lower pre-existing {name}={rate} "
                     f"(instead of {wanted})")
    return rate


def plan_throttle(move: Move, priors: ThrottlePriors, rates: RateLimits,
                  shared: SharedRates | None = None,
                  offline: frozenset[int] = frozenset()) -> ThrottlePlan:
    """The throttle one move sets, given the priors it read and the rates it wants; a rate in
    `shared` is one another move of the run holds, kept as it is (see the module docstring);
    `offline` brokers (a dead broker being drained) get none."""
    if move.leadership_only:
        return ThrottlePlan(move.name, priors)
    notes: list[str] = []
    broker_rates: dict[int, dict[str, int]] = {}
    for role, name, brokers in ((rates.leader, LEADER_RATE, move.current),
                                (rates.follower, FOLLOWER_RATE, move.added_brokers)):
        for b in brokers:
            if b in offline:
                continue  # an offline (leaving) replica sends nothing and takes no config
            prior = priors.brokers.get(b, {}).get(name)
            held = (shared or {}).get((b, name))
            broker_rates.setdefault(b, {})[name] = (
                held if held is not None else _choose_rate(b, name, role[b], prior, notes))
    p = move.partition
    leader_prior = priors.topic_values.get(LEADER_REPLICAS)
    follower_prior = priors.topic_values.get(FOLLOWER_REPLICAS)
    leader = tuple(f"{p}:{b}" for b in move.current)
    follower = tuple(f"{p}:{b}" for b in move.added_brokers)
    return ThrottlePlan(
        move=move.name,
        priors=priors,
        broker_rates={b: broker_rates[b] for b in sorted(broker_rates)},
        leader_entries=_new_entries(leader_prior, leader),
        follower_entries=_new_entries(follower_prior, follower),
        notes=tuple(notes),
    )


def capped_throttle(plan: ThrottlePlan, cap: int) -> ThrottlePlan:
    """`plan` with no broker rate above `cap` (a run resumed with a lower --max-mbps): the
    leader rate bounds what each sender sends, so the copy keeps to the new cap."""
    rates = {b: {name: min(rate, cap) for name, rate in by_name.items()}
             for b, by_name in plan.broker_rates.items()}
    return plan if rates == plan.broker_rates else replace(plan, broker_rates=rates)


def _new_entries(prior: str | None, wanted: tuple[str, ...]) -> tuple[str, ...]:
    if is_wildcard(prior):
        return ()
    present = parse_replica_list(prior)
    return tuple(e for e in wanted if e not in present)


def apply_changes(plan: ThrottlePlan, topic_now: ConfigValues) -> tuple[
    dict[int, ConfigChanges], dict[str, ConfigChanges]
]:
    """Config writes that set `plan`, merging its entries into the topic lists as they are now."""
    brokers: dict[int, ConfigChanges] = {
        b: {n: str(v) for n, v in rates.items()} for b, rates in plan.broker_rates.items()
    }
    topic: dict[str, str | None] = {}
    for name in TOPIC_THROTTLE_CONFIGS:
        entries = plan.added_entries(name)
        if entries:
            topic[name] = merge_entries(topic_now.get(name), entries)
    return brokers, ({plan.priors.topic: topic} if topic else {})


def restore_changes(plan: ThrottlePlan, topic_now: ConfigValues,
                    keep: frozenset[tuple[int, str]] = frozenset()) -> tuple[
    dict[int, ConfigChanges], dict[str, ConfigChanges]
]:
    """Config writes that undo `plan` exactly: prior rates back (but those in `keep`, which
    another move still holds), its own entries removed."""
    brokers: dict[int, ConfigChanges] = {}
    for b, rates in plan.broker_rates.items():
        changes = {n: plan.priors.brokers.get(b, {}).get(n) for n in rates if (b, n) not in keep}
        if changes:
            brokers[b] = changes
    topic: dict[str, str | None] = {}
    for name in TOPIC_THROTTLE_CONFIGS:
        entries = plan.added_entries(name)
        now = topic_now.get(name)
        restored = remove_entries(now, entries, plan.priors.topic_values.get(name))
        if entries and restored != now:
            topic[name] = restored
    return brokers, ({plan.priors.topic: topic} if topic else {})


def check_applied(plan: ThrottlePlan, broker_now: Mapping[int, ConfigValues],
                  topic_now: ConfigValues) -> list[str]:
    """Differences between the cluster's configs and `plan` applied (empty = read back OK)."""
    problems = []
    for b, rates in plan.broker_rates.items():
        for name, rate in rates.items():
            got = broker_now.get(b, {}).get(name)
            if parse_rate(got) != rate:
                problems.append(f"broker {b} {name} is {got!r}, expected {rate}")
    for name in TOPIC_THROTTLE_CONFIGS:
        value = topic_now.get(name)
        missing = [e for e in plan.added_entries(name) if e not in parse_replica_list(value)]
        if missing and not is_wildcard(value):
            problems.append(f"topic {plan.priors.topic} {name} lacks {','.join(missing)}")
    return problems


def check_restored(plan: ThrottlePlan, broker_now: Mapping[int, ConfigValues],
                   topic_now: ConfigValues,
                   keep: frozenset[tuple[int, str]] = frozenset()) -> list[str]:
    """Differences between the cluster's configs and `plan` undone (empty = restored); rates in
    `keep` are another move's and are not looked at."""
    problems = []
    for b, rates in plan.broker_rates.items():
        for name in (n for n in rates if (b, n) not in keep):
            prior = plan.priors.brokers.get(b, {}).get(name)
            got = broker_now.get(b, {}).get(name)
            if got != prior:
                problems.append(f"broker {b} {name} is {got!r}, prior value was {prior!r}")
    for name in TOPIC_THROTTLE_CONFIGS:
        left = [e for e in plan.added_entries(name) if e in parse_replica_list(topic_now.get(name))]
        if left:
            problems.append(f"topic {plan.priors.topic} {name} still lists {','.join(left)}")
    return problems


def require_clean(problems: list[str], what: str) -> None:
    """Raise ExecutionError listing `problems` when there are any."""
    if problems:
        raise ExecutionError(f"{what}: " + "; ".join(problems))


def plan_to_json(plan: ThrottlePlan) -> dict[str, object]:
    """A JSON-ready dict of `plan` (for the journal)."""
    return {
        "move": plan.move,
        "topic": plan.priors.topic,
        "prior_brokers": {str(b): dict(v) for b, v in sorted(plan.priors.brokers.items())},
        "prior_topic": dict(plan.priors.topic_values),
        "broker_rates": {str(b): dict(v) for b, v in sorted(plan.broker_rates.items())},
        "leader_entries": list(plan.leader_entries),
        "follower_entries": list(plan.follower_entries),
        "notes": list(plan.notes),
    }


def plan_from_json(data: Mapping[str, object]) -> ThrottlePlan:
    """Inverse of plan_to_json."""
    def dct(key: str) -> Mapping[str, object]:
        value = data[key]
        if not isinstance(value, Mapping):
            raise ExecutionError(f"journal: throttle field {key} is not an object")
        return value

    def strs(key: str) -> tuple[str, ...]:
        value = data[key]
        if not isinstance(value, list):
            raise ExecutionError(f"journal: throttle field {key} is not a list")
        return tuple(str(v) for v in value)

    def opt(v: object) -> str | None:
        return None if v is None else str(v)

    def values(v: object) -> dict[str, str | None]:
        return {str(k): opt(x) for k, x in v.items()} if isinstance(v, Mapping) else {}

    def ints(v: object) -> dict[str, int]:
        return {str(k): int(str(x)) for k, x in v.items()} if isinstance(v, Mapping) else {}

    priors = ThrottlePriors(
        brokers={int(b): values(v) for b, v in dct("prior_brokers").items()},
        topic=str(data["topic"]),
        topic_values=values(dct("prior_topic")),
    )
    return ThrottlePlan(
        move=str(data["move"]),
        priors=priors,
        broker_rates={int(b): ints(v) for b, v in dct("broker_rates").items()},
        leader_entries=strs("leader_entries"),
        follower_entries=strs("follower_entries"),
        notes=strs("notes"),
    )
