"""`rebalance snapshot`: read a live cluster (and Prometheus) into a snapshot v1 file.

Flags become kafka_rebalance.usecases.snapshot's settings; this module renders one summary line.
Security settings come from `--command-config` and the REBALANCE_* environment; they are never
written to the snapshot or printed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kafka_rebalance.commands.render import FORCE_HELP, say
from kafka_rebalance.files.outputs import check_output, snapshot_output
from kafka_rebalance.usecases.snapshot import DEFAULT_TIMEOUT_S, SnapshotSettings, take_snapshot
from topology.promql import DEFAULT_RATE_WINDOW
from topology.units import rate_text, size_text

if TYPE_CHECKING:
    from topology.live import LiveSnapshot


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
        help="PromQL range of the per-partition rates the planner balances, e.g. 1m or 5m "
             "(longer smooths bursts). Not execute's --rate-window: its gate watches a short "
             "window, to see a copy's traffic fade within seconds.")] = DEFAULT_RATE_WINDOW,
    timeout: Annotated[float, typer.Option(
        help="Seconds to wait for each Kafka request.", min=1.0)] = DEFAULT_TIMEOUT_S,
    force: Annotated[bool, typer.Option("--force", help=FORCE_HELP.format(what="snapshot"))
                     ] = False,
) -> None:
    """Snapshot a live cluster: brokers and racks, replicas, sizes and (optionally) rates.

    An existing --out file is replaced only if it is a snapshot (or with --force).
    """
    check_output(snapshot_output(out), {"--capacities": capacities,
                                        "--command-config": command_config}, force)
    live = take_snapshot(SnapshotSettings(
        bootstrap=bootstrap, out=out, prometheus=prometheus, capacities=capacities,
        command_config=command_config, rate_window=rate_window, timeout_s=timeout), os.environ)
    say(summary_line(out, live))


def summary_line(out: Path, live: LiveSnapshot) -> str:
    """One line: where it went, what it holds, and how many notes to read."""
    notes = f"; {len(live.notes)} note(s) in the file" if live.notes else ""
    return (f"wrote {out}: {live.broker_count} brokers, {live.topic_count} topics, "
            f"{live.partition_count} partitions, {size_text(live.total_size_bytes, compact=True)}, "
            f"bytes in {rate_text(live.total_bytes_in_per_sec, compact=True)}{notes}")
