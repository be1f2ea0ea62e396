"""Helpers shared by the executor integration tests: the CLI as a child process, a test topic
filled with data, a plan for chosen moves, and the throttle configs read back from the brokers.

Test topics are named exec-*; the `drop_exec_topics` fixture deletes them after each test.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from executor.journal import RunState, read_journal
from executor.state import MoveState
from executor.throttle import BROKER_THROTTLE_CONFIGS, TOPIC_THROTTLE_CONFIGS
from kafka_rebalance.files.planfile import write_plan
from kafka_rebalance.sandbox import cluster
from kafka_rebalance.sandbox.state import SandboxInfo
from planner.goals import Budget, Goals
from planner.log_dirs import DirMove, DirPlan, plan_dirs
from planner.planfile import SolverInfo, make_plan_file
from planner.result import Move, SolverStatus
from tests.integration.kafka_topics import create_topics, wait_for
from topology.capacities import CAPACITY_KEYS, Capacities
from topology.kafka_admin import KafkaClusterAdmin
from topology.live import read_live_topology
from topology.snapshot import topology_from_dict

ROOT = Path(__file__).resolve().parents[2]
PARTITION_BYTES = 4_000_000  # ~4 s per follower move at 1 MB/s
RECORD_BYTES = 10_000
CAP_MBPS = "1"
# The tests' sandboxes measure replication quotas over 3 samples of 1 s (Kafka's default: 11),
# so a run waits 3 s, not 11, before a copy into a broker that just received one.
QUOTA_WINDOW_SAMPLES = 3
EQUAL = Capacities(default={k: 1e15 for k in CAPACITY_KEYS})
BrokerConfigs = dict[int, dict[str, str | None]]
ThrottleConfigs = tuple[BrokerConfigs, dict[str, str | None]]


def rebalance(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "import cli; cli.main()", *args],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def _default_signals() -> None:
    """In the child, before exec: SIGINT and SIGTERM as a terminal's shell would leave them. A
    suite started from a background job (or CI) passes SIGINT on ignored, Python then installs
    no KeyboardInterrupt handler, and a test's Ctrl-C would never arrive."""
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, signal.SIG_DFL)


def start_rebalance(log: Path, *args: str) -> subprocess.Popen[bytes]:
    """The CLI as a child process (so a test can kill -9 it or send it Ctrl-C), output to
    `log`."""
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-c", "import cli; cli.main()", *args],
                                stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"},
                                preexec_fn=_default_signals)


def scrape(port: int) -> str:
    """The executor's /metrics page ('' while it is not up)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as page:
            return str(page.read().decode())
    except OSError:
        return ""


# The SLO guard reads its series in every run, with thresholds a loaded CI machine never
# crosses: tests that measure the cap must not see it react to a slow shared sandbox (a
# produce p99 of 250 ms is ordinary there). test_slo_guard sets thresholds that breach.
CALM_SLO = ("--slo-produce-p99-ms", "60000", "--slo-fetch-p99-ms", "60000",
            "--slo-flush-p95-ms", "60000", "--slo-under-replicated", "1000000")


def execute_args(info: SandboxInfo, plan: Path, journal: Path, *extra: str,
                 max_mbps: str = CAP_MBPS, hand_made: bool = True,
                 quota_window: str | None = None, calm_slo: bool = True) -> list[str]:
    """An `execute` of `plan`. A hand-made plan's moves serve the test, not balance, and the
    shared sandbox's balance is whatever earlier tests left, so worse balance is allowed. The
    quota window is the one the brokers describe (QUOTA_WINDOW_SAMPLES x 1 s on the tests'
    sandboxes: a process waits one before its first copy) unless a test gives one. The SLO
    guard is calm (CALM_SLO) unless the test gives its thresholds."""
    allow = ["--allow-worse-balance"] if hand_made else []
    window = ["--quota-window", quota_window] if quota_window is not None else []
    calm = list(CALM_SLO) if calm_slo else []
    return ["execute", str(plan), "--bootstrap", info.bootstrap, "--prometheus",
            info.prometheus_url, "--max-mbps", max_mbps, "--journal", str(journal),
            "--poll-seconds", "0.5", *allow, *window, *calm, *extra]


def drop_test_topics(info: SandboxInfo) -> None:
    """Delete the topics these tests created (prefix exec-), so later tests see a clean cluster:
    returns once the brokers no longer list them (a deletion reaches the brokers' metadata
    after the controller acknowledges it, and a test that lists partitions meanwhile would
    find a topic whose configs are already gone)."""
    admin = AdminClient({"bootstrap.servers": info.bootstrap})

    def left() -> list[str]:
        return [t for t in admin.list_topics(timeout=30).topics if t.startswith("exec-")]
    names = left()
    for future in (admin.delete_topics(names).values() if names else ()):
        future.result(60)
    if names:
        wait_for("the deleted test topics gone from the brokers' metadata", lambda: not left(),
                 60, 0.2)


@dataclass
class Layout:
    """Brokers for a test topic: leader on rack a, follower on rack b, a spare on rack b."""

    leader: int
    follower: int
    spare: int
    spare_a: int
    all_ids: list[int] = field(default_factory=list)


def layout(info: SandboxInfo) -> Layout:
    a = sorted(b.id for b in info.brokers if b.rack == "a")[:2]
    b = sorted(b.id for b in info.brokers if b.rack == "b")[:2]
    return Layout(a[0], b[0], b[1], a[1], sorted(x.id for x in info.brokers))


def create_topic(info: SandboxInfo, prefix: str, partitions: int, replicas: list[int],
                 bytes_each: int = PARTITION_BYTES) -> str:
    """A new topic with `replicas` for every partition and ~`bytes_each` of random data each."""
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    create_topics(info.bootstrap, [NewTopic(topic, partitions,
                                            replica_assignment=[replicas] * partitions)])
    producer = Producer({"bootstrap.servers": info.bootstrap, "linger.ms": 50,
                         "compression.type": "none", "acks": "all"})
    payload = os.urandom(RECORD_BYTES)
    for partition in range(partitions):
        for _ in range(bytes_each // RECORD_BYTES):
            while True:
                try:
                    producer.produce(topic, value=payload, partition=partition)
                    break
                except BufferError:
                    producer.poll(0.1)
            producer.poll(0)
    assert producer.flush(120) == 0
    return topic


def make_plan(info: SandboxInfo, path: Path, moves: list[tuple[str, int, tuple[int, ...]]],
              remove: frozenset[int] = frozenset(), place_in_dirs: bool = False,
              dir_moves: tuple[DirMove, ...] = ()) -> list[Move]:
    """A plan file for `moves` (topic, partition, target), current replicas read live; made
    as a drain of `remove` (--remove-broker) when given; with `place_in_dirs`, each replica
    arriving on a JBOD broker gets the planner's choice of dir; `dir_moves` move replicas
    between their broker's dirs."""
    admin = KafkaClusterAdmin(info.bootstrap)
    try:
        doc = read_live_topology(admin, None, EQUAL).document
    finally:
        admin.close()
    topology = topology_from_dict(doc, EQUAL, "sandbox")
    parts = {(p.topic, p.partition): p for p in topology.partitions}
    planned = [Move(t, n, parts[(t, n)].replicas, target, parts[(t, n)].size_bytes)
               for t, n, target in moves]
    dirs = plan_dirs(topology, planned, 0.99, move_between_dirs=False) if place_in_dirs else None
    if dir_moves:
        dirs = replace(dirs or DirPlan(tolerance=0.99), moves=dir_moves)
    plan = make_plan_file(topology, planned, Goals(tolerance=0.99, remove_brokers=remove),
                          Budget(),
                          SolverInfo(SolverStatus.FEASIBLE, 0),
                          datetime.now(UTC).isoformat(timespec="seconds"), log_dirs=dirs)
    write_plan(path, plan)
    return planned


def throttle_configs(admin: KafkaClusterAdmin, brokers: list[int], topic: str
                     ) -> ThrottleConfigs:
    return (admin.broker_configs(brokers, BROKER_THROTTLE_CONFIGS),
            admin.topic_configs([topic], TOPIC_THROTTLE_CONFIGS).get(topic, {}))


def replicas_of(admin: KafkaClusterAdmin, topic: str) -> dict[int, tuple[int, ...]]:
    return {p.partition: p.replicas for p in admin.partitions([topic])}


def journal_state(path: Path) -> RunState | None:
    try:
        return read_journal(path)
    except Exception:  # not created yet, or being created
        return None


def move_in(path: Path, name: str, state: MoveState) -> bool:
    run = journal_state(path)
    return run is not None and run.state_of(name) is state


def state_times(path: Path) -> dict[tuple[str, str], float]:
    """When each move entered each state (the last such record), by (move, state)."""
    return {(r["move"], r["state"]): float(r["at"])
            for r in map(json.loads, path.read_text().splitlines()) if r.get("kind") == "state"}


def state_sequence(path: Path) -> list[tuple[str, str]]:
    """(move, state) of every state record, in journal order."""
    return [(r["move"], r["state"]) for r in map(json.loads, path.read_text().splitlines())
            if r.get("kind") == "state"]


@contextmanager
def own_sandbox(tmp_path_factory: pytest.TempPathFactory, name: str, first_port: int, *,
                brokers: int = 4, racks: int = 2, port_room: int = 8,
                tiered_storage: bool = False, log_dirs: int = 1,
                metric_names: str = "sandbox",
                quota_window_samples: int | None = QUOTA_WINDOW_SAMPLES) -> Iterator[SandboxInfo]:
    """A sandbox of one test module's own (the session's shared one carries what earlier
    tests left), on the first free base port from `first_port`; stopped whatever happens.
    `quota_window_samples` None: Kafka's own replication quota window."""
    sandbox_dir = tmp_path_factory.mktemp(name)
    try:
        yield cluster.up(sandbox_dir, brokers=brokers, racks=racks,
                         tiered_storage=tiered_storage, log_dirs=log_dirs,
                         metric_names=metric_names, quota_window_samples=quota_window_samples,
                         base_port=cluster.free_base_port(first_port, port_room)).info
    finally:
        cluster.down(sandbox_dir)


DASHBOARD_VARIABLES = {"$window": "10s", "$broker": ".*"}  # the sandbox gate's window; All
"""A dashboard's template variables as an operator of the sandbox fills them."""


def fill(expr: str) -> str:
    """A dashboard query with its template variables filled (DASHBOARD_VARIABLES)."""
    for name, value in DASHBOARD_VARIABLES.items():
        expr = expr.replace(name, value)
    assert "$" not in expr, f"a template variable is left in {expr}"
    return expr


def range_query(info: SandboxInfo, expr: str, start: float, end: float) -> list[Any]:
    """The series of a PromQL range query over [start, end] at 1 s steps."""
    params = urllib.parse.urlencode({"query": expr, "start": f"{start:.3f}",
                                     "end": f"{end:.3f}", "step": "1s"})
    with urllib.request.urlopen(f"{info.prometheus_url}/api/v1/query_range?{params}",
                                timeout=30) as answer:
        body = json.loads(answer.read().decode())
    assert body["status"] == "success", (expr, body)
    return list(body["data"]["result"])


def has_data(series: list[Any]) -> bool:
    """Any finite value in any of the series."""
    return any(math.isfinite(float(value)) for s in series for _, value in s["values"])
