"""`rebalance sandbox ...`: a real local Kafka (KRaft) + Prometheus cluster for trying the tool.

Parsing and rendering only; the work is done by `sandbox.cluster`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from commands.render import console, err_console
from sandbox import cluster
from sandbox.config import DEFAULT_BASE_PORT
from sandbox.state import SandboxInfo, read_state

app = typer.Typer(help="Run a local Kafka + Prometheus sandbox (KRaft, brokers on racks).",
                  no_args_is_help=True)

DirOption = Annotated[
    Path | None,
    typer.Option("--dir", help="Sandbox dir [default: $REBALANCE_SANDBOX_DIR or ./.sandbox]."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


def _dir(value: Path | None) -> Path:
    return value if value is not None else cluster.default_dir()


def _progress(message: str) -> None:
    err_console.print(f"[dim]{message}...[/]", highlight=False)


def _print_json(data: dict[str, Any]) -> None:
    typer.echo(json.dumps(data, indent=2, sort_keys=True))


def _brokers_table(info: SandboxInfo, alive: dict[str, bool] | None = None) -> Table:
    table = Table(title=f"sandbox {info.dir}")
    for column in ("broker", "rack", "address", "metrics", "pid"):
        table.add_column(column)
    if alive is not None:
        table.add_column("running")
    for b in info.brokers:
        row = [str(b.id), b.rack, f"127.0.0.1:{b.port}", f"127.0.0.1:{b.metrics_port}", str(b.pid)]
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
) -> None:
    """Start the sandbox (or report the one already running in the dir)."""
    result = cluster.up(_dir(sandbox_dir), brokers=brokers, racks=racks, base_port=base_port,
                        progress=_progress)
    info = result.info
    if as_json:
        _print_json({**info.summary(), "already_running": result.already_running})
        return
    verb = "already running" if result.already_running else "started"
    console.print(f"sandbox {verb} in {info.dir}")
    console.print(f"bootstrap servers: {info.bootstrap}", highlight=False)
    console.print(f"prometheus:        {info.prometheus_url}", highlight=False)


@app.command()
def down(sandbox_dir: DirOption = None) -> None:
    """Stop every process of the sandbox (brokers, controller, Prometheus)."""
    target = _dir(sandbox_dir)
    stopped = cluster.down(target)
    if stopped:
        console.print(f"stopped {', '.join(stopped)} ({target})")
    else:
        console.print(f"nothing running in {target}")


@app.command()
def status(sandbox_dir: DirOption = None, as_json: JsonOption = False) -> None:
    """Show the sandbox's addresses and whether each process runs; non-zero if degraded."""
    target = _dir(sandbox_dir)
    info = read_state(target.resolve())
    if info is None:
        if as_json:
            _print_json({"dir": str(target), "running": False})
        else:
            console.print(f"no sandbox in {target}")
        raise typer.Exit(1)
    alive = cluster.process_alive(info)
    healthy = all(alive.values())
    if as_json:
        _print_json({**info.summary(), "running": healthy, "processes": alive})
    else:
        console.print(_brokers_table(info, alive))
        console.print(f"bootstrap servers: {info.bootstrap}", highlight=False)
        console.print(f"prometheus:        {info.prometheus_url}", highlight=False)
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
    console.print(f"broker {broker.id} started on rack {broker.rack} at 127.0.0.1:{broker.port}",
                  highlight=False)


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
    console.print(f"broker {broker_id} killed", highlight=False)


@app.command("start-broker")
def start_broker(
    broker_id: Annotated[int, typer.Argument(metavar="ID", help="The broker to start.")],
    sandbox_dir: DirOption = None,
) -> None:
    """Start broker ID again after `kill-broker` (a running broker is left as it is)."""
    broker = cluster.start_broker(_dir(sandbox_dir), broker_id, progress=_progress)
    console.print(f"broker {broker.id} running on rack {broker.rack} at "
                  f"127.0.0.1:{broker.port}", highlight=False)
