"""`rebalance snapshot`: read a live cluster (and Prometheus) into a snapshot v1 file.

The command wires adapters together and renders one summary line; the reading itself is
`topology.live.read_live_topology`. Security settings come from `--command-config` and the
REBALANCE_* environment; they are never written to the snapshot or printed.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import urlsplit, urlunsplit

import typer

from commands.outputs import FORCE_HELP, check_output, snapshot_output
from commands.render import say
from core.errors import InputError
from report.text import human_bytes
from topology.capacities import read_capacities
from topology.promql import DEFAULT_RATE_WINDOW
from topology.security import load_security
from topology.snapshot import write_json_atomic

if TYPE_CHECKING:
    from topology.live import LiveSnapshot

DEFAULT_TIMEOUT_S = 10.0  # as topology.kafka_admin.DEFAULT_TIMEOUT_S (not imported: heavy)


def snapshot(
    bootstrap: Annotated[str, typer.Option(
        help="Kafka bootstrap servers, HOST:PORT[,HOST:PORT...].")],
    out: Annotated[Path, typer.Option(help="Snapshot file to write (JSON v1).")],
    prometheus: Annotated[str | None, typer.Option(
        help="Prometheus URL; per-partition byte rates come from it when given.")] = None,
    capacities: Annotated[Path | None, typer.Option(
        help="Capacities YAML; without it brokers carry no capacity in the snapshot.")] = None,
    command_config: Annotated[Path | None, typer.Option(
        help="Kafka client security settings (.properties or .yaml); REBALANCE_* env "
             "variables override it.")] = None,
    rate_window: Annotated[str, typer.Option(
        help="PromQL range for rate(), e.g. 1m or 5m.")] = DEFAULT_RATE_WINDOW,
    timeout: Annotated[float, typer.Option(
        help="Seconds to wait for each Kafka request.", min=1.0)] = DEFAULT_TIMEOUT_S,
    force: Annotated[bool, typer.Option("--force", help=FORCE_HELP.format(what="snapshot"))
                     ] = False,
) -> None:
    """Snapshot a live cluster: brokers and racks, replicas, sizes and (optionally) rates.

    An existing --out file is replaced only if it is a snapshot (or with --force).
    """
    # The client libraries load here, on use, so other commands start quickly.
    from topology.kafka_admin import KafkaClusterAdmin
    from topology.live import read_live_topology
    from topology.prom_source import PrometheusMetrics

    check_output(snapshot_output(out), {"--capacities": capacities,
                                        "--command-config": command_config}, force)
    security = load_security(command_config, os.environ)
    caps = read_capacities(capacities) if capacities is not None else None
    metrics = PrometheusMetrics(prometheus) if prometheus else None
    admin = KafkaClusterAdmin(bootstrap, security, timeout_s=timeout)
    try:
        live = read_live_topology(admin, metrics, caps, rate_window)
    finally:
        admin.close()
    document = dict(live.document)
    document["source"] = _source(bootstrap, prometheus, rate_window)
    try:
        write_json_atomic(out, document)
    except OSError as exc:
        raise InputError(f"cannot write snapshot {out}: {exc.strerror or exc}") from None
    say(summary_line(out, live))


def summary_line(out: Path, live: LiveSnapshot) -> str:
    """One line: where it went, what it holds, and how many notes to read."""
    notes = f"; {len(live.notes)} note(s) in the file" if live.notes else ""
    return (f"wrote {out}: {live.broker_count} brokers, {live.topic_count} topics, "
            f"{live.partition_count} partitions, {human_bytes(live.total_size_bytes)}, "
            f"bytes in {human_bytes(live.total_bytes_in_per_sec, 'B/s')}{notes}")


def _source(bootstrap: str, prometheus: str | None, rate_window: str) -> dict[str, Any]:
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
