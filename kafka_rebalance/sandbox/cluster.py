"""Start, inspect, grow and stop the local sandbox: a KRaft controller, N brokers, Prometheus.

Configuration text comes from `kafka_rebalance.sandbox.config` (pure); this module writes it to the
sandbox dir, formats storage, spawns the processes, records them in `state.json` and waits for
readiness. With `link_mbps` each broker runs in a network namespace of its own behind a shaped link
(`kafka_rebalance.sandbox.links`, made by `kafka_rebalance.sandbox.network`); the controller listens
on the bridge and Prometheus stays on loopback.
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import subprocess
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from kafka_rebalance.core.errors import SandboxError
from kafka_rebalance.sandbox import classdata, config, links, network, process, ready
from kafka_rebalance.sandbox.jars import JMX_EXPORTER_JAR, ensure_jars, require_tool
from kafka_rebalance.sandbox.ports import check_ports, port_roles
from kafka_rebalance.sandbox.ports import (
    free_base_port as free_base_port,  # the tests' and benchmarks' name
)
from kafka_rebalance.sandbox.ports import ports_free as ports_free
from kafka_rebalance.sandbox.state import (
    BROKER_DIR_PREFIX,
    CAPACITIES_FILE,
    REMOTE_DIR,
    RESET_DIRS,
    BrokerInfo,
    SandboxInfo,
    next_broker_id,
    read_state,
    state_path,
    write_marker,
    write_state,
)

# Generous: on a loaded 2-core machine a broker JVM can need minutes to register.
READY_TIMEOUT_S = float(os.environ.get("REBALANCE_SANDBOX_READY_TIMEOUT", "300"))
FORMAT_TIMEOUT_S = 120.0
BROKER_STOP_GRACE_S = 30.0
OTHER_STOP_GRACE_S = 10.0


@dataclass(frozen=True)
class UpResult:
    """What `up` did: the sandbox, and whether it was already running (nothing restarted)."""

    info: SandboxInfo
    already_running: bool


def default_dir() -> Path:
    """`$REBALANCE_SANDBOX_DIR`, else `.sandbox/` under the current directory."""
    env = os.environ.get("REBALANCE_SANDBOX_DIR")
    return Path(env) if env else Path.cwd() / ".sandbox"


def _marker(sandbox_dir: Path) -> str:
    return f"{sandbox_dir.resolve()}/"


def new_cluster_id() -> str:
    """A random KRaft cluster id that no command line reads as an option (none starts with '-')."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def process_alive(info: SandboxInfo) -> dict[str, bool]:
    """Role name -> whether that recorded process is still running."""
    marker = _marker(info.dir)
    return {name: process.is_ours(pid, marker) for name, pid in sorted(info.pids().items())}


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _format_storage(jar_dir: Path, cluster_id: str, configs: Sequence[Path], logs: Path) -> None:
    """Format every node's log dir (one StorageTool JVM per node, run side by side)."""
    procs = []
    archive = classdata.present(jar_dir).tool
    for cfg in configs:
        cmd = config.java_command(jar_dir, "128m", classdata.TOOL_MAIN,
                                  ["format", "--cluster-id", cluster_id, "--config", str(cfg),
                                   "--ignore-formatted"], archive=archive)
        log = open(logs / f"format-{cfg.parent.name}.log", "wb")  # noqa: SIM115
        procs.append((cfg, log, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                                 stdin=subprocess.DEVNULL)))
    failed = []
    for cfg, log, proc in procs:
        try:
            code = proc.wait(timeout=FORMAT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        log.close()
        if code != 0:
            failed.append(f"{cfg.parent.name}: {process.tail(Path(log.name))}")
    if failed:
        raise SandboxError("kafka storage format failed: " + "; ".join(failed))


def _broker_command(info: SandboxInfo, broker_id: int, metrics_port: int) -> list[str]:
    agent = (f"-javaagent:{info.jar_dir / JMX_EXPORTER_JAR}="
             f"{info.broker_host(broker_id)}:{metrics_port}:{info.dir / 'exporter.yml'}")
    return [*links.exec_prefix(info.link, broker_id), *config.java_command(
        info.jar_dir, config.BROKER_HEAP, classdata.SERVER_MAIN,
        [str(info.dir / f"broker-{broker_id}" / "server.properties")],
        [f"-Dlog4j2.configurationFile={info.dir / 'log4j2.properties'}", agent],
        archive=classdata.present(info.jar_dir).server,
    )]


def _prometheus_command(info: SandboxInfo) -> list[str]:
    return [
        require_tool("prometheus"),
        f"--config.file={info.dir / 'prometheus.yml'}",
        f"--storage.tsdb.path={info.dir / 'prometheus-data'}",
        f"--web.listen-address=127.0.0.1:{info.prometheus_port}",
        "--storage.tsdb.retention.time=1d",
        "--log.level=warn",
    ]


def _write_prometheus_config(info: SandboxInfo) -> None:
    targets = [config.ScrapeTarget(b.id, b.rack, b.metrics_port, info.broker_host(b.id))
               for b in info.brokers]
    _write(info.dir / "prometheus.yml",
           yaml.safe_dump(config.prometheus_config(targets,
                                                   config.BROKER_LABELS[info.metric_names]),
                          sort_keys=False))


def _write_broker_config(info: SandboxInfo, broker_id: int, rack: str) -> Path:
    node_dir = info.dir / f"broker-{broker_id}"
    ports = config.PortPlan(info.base_port)
    text = config.broker_properties(broker_id, rack, ports, info.data_dirs(broker_id),
                                    info.internal_rf,
                                    info.broker_host(broker_id), info.controller_host,
                                    info.dir / REMOTE_DIR if info.tiered_storage else None,
                                    info.quota_window_samples)
    return _write(node_dir / "server.properties", text)


def _write_static_files(info: SandboxInfo) -> Path:
    """Write the shared files and the controller's config; return the controller config path."""
    _write(info.dir / "log4j2.properties", config.log4j2_properties())
    _write(info.dir / CAPACITIES_FILE, config.capacities_yaml(info.link_mbps))
    _write(info.dir / "exporter.yml",
           yaml.safe_dump(config.exporter_config(info.metric_names), sort_keys=False))
    ports = config.PortPlan(info.base_port)
    text = config.controller_properties(ports, info.dir / "controller" / "data",
                                        info.controller_host, info.tiered_storage)
    return _write(info.dir / "controller" / "server.properties", text)


def _planned(sandbox_dir: Path, brokers: int, racks: int, base_port: int) -> SandboxInfo:
    ports = config.PortPlan(base_port)
    members = tuple(
        BrokerInfo(id=i, rack=rack, port=ports.broker(i), metrics_port=ports.metrics(i), pid=0)
        for i, rack in enumerate(config.initial_racks(brokers, racks), start=1)
    )
    return SandboxInfo(
        dir=sandbox_dir, base_port=base_port, cluster_id=new_cluster_id(),
        jar_dir=Path(), controller_port=ports.controller, controller_pid=0,
        prometheus_port=ports.prometheus, prometheus_pid=0, brokers=members,
        internal_rf=min(3, brokers),
    )


def _alive_checker(info: SandboxInfo) -> Callable[[], None]:
    marker = _marker(info.dir)

    def check() -> None:
        for name, pid in info.pids().items():
            if not process.is_ours(pid, marker):
                log = info.dir / "logs" / f"{name}.log"
                raise SandboxError(f"{name} exited during start-up "
                                   f"({process.exit_description(pid)}; {log}): "
                                   f"{process.tail(log)}")

    return check


def _reset_dir(sandbox_dir: Path) -> None:
    for child in RESET_DIRS:
        shutil.rmtree(sandbox_dir / child, ignore_errors=True)
    for node in sandbox_dir.glob(BROKER_DIR_PREFIX + "*"):
        shutil.rmtree(node, ignore_errors=True)
    (sandbox_dir / "logs").mkdir(parents=True)


def _start(info: SandboxInfo) -> SandboxInfo:
    """Write configs, format storage, spawn everything; returns the info with pids recorded."""
    logs = info.dir / "logs"
    configs = [_write_static_files(info)]
    configs += [_write_broker_config(info, b.id, b.rack) for b in info.brokers]
    _write_prometheus_config(info)
    _format_storage(info.jar_dir, info.cluster_id, configs, logs)
    controller_cmd = config.java_command(
        info.jar_dir, config.CONTROLLER_HEAP, classdata.SERVER_MAIN, [str(configs[0])],
        [f"-Dlog4j2.configurationFile={info.dir / 'log4j2.properties'}"],
        archive=classdata.present(info.jar_dir).server)
    info = replace(info, controller_pid=process.spawn(controller_cmd, logs / "controller.log",
                                                      info.dir))
    started = tuple(
        replace(b, pid=process.spawn(_broker_command(info, b.id, b.metrics_port),
                                     logs / f"broker-{b.id}.log", info.dir))
        for b in info.brokers
    )
    info = replace(info, brokers=started)
    info = replace(info, prometheus_pid=process.spawn(_prometheus_command(info),
                                                      logs / "prometheus.log", info.dir))
    write_state(info)
    return info


def _wait_ready(info: SandboxInfo, brokers: Sequence[BrokerInfo]) -> None:
    """Wait until these brokers are registered with their racks and scraped by Prometheus."""
    check = _alive_checker(info)
    ready.wait_for_brokers(info.bootstrap, {b.id: b.rack for b in brokers},
                           READY_TIMEOUT_S, check)
    ready.wait_for_scrapes(info.prometheus_url,
                           [f"{info.broker_host(b.id)}:{b.metrics_port}" for b in brokers],
                           READY_TIMEOUT_S, check)


def _quiet(message: str) -> None:
    """Default progress sink: say nothing."""


def up(sandbox_dir: Path, brokers: int = 4, racks: int = 2,
       base_port: int = config.DEFAULT_BASE_PORT,
       progress: Callable[[str], None] = _quiet, link_mbps: int | None = None,
       tiered_storage: bool = False, log_dirs: int = 1,
       metric_names: str = "sandbox", quota_window_samples: int | None = None) -> UpResult:
    """Start a sandbox in sandbox_dir, or report the one already running there; with link_mbps
    every broker gets a namespace and a link shaped to that many Mbit/s each way; with
    tiered_storage, topics created with remote.storage.enable=true keep their older segments
    in a directory of the sandbox that stands for remote storage; with log_dirs > 1 each
    broker keeps its partitions in that many log dirs (JBOD); metric_names "strimzi" names the
    exporter's series as Strimzi's rules do (config.METRIC_NAMES); quota_window_samples sets
    the brokers' replication.quota.window.num (None: Kafka's 11)."""
    if metric_names not in config.METRIC_NAMES:
        raise SandboxError(f"--metric-names {metric_names!r}: expected one of "
                           f"{', '.join(config.METRIC_NAMES)}")
    if quota_window_samples is not None and quota_window_samples < 1:
        raise SandboxError(f"quota window samples must be at least 1, got {quota_window_samples}")
    sandbox_dir = sandbox_dir.resolve()
    if link_mbps is not None:
        links.check_link_mbps(link_mbps)
        network.require_link_support()
    existing = read_state(sandbox_dir)
    if existing is not None:
        if all(process_alive(existing).values()):
            if not (sandbox_dir / CAPACITIES_FILE).exists():  # started by an older version
                _write(sandbox_dir / CAPACITIES_FILE,
                       config.capacities_yaml(existing.link_mbps))
            return UpResult(existing, already_running=True)
        progress(f"a previous sandbox in {sandbox_dir} is partly down: stopping it first")
        down(sandbox_dir)
    require_tool("java")
    require_tool("prometheus")
    planned = replace(_planned(sandbox_dir, brokers, racks, base_port),
                      tiered_storage=tiered_storage, log_dirs=log_dirs,
                      metric_names=metric_names, quota_window_samples=quota_window_samples)
    check_ports(port_roles(planned))
    if link_mbps is not None:
        planned = replace(planned, link=network.plan(sandbox_dir, link_mbps,
                                                     [b.id for b in planned.brokers]))
    planned = replace(planned, jar_dir=ensure_jars(progress=progress))
    classdata.ensure(planned.jar_dir, progress)
    created_dir = not sandbox_dir.exists()
    sandbox_dir.mkdir(parents=True, exist_ok=True)
    write_marker(sandbox_dir, created_dir)
    _reset_dir(sandbox_dir)
    info = planned
    try:
        if planned.link is not None:
            progress(f"creating a bridge and {brokers} namespaces, each link shaped to "
                     f"{planned.link.mbps} Mbit/s")
            write_state(planned)  # recorded before it exists: `down` removes what was made
            network.create(planned.link)
        progress(f"formatting storage and starting a controller, {brokers} brokers, Prometheus")
        info = _start(planned)
        progress("waiting for every broker to register and every Prometheus target to be up")
        _wait_ready(info, info.brokers)
    except BaseException:
        write_state(info)
        down(sandbox_dir)
        raise
    return UpResult(info, already_running=False)


def sandbox_processes() -> list[tuple[int, list[str]]]:
    """(pid, argv) of every java and prometheus process (the kinds a sandbox runs)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        words = [word.decode(errors="replace") for word in argv]
        if Path(words[0]).name in ("java", "prometheus"):
            found.append((int(entry.name), words))
    return sorted(found)


def sandbox_pids(sandbox_dir: Path) -> list[int]:
    """java/prometheus processes whose command line points into sandbox_dir (orphans too)."""
    marker = _marker(sandbox_dir)
    return [pid for pid, argv in sandbox_processes() if marker in " ".join(argv)]


_stray_pids = sandbox_pids  # the name the integration tests use


def down(sandbox_dir: Path) -> list[str]:
    """Stop every process of the sandbox (brokers, controller, Prometheus), then delete its
    network (namespaces, veths, bridge: recorded, or named by the dir's scheme after a crash);
    return what was stopped.

    Quiet on a dir with nothing to stop (an empty list): tests and scripts call it to make sure
    nothing is left. Data and the sandbox marker stay (`kafka_rebalance.sandbox.teardown.purge`
    deletes them). The state file goes last, so a network that could not be deleted is tried again.
    """
    sandbox_dir = sandbox_dir.resolve()
    marker = _marker(sandbox_dir)
    info = read_state(sandbox_dir)
    stopped: list[str] = []
    if info is not None:
        alive = process_alive(info)
        stopped = [name for name, up_ in alive.items() if up_]
        process.stop([b.pid for b in info.brokers], marker, BROKER_STOP_GRACE_S)
        process.stop([info.controller_pid, info.prometheus_pid], marker, OTHER_STOP_GRACE_S)
    strays = sandbox_pids(sandbox_dir)
    process.stop(strays, marker, OTHER_STOP_GRACE_S)
    stopped += [f"pid {pid}" for pid in strays if info is None or pid not in info.pids().values()]
    # A recorded network, or (its state lost) one named by the dir's scheme; a loopback
    # sandbox made none.
    if (info.link is not None) if info is not None else network.can_manage():
        removed = network.remove(links.link_tag(sandbox_dir), info.link if info else None)
        if removed:
            stopped.append(f"network ({', '.join(removed)})")
    state_path(sandbox_dir).unlink(missing_ok=True)
    return stopped


def running(sandbox_dir: Path, brokers_may_be_down: bool = False) -> SandboxInfo:
    """The sandbox recorded in sandbox_dir with every process alive, else a SandboxError.
    With `brokers_may_be_down`, brokers killed on purpose (`kill-broker`, to try a dead
    broker's drain) are allowed, as long as the controller, Prometheus and one broker run."""
    info = read_state(sandbox_dir.resolve())
    if info is None:
        raise SandboxError(f"no sandbox in {sandbox_dir}; start one with `rebalance sandbox up`")
    alive = process_alive(info)
    dead = [name for name, up in alive.items() if not up]
    if brokers_may_be_down and any(up for name, up in alive.items()
                                   if name.startswith("broker-")):
        dead = [name for name in dead if not name.startswith("broker-")]
    if dead:
        raise SandboxError(f"sandbox in {sandbox_dir} is degraded ({', '.join(dead)} not "
                           "running); run `rebalance sandbox down` then `up`")
    return info


def add_broker(sandbox_dir: Path, rack: str,
               progress: Callable[[str], None] = _quiet) -> BrokerInfo:
    """Start one more broker (next id) on rack; it registers with no replicas (other brokers
    may be down: the replacement of a dead one)."""
    info = running(sandbox_dir, brokers_may_be_down=True)
    broker_id = next_broker_id(info)
    ports = config.PortPlan(info.base_port)
    broker = BrokerInfo(id=broker_id, rack=rack, port=ports.broker(broker_id),
                        metrics_port=ports.metrics(broker_id), pid=0)
    check_ports([(f"broker {broker_id}", broker.port),
                 (f"broker {broker_id} exporter", broker.metrics_port)])
    if info.link is not None:
        grown = info.link.with_broker(broker_id)
        info = replace(info, link=grown)
        write_state(info)  # recorded before it exists
        network.create_broker(grown, broker_id)
    cfg = _write_broker_config(info, broker_id, rack)
    progress(f"formatting and starting broker {broker_id} on rack {rack}")
    _format_storage(info.jar_dir, info.cluster_id, [cfg], info.dir / "logs")
    pid = process.spawn(_broker_command(info, broker_id, broker.metrics_port),
                        info.dir / "logs" / f"broker-{broker_id}.log", info.dir)
    broker = replace(broker, pid=pid)
    info = info.with_broker(broker)
    write_state(info)
    _write_prometheus_config(info)
    os.kill(info.prometheus_pid, signal.SIGHUP)
    _wait_ready(info, [broker])
    return broker


def _broker(info: SandboxInfo, broker_id: int) -> BrokerInfo:
    for broker in info.brokers:
        if broker.id == broker_id:
            return broker
    raise SandboxError(f"no broker {broker_id} in the sandbox (brokers "
                       f"{[b.id for b in info.brokers]})")


def kill_broker(sandbox_dir: Path, broker_id: int) -> None:
    """SIGKILL one broker, as a crash would (no controlled shutdown); its data and config stay,
    and `start_broker` brings it back."""
    info = read_state(sandbox_dir.resolve())
    if info is None:
        raise SandboxError(f"no sandbox in {sandbox_dir}; start one with `rebalance sandbox up`")
    broker = _broker(info, broker_id)
    if not process.kill(broker.pid, _marker(info.dir)):
        raise SandboxError(f"broker {broker_id} (pid {broker.pid}) is not running")


def start_broker(sandbox_dir: Path, broker_id: int,
                 progress: Callable[[str], None] = _quiet) -> BrokerInfo:
    """Start a broker that was killed or stopped again, on its own data; waits until it is
    registered and scraped. A running broker is left as it is."""
    info = read_state(sandbox_dir.resolve())
    if info is None:
        raise SandboxError(f"no sandbox in {sandbox_dir}; start one with `rebalance sandbox up`")
    broker = _broker(info, broker_id)
    if process.is_ours(broker.pid, _marker(info.dir)):
        return broker
    check_ports([(f"broker {broker_id}", broker.port),
                 (f"broker {broker_id} exporter", broker.metrics_port)])
    progress(f"starting broker {broker_id} again")
    pid = process.spawn(_broker_command(info, broker_id, broker.metrics_port),
                        info.dir / "logs" / f"broker-{broker_id}.log", info.dir)
    broker = replace(broker, pid=pid)
    info = replace(info, brokers=tuple(broker if b.id == broker_id else b for b in info.brokers))
    write_state(info)
    _wait_ready(info, [broker])
    return broker
