"""`rebalance sandbox ...`: a real local Kafka (KRaft) + Prometheus cluster for trying the tool.

Parsing and rendering only; the work is done by `sandbox.cluster`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from commands.render import console, err_console, say
from sandbox import cluster
from sandbox.config import DEFAULT_BASE_PORT
from sandbox.state import SandboxInfo, read_state, replaced_entries
from topology.errors import InputError

app = typer.Typer(help="Run a local Kafka + Prometheus sandbox (KRaft, brokers on racks).",
                  no_args_is_help=True)

DirOption = Annotated[
    Path | None,
    typer.Option("--dir", help="Sandbox dir (default: $REBALANCE_SANDBOX_DIR, else ./.sandbox)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


def _dir(value: Path | None) -> Path:
    return value if value is not None else cluster.default_dir()


def _progress(message: str) -> None:
    err_console.print(f"[dim]{escape(message)}...[/]", highlight=False)


def check_up_dir(sandbox_dir: Path, force: bool) -> None:
    """`up` needs a directory (made if missing); in one that is not a sandbox yet it would
    overwrite or delete what it names (logs/, broker-N/, prometheus.yml, ...): only with
    --force. Checked before anything is started, downloaded or written."""
    if sandbox_dir.exists() and not sandbox_dir.is_dir():
        raise InputError(f"--dir {sandbox_dir} is a file, not a directory; give a directory "
                         "for the sandbox (it is created if missing)")
    clash = replaced_entries(sandbox_dir)
    if clash and not force and read_state(sandbox_dir.resolve()) is None:
        shown = ", ".join(clash[:5]) + (f" and {len(clash) - 5} more" if len(clash) > 5 else "")
        raise InputError(f"--dir {sandbox_dir} is not a sandbox but holds {shown}, which `up` "
                         "would overwrite or delete; choose another --dir, or pass --force")


def _print_json(data: dict[str, Any]) -> None:
    typer.echo(json.dumps(data, indent=2, sort_keys=True))


def _brokers_table(info: SandboxInfo, alive: dict[str, bool] | None = None) -> Table:
    table = Table(title=escape(f"sandbox {info.dir}"))
    for column in ("broker", "rack", "address", "metrics", "pid"):
        table.add_column(column)
    if alive is not None:
        table.add_column("running")
    for b in info.brokers:
        row = [str(b.id), escape(b.rack), f"127.0.0.1:{b.port}",
               f"127.0.0.1:{b.metrics_port}", str(b.pid)]
        if alive is not None:
            row.append("yes" if alive.get(f"broker-{b.id}") else "[red]no[/]")
        table.add_row(*row)
    return table


@app.command()
def up(
    brokers: Annotated[int, typer.Option(help="Number of brokers.", min=1)] = 4,
    racks: Annotated[int, typer.Option(help="Number of racks (a, b, ...).", min=1)] = 2,
    base_port: Annotated[int, typer.Option(help="Prometheus port; others follow it.")] =
        DEFAULT_BASE_PORT,
    sandbox_dir: DirOption = None,
    as_json: JsonOption = False,
    force: Annotated[bool, typer.Option(
        "--force", help="Use a --dir that is not a sandbox although it holds files `up` "
        "overwrites or deletes (logs/, controller/, broker-N/, prometheus.yml, ...).")] = False,
) -> None:
    """Start the sandbox (or report the one already running in the dir)."""
    target = _dir(sandbox_dir)
    check_up_dir(target, force)
    result = cluster.up(target, brokers=brokers, racks=racks, base_port=base_port,
                        progress=_progress)
    info = result.info
    if as_json:
        _print_json({**info.summary(), "already_running": result.already_running})
        return
    verb = "already running" if result.already_running else "started"
    say(f"sandbox {verb} in {info.dir}")
    say(f"bootstrap servers: {info.bootstrap}")
    say(f"prometheus:        {info.prometheus_url}")


@app.command()
def down(sandbox_dir: DirOption = None) -> None:
    """Stop every process of the sandbox (brokers, controller, Prometheus)."""
    target = _dir(sandbox_dir)
    stopped = cluster.down(target)
    if stopped:
        say(f"stopped {', '.join(stopped)} ({target})")
    else:
        say(f"nothing running in {target}")


@app.command()
def status(sandbox_dir: DirOption = None, as_json: JsonOption = False) -> None:
    """Show the sandbox's addresses and whether each process runs; non-zero if degraded."""
    target = _dir(sandbox_dir)
    info = read_state(target.resolve())
    if info is None:
        if as_json:
            _print_json({"dir": str(target), "running": False})
        else:
            say(f"no sandbox in {target}")
        raise typer.Exit(1)
    alive = cluster.process_alive(info)
    healthy = all(alive.values())
    if as_json:
        _print_json({**info.summary(), "running": healthy, "processes": alive})
    else:
        console.print(_brokers_table(info, alive))
        say(f"bootstrap servers: {info.bootstrap}")
        say(f"prometheus:        {info.prometheus_url}")
        for name in ("controller", "prometheus"):
            console.print(f"{name}: {'running' if alive[name] else '[red]not running[/]'}")
    if not healthy:
        raise typer.Exit(1)


@app.command("add-broker")
def add_broker(
    rack: Annotated[str, typer.Option(help="Rack of the new broker.")],
    sandbox_dir: DirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Start one more broker (next id) on RACK; it joins with no replicas."""
    broker = cluster.add_broker(_dir(sandbox_dir), rack, progress=_progress)
    if as_json:
        _print_json({"id": broker.id, "rack": broker.rack, "port": broker.port,
                     "metrics_port": broker.metrics_port, "pid": broker.pid,
                     "address": f"127.0.0.1:{broker.port}"})
        return
    say(f"broker {broker.id} started on rack {broker.rack} at 127.0.0.1:{broker.port}")


@app.command("kill-broker")
def kill_broker(
    broker_id: Annotated[int, typer.Argument(metavar="ID", help="The broker to kill.")],
    sandbox_dir: DirOption = None,
) -> None:
    """Kill broker ID with SIGKILL, as a crash would.

    For watching how a run copes with a broker failure; `start-broker ID` brings it back on its
    own data.
    """
    cluster.kill_broker(_dir(sandbox_dir), broker_id)
    say(f"broker {broker_id} killed")


@app.command("start-broker")
def start_broker(
    broker_id: Annotated[int, typer.Argument(metavar="ID", help="The broker to start.")],
    sandbox_dir: DirOption = None,
) -> None:
    """Start broker ID again after `kill-broker` (a running broker is left as it is)."""
    broker = cluster.start_broker(_dir(sandbox_dir), broker_id, progress=_progress)
    say(f"broker {broker.id} running on rack {broker.rack} at 127.0.0.1:{broker.port}")
