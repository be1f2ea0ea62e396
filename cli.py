"""`rebalance`: the command-line entry point. Parses flags, calls the core, renders results.

Every user-facing failure is a RebalanceError; `main` is the one handler that maps it to a
one-line message and the error's exit code. Any other exception is a bug (or an input nothing
anticipated): one line and exit code 70, the traceback only with --debug or REBALANCE_DEBUG=1.
"""

from __future__ import annotations

import os
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from commands import auto_cmd, execute_cmd, history_cmd, plan_cmd, snapshot_cmd
from commands.render import console, err_console, note, spread_table, topology_table
from commands.sandbox_cmd import app as sandbox_app
from topology.capacities import read_capacities
from topology.errors import RebalanceError
from topology.snapshot import read_snapshot

UNEXPECTED_EXIT_CODE = 70  # EX_SOFTWARE (sysexits.h): an internal error, not the user's input
INTERRUPTED_EXIT_CODE = 130  # 128 + SIGINT, as shells report Ctrl-C

HELP = ("Plan and execute throttled partition rebalances for Apache Kafka.\n\n"
        "Typical loop: `snapshot` the cluster, `plan` a rebalance and review it, `execute` it "
        "under a replication throttle one partition at a time, and watch `status`.\n\n"
        """Exit codes (an error is one line on stderr; --debug adds the traceback):
  0    success
  1    `sandbox status`: no sandbox, or one of its processes is down
  2    bad input (a file, flag or output path); nothing written or changed
  3    Kafka unreachable or unusable
  4    Prometheus unreachable or without the series
  5    no valid plan: infeasible, or the plan fails validation
  6    the executor refused to start a run, or stopped it
  7    the sandbox could not be started, found or stopped
  70   unexpected internal error
  130  interrupted (Ctrl-C or SIGTERM)""")

app = typer.Typer(
    name="rebalance",
    help=HELP,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@dataclass
class GlobalOptions:
    """Options of `rebalance` itself, read by `main` after the command has ended."""

    debug: bool = False


OPTIONS = GlobalOptions()


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option(
        "--debug", help="On an error, also print the full traceback (or set REBALANCE_DEBUG=1).")
    ] = False,
) -> None:
    # No docstring: the group's help is HELP, given to typer.Typer above.
    OPTIONS.debug = debug


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
    for message in topology.notes:
        note(message)


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


def debugging() -> bool:
    """--debug, or REBALANCE_DEBUG set to anything but '', '0' or 'false'."""
    env = os.environ.get("REBALANCE_DEBUG", "").strip().lower()
    return OPTIONS.debug or env not in ("", "0", "false", "no")


def unexpected_message(exc: BaseException) -> str:
    """One line for an exception no handler anticipated: its type and first line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    detail = f": {lines[0]}" if lines else ""
    hint = "" if debugging() else "; rerun with --debug for the traceback"
    return (f"unexpected {type(exc).__name__}{detail} (an internal error or an input the tool "
            f"does not handle){hint}")


def report_error(message: str, exc: BaseException) -> None:
    """The error line first (as written, never read as markup), then the notes it carries."""
    if debugging():
        traceback.print_exception(exc)
    err_console.print(Text.assemble(("error:", "bold red"), " ", message), highlight=False,
                      soft_wrap=True)
    for extra in getattr(exc, "__notes__", ()):
        err_console.print(Text(str(extra)), highlight=False, soft_wrap=True)


def main() -> None:
    """Console-script entry and the one error handler: RebalanceErrors exit with their code,
    anything else with UNEXPECTED_EXIT_CODE; both as one line (see HELP for the codes).

    Usage errors (bad flags) are reported by typer itself with exit code 2.
    """
    try:
        app()
    except RebalanceError as exc:
        report_error(str(exc), exc)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err_console.print("interrupted", markup=False, highlight=False)
        sys.exit(INTERRUPTED_EXIT_CODE)
    except Exception as exc:  # the last resort: no stack trace for a user
        report_error(unexpected_message(exc), exc)
        sys.exit(UNEXPECTED_EXIT_CODE)


if __name__ == "__main__":
    main()
