"""Class-data archives (Java's AppCDS) for the sandbox's JVMs: the classes a Kafka node and the
storage tool load, parsed and verified once and mapped from a file at every later start.

On two cores a sandbox of a controller and four brokers came up in 11.7 s without them and in
8.1 s with them (two runs each, side by side): the five JVMs start at once and compete for the
CPU while they load some ten thousand classes each. The archives are made the first time a
sandbox starts (about 15 s: the storage tool formats, then a one-node cluster starts, takes a
topic and stops) and kept beside the jars, one set per JDK build and jar set, since a JVM maps
an archive only for the exact JDK and class path it was made with. A JVM given an archive it
cannot use starts as without it; one that cannot be made is said and then not used.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from kafka_rebalance.sandbox import config
from kafka_rebalance.sandbox.process import port_open

SERVER_MAIN = "kafka.Kafka"
TOOL_MAIN = "kafka.tools.StorageTool"
ARCHIVES_DIR = "class-data"
FAILED = "not-made.txt"  # why the archives of this JDK and jar set could not be made
READY_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Archives:
    """The archive each kind of JVM maps (None: it starts without one)."""

    server: Path | None = None
    tool: Path | None = None


def archive_dir(jar_dir: Path) -> Path | None:
    """Where the archives of this JDK build and this jar set live; None without a `java`."""
    java = shutil.which("java")
    if java is None:
        return None
    binary = Path(java).resolve()
    stat = binary.stat()
    key = hashlib.sha256(f"{binary}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    for jar in sorted(jar_dir.glob("*.jar")):
        key.update(f"|{jar.name}:{jar.stat().st_size}".encode())
    return jar_dir / ARCHIVES_DIR / key.hexdigest()[:16]


def present(jar_dir: Path) -> Archives:
    """The archives already made for this JDK and jar set (none is made here)."""
    where = archive_dir(jar_dir)
    return Archives() if where is None else _present_in(where)


def _present_in(where: Path) -> Archives:
    server, tool = where / "server.jsa", where / "tool.jsa"
    return Archives(server if server.is_file() else None, tool if tool.is_file() else None)


def _settled(where: Path) -> Archives | None:
    """What is in `where` once nothing more is to be made there (both archives, or the note
    that they cannot be); None while they are still to be made."""
    found = _present_in(where)
    done = (found.server is not None and found.tool is not None) or (where / FAILED).exists()
    return found if done else None


def ensure(jar_dir: Path, progress: Callable[[str], None]) -> Archives:
    """The archives for this JDK and jar set, made first when missing (one process at a time;
    another waits for it). What cannot be made is said through `progress` and left out."""
    where = archive_dir(jar_dir)
    if where is None:
        return Archives()
    found = _settled(where)
    if found is not None:
        return found
    where.mkdir(parents=True, exist_ok=True)
    with _locked(where / ".lock"):
        found = _settled(where)
        if found is not None:
            return found
        progress("making class-data archives for the sandbox's JVMs (once per JDK, about "
                 "15 s; every later start is faster)")
        try:
            _make(jar_dir, where)
        except (OSError, subprocess.SubprocessError, _NotMade) as exc:
            # said once: a JDK that cannot make them (one without its own base archive) is
            # not asked again at every start
            (where / FAILED).write_text(f"{exc}\n", encoding="utf-8")
            progress(f"no class-data archive ({exc}): the JVMs start without one")
    return _present_in(where)


class _NotMade(Exception):
    """An archive run that did not end as it should."""


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _make(jar_dir: Path, where: Path) -> None:
    """Format and run a one-node cluster in a scratch dir, each JVM writing the classes it
    loaded into an archive as it exits; an archive counts only once its JVM ended cleanly."""
    with tempfile.TemporaryDirectory(prefix="scratch-", dir=where) as scratch_dir:
        scratch = Path(scratch_dir)
        ports = _free_ports(2)
        properties = scratch / "server.properties"
        properties.write_text(
            "process.roles=broker,controller\nnode.id=1\n"
            f"controller.quorum.voters=1@127.0.0.1:{ports[1]}\n"
            f"listeners=PLAINTEXT://127.0.0.1:{ports[0]},CONTROLLER://127.0.0.1:{ports[1]}\n"
            "controller.listener.names=CONTROLLER\n"
            f"log.dirs={scratch / 'data'}\noffsets.topic.replication.factor=1\n",
            encoding="utf-8")
        log = scratch / "node.log"
        tool_archive = scratch / "tool.jsa"
        tool = config.java_command(
            jar_dir, "128m", TOOL_MAIN,
            ["format", "--cluster-id", uuid.uuid4().hex[:22], "--config", str(properties)],
            [f"-XX:ArchiveClassesAtExit={tool_archive}"])
        with open(log, "ab") as out:
            subprocess.run(tool, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                           check=True, timeout=READY_TIMEOUT_S)
        server_archive = scratch / "server.jsa"
        _run_node(config.java_command(jar_dir, config.BROKER_HEAP, SERVER_MAIN,
                                      [str(properties)],
                                      [f"-XX:ArchiveClassesAtExit={server_archive}"]),
                  log, ports[0])
        for made in (tool_archive, server_archive):
            if not made.is_file():
                raise _NotMade(f"the JVM wrote no {made.name}; see {log}")
        os.replace(tool_archive, where / "tool.jsa")
        os.replace(server_archive, where / "server.jsa")


def _run_node(command: list[str], log: Path, port: int) -> None:
    """Start the node, give it a topic once it answers, and stop it as the sandbox does."""
    with open(log, "ab") as out:
        node = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not port_open(port):
            if node.poll() is not None or time.monotonic() > deadline:
                raise _NotMade(f"the scratch node did not start; see {log}")
            time.sleep(0.2)
        _take_a_topic(f"127.0.0.1:{port}")
        node.send_signal(signal.SIGTERM)
        if node.wait(timeout=STOP_TIMEOUT_S) not in (0, 143):
            raise _NotMade(f"the scratch node ended with exit code {node.returncode}")
    finally:
        if node.poll() is None:
            node.kill()
            node.wait()


def _take_a_topic(bootstrap: str) -> None:
    """Create a topic and write to it: the node loads the classes its clients' paths use."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic("warm-up", 1, 1)],
                                      request_timeout=30).values():
        future.result(timeout=60)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for _ in range(100):
        producer.produce("warm-up", b"x" * 1000)
    if producer.flush(30) != 0:
        raise _NotMade("the scratch node took no messages")


def _free_ports(count: int) -> list[int]:
    """`count` loopback ports the kernel has just found free."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
