"""Wiring for the execute family of commands: the journal's path, the executor's own /metrics,
and one ExecutorConfig from flags or from a journal's header. (The real ports, the run lease
and the live cluster are `usecases.cluster`.)"""

from __future__ import annotations

import fcntl
import math
import os
import re
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from executor.config import Event, ExecutorConfig, Ports, Reporter
from executor.gates import GatePolicy
from topology.capacities import read_capacities
from topology.errors import InputError

if TYPE_CHECKING:
    from executor.journal import Record
    from executor.readings import GateQueries

MB = 1_000_000
JOURNAL_SUFFIX = ".journal"

def journal_for(plan: Path | None, journal: Path | None) -> Path:
    """The journal path: --journal, else next to the plan, else the only one in the cwd."""
    if journal is not None:
        return journal
    if plan is not None:
        return plan.with_name(plan.name + JOURNAL_SUFFIX)
    found = sorted(Path.cwd().glob("*" + JOURNAL_SUFFIX))
    if len(found) == 1:
        return found[0]
    if not found:
        raise InputError("no journal given and no *.journal file here: pass --journal PATH "
                         "or the plan file")
    raise InputError("several journals here (" + ", ".join(p.name for p in found)
                     + "): pass --journal PATH")


def check_new_journal(path: Path) -> None:
    """A new run's journal must not exist yet and its directory must (checked before the
    cluster is contacted; creating it later refuses the same way)."""
    from topology.errors import ExecutionError

    if path.exists():
        raise ExecutionError(f"journal {path} already exists: resume or cancel that run, "
                             "or choose another --journal path")
    if not path.parent.is_dir():
        raise InputError(f"--journal {path}: the directory {path.parent} does not exist")


def journal_in_use(path: Path) -> bool:
    """True when another process (a running executor) holds the journal's lock."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases a lock taken here
    return False


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


def build_config(max_mbps: float, concurrency: int, cooldown: float, adaptive: bool,
                 elect_leaders: bool, allow_under_replicated: bool, gate_margin: float,
                 gate_floor_mbps: float, gate_samples: int, gate_timeout: float | None,
                 produce_p99_max_ms: float | None, poll_seconds: float,
                 capacities: Mapping[int, Any] | None = None,
                 quota_window: float = 0.0, final_gate: bool = False) -> ExecutorConfig:
    """One validated config from the flags (rates in MB/s -> bytes/s)."""
    _finite(("--max-mbps", max_mbps), ("--cooldown", cooldown), ("--gate-margin", gate_margin),
            ("--gate-floor-mbps", gate_floor_mbps), ("--gate-timeout", gate_timeout),
            ("--produce-p99-max-ms", produce_p99_max_ms), ("--poll-seconds", poll_seconds),
            ("--quota-window", quota_window))
    if max_mbps <= 0:
        raise InputError(f"--max-mbps must be positive, got {max_mbps}")
    gate = GatePolicy(gate_margin, gate_floor_mbps * MB, gate_samples, produce_p99_max_ms)
    floor = min(MB, int(max_mbps * MB))
    return ExecutorConfig(int(max_mbps * MB), concurrency, cooldown, poll_seconds,
                          elect_leaders=elect_leaders, adaptive=adaptive,
                          adaptive_floor_bytes_per_sec=floor, capacities=capacities or {},
                          gate=gate, allow_under_replicated=allow_under_replicated,
                          gate_timeout_seconds=gate_timeout, quota_window_seconds=quota_window,
                          final_gate=final_gate)


def _finite(*flags: tuple[str, float | None]) -> None:
    """NaN and infinity pass every `<` check; refuse them by name first."""
    for flag, value in flags:
        if value is not None and not math.isfinite(value):
            raise InputError(f"{flag} must be a finite number, got {value}")


def _settings(records: list[Record]) -> dict[str, Any]:
    settings = records[0].get("settings", {}) if records else {}
    return dict(settings) if isinstance(settings, dict) else {}


def journal_config(records: list[Record], max_mbps: float | None,
                   poll_seconds: float) -> ExecutorConfig:
    """The run's own settings from the journal header (--max-mbps may override the cap)."""
    _finite(("--max-mbps", max_mbps))
    try:
        return _journal_config(_settings(records), max_mbps, poll_seconds)
    except (TypeError, ValueError) as exc:
        from topology.errors import ExecutionError

        raise ExecutionError(f"journal: the run header's settings are malformed ({exc}); the "
                             "journal is corrupt or edited") from None


def _journal_config(s: Mapping[str, Any], max_mbps: float | None,
                    poll_seconds: float) -> ExecutorConfig:
    cap = max_mbps * MB if max_mbps is not None else float(s.get("max_bytes_per_sec", 0))
    if cap <= 0:
        raise InputError("the journal records no throttle cap: pass --max-mbps")
    gate = GatePolicy(float(s.get("gate_margin", 0.10)),
                      float(s.get("gate_floor_bytes_per_sec", MB)),
                      int(s.get("gate_consecutive", 3)),
                      _optional_float(s.get("produce_p99_max_ms")))
    return ExecutorConfig(int(cap), int(s.get("concurrency", 1)),
                          float(s.get("cooldown_seconds", 0.0)), poll_seconds,
                          elect_leaders=bool(s.get("elect_leaders", True)),
                          adaptive=False, gate=gate,
                          gate_timeout_seconds=_optional_float(s.get("gate_timeout_seconds")),
                          quota_window_seconds=float(s.get("quota_window_seconds", 0.0)),
                          final_gate=bool(s.get("final_gate", False)),
                          queries=_journal_queries(s.get("queries")))


def _journal_queries(stored: Any) -> GateQueries:
    from executor.readings import GateQueries

    if not isinstance(stored, dict):
        return GateQueries()  # a journal from before the queries were kept
    return GateQueries.from_dict(stored, "the journal's gate queries")


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


def journal_records(path: Path) -> list[Record]:
    """A journal's intact records, read without locking it (a run may hold it): for `status`
    and the summary at the end of a run. Replay them to check them."""
    from topology.errors import ExecutionError

    if not path.exists():
        raise ExecutionError(f"no journal at {path}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ExecutionError(f"cannot read the journal {path}: {exc.strerror}; give the "
                             "journal file (--journal PATH)") from None
    from executor.journal import parse_lines

    return parse_lines(data, str(path))[0]


def journal_pace(records: list[Record]) -> tuple[float | None, float]:
    """The run's cap (bytes/s per broker; None if the header has none) and the wait after each
    move that another follows (the cooldown or the quota window, whichever is longer)."""
    settings = _settings(records)

    def number(key: str) -> float:
        value = settings.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return 0.0
        return float(value) if math.isfinite(value) and value > 0 else 0.0

    cap = number("max_bytes_per_sec")
    return (cap or None), max(number("cooldown_seconds"), number("quota_window_seconds"))


def was_adaptive(records: list[Record]) -> bool:
    """True when the journaled run used --adaptive."""
    return bool(_settings(records).get("adaptive", False))


def adaptive_config(config: ExecutorConfig, ports: Ports, capacities: Path) -> ExecutorConfig:
    """`config` with --adaptive rates from the capacities file, resolved per live broker."""
    from dataclasses import replace

    caps = read_capacities(capacities)
    per_broker = {b.id: caps.for_broker(b.id, b.rack) for b in ports.admin.brokers()}
    floor = min(MB, config.max_bytes_per_sec)
    return replace(config, adaptive=True, capacities=per_broker,
                   adaptive_floor_bytes_per_sec=floor)


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


def with_scrape_window(queries: GateQueries, prometheus: str) -> GateQueries:
    """`queries` with the rate window derived from the Prometheus targets' scrape interval."""
    from executor.readings import window_for_scrape_interval
    from topology.prom_source import PrometheusMetrics

    interval = PrometheusMetrics(prometheus).scrape_interval_seconds()
    return replace(queries, window=window_for_scrape_interval(interval))
