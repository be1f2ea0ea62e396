"""`rebalance`: the command-line entry point. Parses flags, calls the core, renders results.

Every user-facing failure is a RebalanceError; `main` maps it to a one-line message and the
error's exit code, with no stack trace.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from commands import auto_cmd, execute_cmd, history_cmd, plan_cmd, snapshot_cmd
from commands.render import console, err_console, spread_table, topology_table
from commands.sandbox_cmd import app as sandbox_app
from topology.capacities import read_capacities
from topology.errors import RebalanceError
from topology.snapshot import read_snapshot

app = typer.Typer(
    name="rebalance",
    help="Plan and execute throttled partition rebalances for Apache Kafka.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _root() -> None:
    """Plan and execute throttled partition rebalances for Apache Kafka.

    Typical loop: `snapshot` the cluster, `plan` a rebalance and review it, `execute` it under a
    replication throttle one partition at a time, and watch `status`.
    """


@app.command()
def show(
    snapshot: Annotated[Path, typer.Argument(help="Topology snapshot file (JSON v1).")],
    capacities: Annotated[
        Path | None, typer.Option(help="Capacities YAML; overrides the snapshot's capacities.")
    ] = None,
) -> None:
    """Summarize a snapshot: brokers by rack, utilization per resource, and the spread."""
    caps = read_capacities(capacities) if capacities else None
    topology = read_snapshot(snapshot, caps)
    console.print(topology_table(topology, title=f"{snapshot} ({len(topology.partitions)} "
                                 f"partitions, {len(topology.brokers)} brokers)"))
    console.print(spread_table(topology))
    for note in topology.notes:
        console.print(f"[yellow]note:[/] {note}")


app.command(name="plan")(plan_cmd.plan)
app.command(name="diff")(plan_cmd.diff)
app.command(name="snapshot")(snapshot_cmd.snapshot)
app.command(name="execute")(execute_cmd.execute)
app.command(name="status")(execute_cmd.status)
app.command(name="cancel")(execute_cmd.cancel)
app.command(name="resume")(execute_cmd.resume)
app.command(name="clear-throttles")(execute_cmd.clear_throttles)
app.command(name="weights")(history_cmd.weights)
app.command(name="auto")(auto_cmd.auto)
app.add_typer(history_cmd.history_app, name="history")


app.add_typer(sandbox_app, name="sandbox")


def main() -> None:
    """Console-script entry: run the app and turn RebalanceErrors into exit codes.

    Usage errors (bad flags) are reported by typer itself with exit code 2.
    """
    try:
        app()
    except RebalanceError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
