"""Settings of the execute family of commands, from their flags: the journal's path, the
executor's own /metrics, a new run's ExecutorConfig (`config_from_flags`), a resumed run's new
cap, the --finish-by time and the gate's queries. (The run use cases are
`kafka_rebalance.usecases.run`; which settings a resumed run keeps is
`ExecutorConfig.from_journal`.)"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from executor.config import (
    DEFAULT_GATE_TIMEOUT_SECONDS,
    MB,
    Concurrency,
    Event,
    ExecutorConfig,
    Reporter,
    adaptive_floor_for,
)
from executor.gates import GatePolicy
from executor.slo import (
    DEFAULT_EVERY_SECONDS,
    DEFAULT_FETCH_P99_MS,
    DEFAULT_FLUSH_P95_MS,
    DEFAULT_PRODUCE_P99_MS,
    DEFAULT_UNDER_REPLICATED,
    SloPolicy,
)
from kafka_rebalance.core.errors import InputError
from topology.units import MAX_NET_BYTES_PER_SEC

if TYPE_CHECKING:

    from executor.readings import GateQueries

def check_metrics_port(port: int | None) -> None:
    """--metrics-port must be a TCP port; checked before the cluster is contacted."""
    if port is not None and not 1 <= port <= 65535:
        raise InputError(f"--metrics-port must be between 1 and 65535, got {port}")


def serve_metrics(port: int | None, cap: int) -> Reporter | None:
    """Start the executor's own /metrics endpoint on `port`; its reporter."""
    if port is None:
        return None
    from prometheus_client import CollectorRegistry, start_http_server

    from executor.exporter import ExecutorMetrics

    registry = CollectorRegistry()
    try:
        start_http_server(port, addr="0.0.0.0", registry=registry)
    except OSError as exc:
        raise InputError(f"--metrics-port {port}: {exc.strerror}; choose a free port") from exc
    return ExecutorMetrics(registry, cap)


def both(first: Reporter, second: Reporter | None) -> Reporter:
    if second is None:
        return first

    def report(event: Event) -> None:
        first(event)
        second(event)
    return report


def slo_from_flags(*, guard: bool = True, produce_p99_ms: float = DEFAULT_PRODUCE_P99_MS,
                   fetch_p99_ms: float = DEFAULT_FETCH_P99_MS,
                   flush_p95_ms: float = DEFAULT_FLUSH_P95_MS,
                   under_replicated: int = DEFAULT_UNDER_REPLICATED,
                   lag: float | None = None,
                   interval: float = DEFAULT_EVERY_SECONDS, baseline: bool = True) -> SloPolicy:
    """The SLO guard from its flags; a latency threshold of 0 leaves that indicator out."""
    _finite(("--slo-produce-p99-ms", produce_p99_ms), ("--slo-fetch-p99-ms", fetch_p99_ms),
            ("--slo-flush-p95-ms", flush_p95_ms), ("--slo-lag", lag),
            ("--slo-interval", interval))
    for flag, value in (("--slo-produce-p99-ms", produce_p99_ms),
                        ("--slo-fetch-p99-ms", fetch_p99_ms),
                        ("--slo-flush-p95-ms", flush_p95_ms), ("--slo-lag", lag),
                        ("--slo-under-replicated", under_replicated)):
        if value is not None and value < 0:
            raise InputError(f"{flag} must be >= 0 (0 turns a latency threshold off), got "
                             f"{value}")
    if not interval > 0:
        raise InputError(f"--slo-interval must be positive, got {interval}")
    return SloPolicy(enabled=guard, produce_p99_max_ms=produce_p99_ms or None,
                     fetch_p99_max_ms=fetch_p99_ms or None, flush_p95_max_ms=flush_p95_ms or None,
                     under_replicated_max=under_replicated, consumer_lag_max=lag or None,
                     every_seconds=interval, baseline=baseline)


def config_from_flags(*, max_mbps: float, concurrency: Concurrency = 1, cooldown: float = 0.0,
                      adaptive: bool = False, elect_leaders: bool = True,
                      allow_under_replicated: bool = False, gate_margin: float = 0.10,
                      gate_floor_mbps: float = 1.0, gate_samples: int = 3,
                      gate_timeout: float | None = DEFAULT_GATE_TIMEOUT_SECONDS,
                      produce_p99_max_ms: float | None = None, poll_seconds: float = 1.0,
                      quota_window: float | None = 0.0, final_gate: bool = False,
                      slo: SloPolicy | None = None) -> ExecutorConfig:
    """One validated config from the flags of a new run (rates in MB/s -> bytes/s); every
    default is the flag's own."""
    _finite(("--max-mbps", max_mbps), ("--cooldown", cooldown), ("--gate-margin", gate_margin),
            ("--gate-floor-mbps", gate_floor_mbps), ("--gate-timeout", gate_timeout),
            ("--gate-produce-p99-ms", produce_p99_max_ms), ("--poll-seconds", poll_seconds),
            ("--quota-window", quota_window))
    check_mbps(max_mbps)
    gate = GatePolicy(gate_margin, gate_floor_mbps * MB, gate_samples, produce_p99_max_ms)
    cap = int(max_mbps * MB)
    return ExecutorConfig(max_bytes_per_sec=cap, concurrency=concurrency,
                          cooldown_seconds=cooldown, poll_seconds=poll_seconds,
                          elect_leaders=elect_leaders, adaptive=adaptive,
                          adaptive_floor_bytes_per_sec=adaptive_floor_for(cap), gate=gate,
                          allow_under_replicated=allow_under_replicated,
                          gate_timeout_seconds=gate_timeout, quota_window_seconds=quota_window,
                          final_gate=final_gate, slo=slo or SloPolicy())


# The least cap --max-mbps may give: 1 byte/s. A cap under it rounds to 0 bytes/s, which would
# stop replication altogether (and make every ETA a number of sixty digits).
MIN_MBPS = 1e-6


def check_mbps(max_mbps: float) -> None:
    """--max-mbps: a finite number of MB/s, at least MIN_MBPS."""
    if not math.isfinite(max_mbps) or max_mbps <= 0:
        raise InputError(f"--max-mbps must be a positive finite number, got {max_mbps}")
    if max_mbps < MIN_MBPS:
        raise InputError(f"--max-mbps {max_mbps:g} is under one byte per second: no copy "
                         "would finish; give the cap in MB/s, e.g. 50")
    if max_mbps * 1e6 > MAX_NET_BYTES_PER_SEC:
        raise InputError(f"--max-mbps {max_mbps:g} is more than any broker's network "
                         f"({MAX_NET_BYTES_PER_SEC / 1e6:g} MB/s): check its unit (MB/s, "
                         "e.g. 50)")


def new_cap(max_mbps: float | None) -> int | None:
    """A resumed run's new cap from --max-mbps (bytes/s); None keeps the run's own."""
    _finite(("--max-mbps", max_mbps))
    if max_mbps is None:
        return None
    check_mbps(max_mbps)
    return int(max_mbps * MB)


def _finite(*flags: tuple[str, float | None]) -> None:
    """NaN and infinity pass every `<` check; refuse them by name first."""
    for flag, value in flags:
        if value is not None and not math.isfinite(value):
            raise InputError(f"{flag} must be a finite number, got {value}")


def parse_finish_by(text: str, now: datetime) -> float:
    """--finish-by as clock seconds: an ISO 8601 date and time (without a zone: local time),
    or HH:MM, the next such local time after `now` (`now` is timezone-aware)."""
    clock = re.fullmatch(r"(\d{1,2}):(\d{2})", text.strip())
    if clock:
        hour, minute = int(clock[1]), int(clock[2])
        if hour > 23 or minute > 59:
            raise InputError(f"--finish-by {text!r}: not a time of day (HH:MM, 00:00-23:59)")
        at = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
        return (at if at > now else at + timedelta(days=1)).timestamp()
    try:
        at = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InputError(f"--finish-by {text!r}: give HH:MM or an ISO 8601 time such as "
                         "2026-11-23T05:00 or 2026-11-23T05:00+00:00") from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=now.tzinfo)
    if at <= now:
        raise InputError(f"--finish-by {text!r} is already past (now {now:%Y-%m-%d %H:%M %Z})")
    return at.timestamp()


AUTO_WINDOW = "auto"


def read_queries(rate_window: str, queries_file: Path | None) -> tuple[GateQueries, bool]:
    """The gate's PromQL templates from --queries (YAML, every key optional) and --rate-window;
    True when the window is still to be derived from Prometheus' scrape interval."""
    import yaml

    from executor.readings import GateQueries
    from topology.history import parse_duration

    values: dict[str, object] = {}
    if queries_file is not None:
        try:
            raw = yaml.safe_load(queries_file.read_text(encoding="utf-8"))
        except OSError as exc:
            raise InputError(f"cannot read --queries file {queries_file}: {exc.strerror}") from None
        except yaml.YAMLError as exc:
            raise InputError(f"--queries file {queries_file} is not valid YAML: "
                             f"{str(exc).splitlines()[0]}") from None
        if not isinstance(raw, dict):
            raise InputError(f"--queries file {queries_file} must be a mapping of query names "
                             "to PromQL templates")
        values = {str(k): v for k, v in raw.items()}
    queries = GateQueries.from_dict(values, f"--queries file {queries_file}")
    if rate_window.strip() != AUTO_WINDOW:
        parse_duration(rate_window, "--rate-window")
        return replace(queries, window=rate_window.strip()), False
    if "window" in values:
        parse_duration(str(values["window"]), f"--queries file {queries_file}: window")
        return queries, False
    return queries, True
