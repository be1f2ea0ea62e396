"""Snapshot a live cluster into a file: brokers and racks, replicas, sizes and (with
Prometheus) per-partition byte rates, with where it came from and no credentials in it.

The Kafka and Prometheus clients are imported where they are used, so that `rebalance`
starts fast for the other commands.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from kafka_rebalance.core.errors import InputError
from topology.capacities import read_capacities
from topology.documents import write_json_atomic
from topology.promql import DEFAULT_RATE_WINDOW
from topology.security import load_security

if TYPE_CHECKING:
    from topology.live import LiveSnapshot

DEFAULT_TIMEOUT_S = 10.0  # as topology.kafka_admin.DEFAULT_TIMEOUT_S (not imported: heavy)


@dataclass(frozen=True, kw_only=True)
class SnapshotSettings:
    """Where to read the cluster and where to write its snapshot."""

    bootstrap: str
    out: Path
    prometheus: str | None = None
    capacities: Path | None = None
    command_config: Path | None = None
    rate_window: str = DEFAULT_RATE_WINDOW
    timeout_s: float = DEFAULT_TIMEOUT_S


def take_snapshot(settings: SnapshotSettings, environ: Mapping[str, str]) -> LiveSnapshot:
    """Read the cluster (and Prometheus), write the snapshot file atomically, return what
    was read. `environ` carries the REBALANCE_* security overrides."""
    from topology.kafka_admin import KafkaClusterAdmin
    from topology.live import read_live_topology
    from topology.prom_source import PrometheusMetrics

    security = load_security(settings.command_config, environ)
    caps = read_capacities(settings.capacities) if settings.capacities is not None else None
    metrics = PrometheusMetrics(settings.prometheus) if settings.prometheus else None
    admin = KafkaClusterAdmin(settings.bootstrap, security, timeout_s=settings.timeout_s)
    try:
        live = read_live_topology(admin, metrics, caps, settings.rate_window)
    finally:
        admin.close()
    document = dict(live.document)
    document["source"] = source(settings.bootstrap, settings.prometheus, settings.rate_window)
    try:
        write_json_atomic(settings.out, document)
    except OSError as exc:
        raise InputError(f"cannot write snapshot {settings.out}: {exc.strerror or exc}") from None
    return live


def source(bootstrap: str, prometheus: str | None, rate_window: str) -> dict[str, Any]:
    """Where the snapshot came from (no credentials: user info is stripped from the URL)."""
    return {"bootstrap": bootstrap, "prometheus": _without_userinfo(prometheus),
            "rate_window": rate_window if prometheus else None,
            "taken_at": datetime.now(UTC).isoformat(timespec="seconds")}


def _without_userinfo(url: str | None) -> str | None:
    if url is None:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
