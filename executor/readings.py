"""Gather gate readings from the ports: PromQL templates over a MetricsSource, ISR from admin.

The templates are configurable (`execute --queries FILE`); the defaults are topology.promql's
(they match the sandbox's JMX exporter series). The rate window follows the scrape interval
(`window_for_scrape_interval`): 10s on the sandbox (1 s scrapes), so the gate sees traffic
settle within seconds, and longer where scrapes are further apart.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from executor import slo
from executor.gates import GateReading, NetworkSample
from executor.slo import SloReading
from kafka_rebalance.core.errors import ClusterError, InputError, MetricsError
from kafka_rebalance.core.ports import KafkaAdmin, MetricsSource, PartitionInfo
from topology import promql
from topology.model import TopicPartition


@dataclass(frozen=True, slots=True)
class GateQueries:
    """PromQL templates: per-broker vectors labelled `broker_label`, one scalar for p99."""

    net_in: str = promql.BROKER_NETWORK_IN_RATE
    net_out: str = promql.BROKER_NETWORK_OUT_RATE
    traffic_in: str = promql.BROKER_CLIENT_IN_RATE  # client traffic only, for --adaptive
    traffic_out: str = promql.BROKER_CLIENT_OUT_RATE
    produce_p99_ms: str = promql.PRODUCE_P99_MS
    # the SLO guard's indicators (executor.slo): per broker, but lag (one value)
    fetch_p99_ms: str = promql.FETCH_CONSUMER_P99_MS
    flush_p95_ms: str = promql.LOG_FLUSH_P95_MS
    under_replicated: str = promql.UNDER_REPLICATED_PARTITIONS
    consumer_lag: str = promql.CONSUMER_LAG
    # copies into each broker (over a quota window, at a run's start: which windows are clean)
    reassignment_in: str = promql.BROKER_REASSIGNMENT_IN_RATE
    # copies out of each broker: only the dashboard draws it (`rebalance dashboard`)
    reassignment_out: str = promql.BROKER_REASSIGNMENT_OUT_RATE
    window: str = "10s"
    broker_label: str = "broker_id"

    def render(self, template: str) -> str:
        """The query for `template` (a topology.promql-style format string)."""
        return promql.render(template, window=self.window)

    def to_dict(self) -> dict[str, str]:
        """The templates, window and label (for the journal, so `resume` queries alike)."""
        return {name: str(getattr(self, name)) for name in QUERY_KEYS}

    @classmethod
    def from_dict(cls, values: Mapping[str, object], what: str) -> GateQueries:
        """Templates from a mapping (a --queries file, a journal); unknown keys, non-strings
        and templates that do not render are InputErrors naming the key."""
        unknown = sorted(set(values) - set(QUERY_KEYS))
        if unknown:
            raise InputError(f"{what}: unknown key(s) {unknown}; known: {list(QUERY_KEYS)}")
        for key, value in values.items():
            if not isinstance(value, str) or not value.strip():
                raise InputError(f"{what}: {key} must be a non-empty string")
        queries = replace(cls(), **{k: str(v) for k, v in values.items()})
        if not _LABEL.fullmatch(queries.broker_label):
            raise InputError(f"{what}: broker_label {queries.broker_label!r:.60} is not a "
                             "Prometheus label name (letters, digits and _, not first a digit)")
        default = cls()
        stale = [key for key in ("net_in", "net_out") if key not in values]
        if queries.broker_label != default.broker_label and stale:
            raise InputError(f"{what}: broker_label is {queries.broker_label!r}, but the gate's "
                             f"{' and '.join(stale)} {'is' if len(stale) == 1 else 'are'} "
                             "left at the defaults, which name "
                             f"brokers by {default.broker_label}: the gate would find no "
                             "series; give those templates too")
        for key in TEMPLATE_KEYS:
            try:
                queries.render(getattr(queries, key))
            except (KeyError, IndexError, ValueError) as exc:
                raise InputError(f"{what}: {key} is not a valid template ({exc!r}); use "
                                 "{window} for the rate window, {selector} and {comma} for "
                                 "label matchers, and double other braces") from None
        return queries


_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
TEMPLATE_KEYS = ("net_in", "net_out", "traffic_in", "traffic_out", "produce_p99_ms",
                 "fetch_p99_ms", "flush_p95_ms", "under_replicated", "consumer_lag",
                 "reassignment_in", "reassignment_out")
QUERY_KEYS = (*TEMPLATE_KEYS, "window", "broker_label")
MIN_GATE_WINDOW_S = 10
SCRAPES_PER_WINDOW = 4


def window_for_scrape_interval(interval_s: float | None) -> str:
    """A rate window for the gate: at least four scrapes (rate() needs two, and one may be
    missed), never under 10 s; 1m when the scrape interval is unknown. The sandbox's 1 s
    scrapes give 10s; a production 30 s interval gives 2m (a shorter window would find no
    series and hold the run)."""
    if interval_s is None:
        return "1m"
    return f"{max(MIN_GATE_WINDOW_S, math.ceil(SCRAPES_PER_WINDOW * interval_s))}s"


def per_broker(metrics: MetricsSource, queries: GateQueries, template: str,
               window: str | None = None) -> dict[int, float]:
    """Evaluate a per-broker template (over the queries' rate window unless `window` is
    given); series without a readable broker label are skipped."""
    query = queries.render(template) if window is None else promql.render(template, window)
    result: dict[int, float] = {}
    for labels, value in metrics.query(query):
        raw = labels.get(queries.broker_label)
        if raw is not None and raw.isascii() and raw.lstrip("-").isdigit():
            result[int(raw)] = result.get(int(raw), 0.0) + value
    return result


def read_network(metrics: MetricsSource, queries: GateQueries,
                 brokers: Iterable[int]) -> NetworkSample:
    """Network in/out of `brokers` (raises MetricsError when Prometheus cannot answer)."""
    keep = set(brokers)
    net_in = per_broker(metrics, queries, queries.net_in)
    net_out = per_broker(metrics, queries, queries.net_out)
    return NetworkSample({b: v for b, v in net_in.items() if b in keep},
                         {b: v for b, v in net_out.items() if b in keep})


def read_traffic(metrics: MetricsSource, queries: GateQueries) -> tuple[
    dict[int, float], dict[int, float]
]:
    """Non-replication bytes in and out per broker (the load --adaptive leaves room for)."""
    return (per_broker(metrics, queries, queries.traffic_in),
            per_broker(metrics, queries, queries.traffic_out))


def read_slo(metrics: MetricsSource, queries: GateQueries, watched: Iterable[str]) -> SloReading:
    """One sample of the SLO guard's watched indicators (raises MetricsError when Prometheus
    cannot answer); an indicator whose query finds no series is named in `absent`."""
    templates = {slo.PRODUCE_P99: queries.produce_p99_ms, slo.FETCH_P99: queries.fetch_p99_ms,
                 slo.FLUSH_P95: queries.flush_p95_ms}
    wanted = set(watched)
    values: dict[str, dict[int, float]] = {}
    absent: set[str] = set()
    for name, template in templates.items():
        if name in wanted:
            values[name] = per_broker(metrics, queries, template)
            if not values[name]:
                absent.add(name)
    urp: int | None = None
    if slo.UNDER_REPLICATED in wanted:
        counts = per_broker(metrics, queries, queries.under_replicated)
        urp = round(sum(counts.values())) if counts else None
        if not counts:
            absent.add(slo.UNDER_REPLICATED)
    lag: float | None = None
    if slo.CONSUMER_LAG in wanted:
        found = [v for _, v in metrics.query(queries.render(queries.consumer_lag))
                 if math.isfinite(v)]
        lag = max(found) if found else None
        if not found:
            absent.add(slo.CONSUMER_LAG)
    return SloReading(values.get(slo.PRODUCE_P99, {}), values.get(slo.FETCH_P99, {}),
                      values.get(slo.FLUSH_P95, {}), urp, lag, frozenset(absent))


def copies_in_over(metrics: MetricsSource, queries: GateQueries, seconds: float
                   ) -> dict[int, float]:
    """Each broker's reassignment bytes in per second over the last `seconds` (raises
    MetricsError when Prometheus cannot answer; a broker without a series is left out)."""
    return per_broker(metrics, queries, queries.reassignment_in, f"{math.ceil(seconds)}s")


def under_replicated(partitions: Iterable[PartitionInfo],
                     live: frozenset[int] | None = None,
                     near: frozenset[int] | None = None) -> frozenset[TopicPartition]:
    """Partitions whose ISR lacks one of their assigned replicas; with `live`, only those
    missing a live broker's replica (a follower falling behind, which a pause can cure), not
    those missing only offline brokers' (a fault no wait cures: a drain does); with `near`,
    only those whose lagging follower or leader is one of those brokers (what a copy through
    them can have slowed), not a slow broker elsewhere, which no wait of this run cures."""
    def lagging(p: PartitionInfo) -> bool:
        missing = _lagging_replicas(p, live)
        if near is not None and missing and p.leader not in near:
            missing &= near
        return bool(missing)
    return frozenset(p.key for p in partitions if lagging(p))


def _lagging_replicas(p: PartitionInfo, live: frozenset[int] | None,
                      adding: Iterable[int] = ()) -> set[int]:
    """The brokers of `p`'s replicas missing from its ISR: with `live`, only live brokers';
    never those a reassignment is `adding` (out of sync by design)."""
    missing = set(p.replicas) - set(p.isr) - set(adding)
    return missing & live if live is not None else missing


def under_replicated_near(partitions: Iterable[PartitionInfo], live: frozenset[int],
                          moving: frozenset[TopicPartition],
                          adding: Mapping[TopicPartition, Iterable[int]] | None = None
                          ) -> dict[int, int]:
    """Per broker, the partitions outside the run's moves (`moving`) whose ISR lacks a live
    replica, counted on each lagging live follower and on the partition's leader: the brokers
    whose links a copy can have starved (a copy into the follower, or out of the leader).
    Replicas of offline brokers do not count (no pause cures them), nor replicas that another
    reassignment is adding (`adding`: not yet in sync by design, as Kafka's own count says);
    brokers with none are left out."""
    counts: dict[int, int] = {}
    added = adding or {}
    for p in partitions:
        if p.key in moving:
            continue
        lagging = _lagging_replicas(p, live, added.get(p.key, ()))
        if not lagging:
            continue
        leader = {p.leader} if p.leader is not None and p.leader >= 0 else set()
        for broker in lagging | leader:
            counts[broker] = counts.get(broker, 0) + 1
    return counts


def read_gate(metrics: MetricsSource, admin: KafkaAdmin, queries: GateQueries,
              brokers: Iterable[int], want_p99: bool) -> GateReading:
    """One gate sample; a metrics or cluster failure becomes an 'unavailable' reading. Only
    the under-replication near `brokers` (the move's) counts: executor.readings.under_replicated."""
    brokers = frozenset(brokers)
    try:
        network = read_network(metrics, queries, brokers)
        p99: float | None = None
        if want_p99:
            values = [v for _, v in metrics.query(queries.render(queries.produce_p99_ms))]
            p99 = max(values) if values else None
    except MetricsError as exc:
        return GateReading(None, unavailable=str(exc))
    try:
        live = frozenset(b.id for b in admin.brokers())
        urp = under_replicated(admin.partitions(), live, brokers)
    except ClusterError as exc:
        return GateReading(None, unavailable=f"cluster metadata: {exc}")
    return GateReading(network, urp, p99)
