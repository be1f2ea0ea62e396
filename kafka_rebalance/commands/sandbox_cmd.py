"""`rebalance sandbox ...`: a real local Kafka (KRaft) + Prometheus cluster for trying the tool.

Parsing and rendering only; the work is done by `kafka_rebalance.sandbox.cluster`.
"""

from __future__ import annotations

import json
import shlex
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from kafka_rebalance.commands.render import console, err_console, note, say
from kafka_rebalance.core.errors import InputError, SandboxError
from kafka_rebalance.sandbox import cluster, teardown
from kafka_rebalance.sandbox.config import DEFAULT_BASE_PORT, METRIC_NAMES
from kafka_rebalance.sandbox.links import LOOPBACK
from kafka_rebalance.sandbox.ports import ephemeral_overlap
from kafka_rebalance.sandbox.state import (
    CAPACITIES_FILE,
    SandboxInfo,
    check_up_dir,
    next_broker_id,
    read_state,
)
from topology.units import size_text

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


def _dir_flag(sandbox_dir: Path) -> list[str]:
    """`--dir D` for commands printed for the user, unless D is where they look by default."""
    if sandbox_dir.resolve() == cluster.default_dir().resolve():
        return []
    return ["--dir", str(sandbox_dir)]


def next_commands(info: SandboxInfo, sandbox_dir: Path) -> list[tuple[str, str]]:
    """The README's loop for this sandbox, as (command line, comment) pairs a user can paste:
    its own ports, --dir and capacities file, the next broker id and the emptiest rack."""
    dir_flag = _dir_flag(sandbox_dir)
    racks = Counter(b.rack for b in info.brokers)
    rack = min(racks, key=lambda name: (racks[name], name))
    new_id = next_broker_id(info)
    servers = ["--bootstrap", info.bootstrap, "--prometheus", info.prometheus_url]
    lines = [
        (["sandbox", "produce", "orders", "--mb", "100", "--partitions", "12", *dir_flag],
         "a topic with 100 MB of data"),
        (["sandbox", "add-broker", "--rack", rack, *dir_flag],
         f"broker {new_id} joins, holding nothing"),
        (["snapshot", *servers, "--capacities", str(info.dir / CAPACITIES_FILE),
          "--out", "cluster.json"], ""),
        (["plan", "--snapshot", "cluster.json", "--add-broker", str(new_id), "--out",
          "plan.json"], "review the plan"),
        (["execute", "plan.json", *servers, "--max-mbps", "5"], ""),
        (["status", "plan.json"], "from another terminal, any time"),
        (["sandbox", "down", *dir_flag], "--purge also deletes the sandbox's data"),
    ]
    return [(shlex.join(["rebalance", *words]), comment) for words, comment in lines]


def _print_json(data: dict[str, Any]) -> None:
    typer.echo(json.dumps(data, indent=2, sort_keys=True))


def link_line(info: SandboxInfo) -> str | None:
    """How the brokers are connected, for a linked sandbox (None on loopback)."""
    link = info.link
    if link is None:
        return None
    return (f"links:             {link.mbps} Mbit/s each way per broker (namespaces on bridge "
            f"{link.bridge}, {link.subnet})")


def _say_addresses(info: SandboxInfo) -> None:
    say(f"bootstrap servers: {info.bootstrap}")
    say(f"prometheus:        {info.prometheus_url}")
    line = link_line(info)
    if line is not None:
        say(line)


def _brokers_table(info: SandboxInfo, alive: dict[str, bool] | None = None) -> Table:
    table = Table(title=escape(f"sandbox {info.dir}"))
    for column in ("broker", "rack", "address", "metrics", "pid"):
        table.add_column(column)
    if alive is not None:
        table.add_column("running")
    for b in info.brokers:
        host = info.broker_host(b.id)
        row = [str(b.id), escape(b.rack), f"{host}:{b.port}",
               f"{host}:{b.metrics_port}", str(b.pid)]
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
    link_mbps: Annotated[int | None, typer.Option(
        "--link-mbps", min=1, help="Put each broker in a network namespace of its own behind "
        "a link shaped to this many Mbit/s each way (needs root, `ip` and `tc`); default: "
        "all on loopback.")] = None,
    tiered_storage: Annotated[bool, typer.Option(
        "--tiered-storage", help="Enable tiered storage: topics created with "
        "remote.storage.enable=true keep their older segments in DIR/remote-storage (Kafka's "
        "file-system remote storage manager), and only the newer ones on the brokers' "
        "disks.")] = False,
    log_dirs: Annotated[int, typer.Option(
        "--log-dirs", min=1, max=8, help="Log dirs per broker (broker-N/data, data-2, ...): "
        "more than one makes JBOD brokers, whose replicas a plan can also move between "
        "dirs.")] = 1,
    metric_names: Annotated[str, typer.Option(
        "--metric-names", help="How the brokers' exporter names series: 'sandbox' (the names "
        "the default queries use) or 'strimzi' (kafka_server_brokertopicmetrics_..., labelled "
        "broker, as Strimzi's rules name them; try `execute --queries "
        "dashboards/queries-strimzi.yaml` on it).")] = "sandbox",
) -> None:
    """Start the sandbox (or report the one already running in the dir)."""
    if metric_names not in METRIC_NAMES:
        raise InputError(f"--metric-names {metric_names!r}: expected one of "
                         f"{', '.join(METRIC_NAMES)}")
    target = _dir(sandbox_dir)
    check_up_dir(target, force)
    result = cluster.up(target, brokers=brokers, racks=racks, base_port=base_port,
                        progress=_progress, link_mbps=link_mbps, tiered_storage=tiered_storage,
                        log_dirs=log_dirs, metric_names=metric_names)
    info = result.info
    if result.already_running and link_mbps is not None and info.link_mbps != link_mbps:
        running_as = f"{info.link_mbps} Mbit/s links" if info.link_mbps else "loopback"
        note(f"the sandbox in {info.dir} already runs on {running_as}: --link-mbps "
             f"{link_mbps} is not applied (`rebalance sandbox down` first to change it)")
    overlap = ephemeral_overlap(info)
    if overlap:
        note(overlap)
    steps = next_commands(info, target)
    if as_json:
        _print_json({**info.summary(), "already_running": result.already_running,
                     "next_commands": [command for command, _ in steps]})
        return
    verb = "already running" if result.already_running else "started"
    say(f"sandbox {verb} in {info.dir}")
    _say_addresses(info)
    say("")
    say("next, the whole loop (paste as they are):")
    for command, comment in steps:
        say(f"  {command}  # {comment}" if comment else f"  {command}")


def no_sandbox_message(target: Path) -> str:
    """Why `down` found nothing: the dir it looked in, where sandboxes are looked for, and the
    sandboxes that do run on this machine."""
    message = (f"no sandbox in {target}: no sandbox was started there and no sandbox process "
               f"runs from it. Sandboxes are looked for in --dir, else $REBALANCE_SANDBOX_DIR, "
               f"else ./.sandbox (here: {cluster.default_dir()})")
    running = teardown.running_elsewhere(exclude=target)
    if running:
        shown = ", ".join(str(d) for d in running[:3])
        message += f"; running: {shown}" + (f" and {len(running) - 3} more"
                                             if len(running) > 3 else "")
    return message


@app.command()
def down(
    sandbox_dir: DirOption = None,
    purge: Annotated[bool, typer.Option(
        "--purge", help="Also delete the sandbox's data: broker and controller logs, "
        "Prometheus' TSDB, its configs and state (only what `up` wrote in the dir).")] = False,
) -> None:
    """Stop every process of the sandbox (brokers, controller, Prometheus).

    A dir that holds no sandbox is an error (exit 7): a mistyped --dir would otherwise leave
    the real sandbox running unnoticed.
    """
    target = _dir(sandbox_dir)
    if not teardown.known(target):
        raise SandboxError(no_sandbox_message(target))
    result = teardown.take_down(target, purge_data=purge)
    if result.stopped:
        say(f"stopped {', '.join(result.stopped)} ({target})")
    else:
        say(f"nothing running in {target} (the sandbox there was stopped already)")
    if result.purged is not None:
        purged = result.purged
        where = f"{target} (removed)" if purged.dir_removed else str(target)
        say(f"deleted {size_text(purged.freed_bytes, compact=True)} of sandbox data in {where}: "
            f"{', '.join(purged.removed) or 'nothing left to delete'}")


@app.command()
def produce(
    topic: Annotated[str, typer.Argument(metavar="TOPIC", help="Topic to fill (created if "
                                         "missing).")],
    mb: Annotated[int, typer.Option("--mb", help="How much data: MB (10^6 bytes) of random "
                                    "bytes, spread evenly over the partitions.")],
    partitions: Annotated[int | None, typer.Option(
        help="Partitions of a topic created here (default 6).")] = None,
    replication_factor: Annotated[int | None, typer.Option(
        help="Replication factor of a topic created here (default 3, at most the brokers)."
    )] = None,
    sandbox_dir: DirOption = None,
) -> None:
    """Create TOPIC on the sandbox (if missing) and produce --mb MB to it (acks=all)."""
    from kafka_rebalance.sandbox.produce import ProduceRequest, check_request
    from kafka_rebalance.sandbox.produce import produce as produce_data

    request = ProduceRequest(topic, mb, partitions, replication_factor)
    check_request(request)
    info = cluster.running(_dir(sandbox_dir), brokers_may_be_down=True)

    def progress(sent: int, total: int) -> None:
        _progress(f"produced {size_text(sent, compact=True)} of {size_text(total, compact=True)}")

    result = produce_data(info, request, progress)
    for message in result.notes:
        note(message)
    created = "created, " if result.created else ""
    say(f"produced {size_text(result.bytes_sent, compact=True)} in {result.messages} messages to "
        f"{result.topic} ({created}{result.partitions} partitions, replication factor "
        f"{result.replication_factor}) in {result.seconds:.1f}s")


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
        _say_addresses(info)
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
    target = _dir(sandbox_dir)
    broker = cluster.add_broker(target, rack, progress=_progress)
    host = _broker_host(target, broker.id)
    if as_json:
        _print_json({"id": broker.id, "rack": broker.rack, "port": broker.port,
                     "metrics_port": broker.metrics_port, "pid": broker.pid,
                     "address": f"{host}:{broker.port}"})
        return
    say(f"broker {broker.id} started on rack {broker.rack} at {host}:{broker.port}")


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
    target = _dir(sandbox_dir)
    broker = cluster.start_broker(target, broker_id, progress=_progress)
    say(f"broker {broker.id} running on rack {broker.rack} at "
        f"{_broker_host(target, broker.id)}:{broker.port}")


def _broker_host(sandbox_dir: Path, broker_id: int) -> str:
    """Where a broker of the sandbox listens, as its state file records it."""
    info = read_state(sandbox_dir.resolve())
    return info.broker_host(broker_id) if info is not None else LOOPBACK
