"""`rebalance execute` against the real sandbox: moves run one at a time in the plan's order
under the throttle the brokers report, operator throttles survive, and no acked message is lost.

Each test creates its own topic (RF 2, leader on rack a, follower on rack b) with a few MB of
random data per partition, so that a follower move under a 1 MB/s throttle takes seconds. Plans
are built with the planner's own plan-file code from a live snapshot; moves change followers only
(the leader stays), which keeps the plan valid for the planner's validator.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer
from confluent_kafka import TopicPartition as CTP
from confluent_kafka.admin import AdminClient, NewTopic

from executor.journal import RunState, read_journal
from executor.state import MoveState
from executor.throttle import (
    BROKER_THROTTLE_CONFIGS,
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    TOPIC_THROTTLE_CONFIGS,
)
from planner.goals import Budget, Goals
from planner.planfile import SolverInfo, make_plan_file, write_plan
from planner.result import Move, SolverStatus
from sandbox.state import SandboxInfo
from topology.capacities import CAPACITY_KEYS, Capacities
from topology.kafka_admin import KafkaClusterAdmin
from topology.live import read_live_topology
from topology.model import TopicPartition
from topology.snapshot import topology_from_dict

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PARTITION_BYTES = 4_000_000  # ~4 s per follower move at 1 MB/s
RECORD_BYTES = 10_000
CAP_MBPS = "1"
EQUAL = Capacities(default={k: 1e15 for k in CAPACITY_KEYS})
BrokerConfigs = dict[int, dict[str, str | None]]


# ---- helpers ---------------------------------------------------------------------------------
def rebalance(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "import cli; cli.main()", *args],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def start_rebalance(log: Path, *args: str) -> subprocess.Popen[bytes]:
    """The CLI as a child process (so a test can kill -9 it), output to `log`."""
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-c", "import cli; cli.main()", *args],
                                stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})


def execute_args(info: SandboxInfo, plan: Path, journal: Path, *extra: str) -> list[str]:
    return ["execute", str(plan), "--bootstrap", info.bootstrap, "--prometheus",
            info.prometheus_url, "--max-mbps", CAP_MBPS, "--journal", str(journal),
            "--poll-seconds", "0.5", *extra]


def wait_for(what: str, check: Callable[[], bool], timeout_s: float = 90,
             every_s: float = 0.25) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(every_s)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def scrape(port: int) -> str:
    """The executor's /metrics page ('' while it is not up)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as page:
            return str(page.read().decode())
    except OSError:
        return ""


def drop_test_topics(info: SandboxInfo) -> None:
    """Delete the topics these tests created (prefix exec-), so later tests see a clean cluster."""
    admin = AdminClient({"bootstrap.servers": info.bootstrap})
    names = [t for t in admin.list_topics(timeout=30).topics if t.startswith("exec-")]
    for future in (admin.delete_topics(names).values() if names else ()):
        future.result(60)


@pytest.fixture(autouse=True)
def _drop_topics(sandbox: SandboxInfo) -> Iterator[None]:
    yield
    drop_test_topics(sandbox)


@pytest.fixture
def admin(sandbox: SandboxInfo) -> Iterator[KafkaClusterAdmin]:
    client = KafkaClusterAdmin(sandbox.bootstrap)
    yield client
    client.close()


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
    admin = AdminClient({"bootstrap.servers": info.bootstrap})
    admin.create_topics([NewTopic(topic, partitions, replica_assignment=[replicas] *
                                  partitions)])[topic].result(timeout=30)
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


def make_plan(info: SandboxInfo, path: Path, moves: list[tuple[str, int, tuple[int, ...]]]
              ) -> list[Move]:
    """A plan file for `moves` (topic, partition, target), current replicas read live."""
    admin = KafkaClusterAdmin(info.bootstrap)
    try:
        doc = read_live_topology(admin, None, EQUAL).document
    finally:
        admin.close()
    topology = topology_from_dict(doc, EQUAL, "sandbox")
    parts = {(p.topic, p.partition): p for p in topology.partitions}
    planned = [Move(t, n, parts[(t, n)].replicas, target, parts[(t, n)].size_bytes)
               for t, n, target in moves]
    plan = make_plan_file(topology, planned, Goals(tolerance=0.99), Budget(),
                          SolverInfo(SolverStatus.FEASIBLE, 0),
                          datetime.now(UTC).isoformat(timespec="seconds"))
    write_plan(path, plan)
    return planned


def throttle_configs(admin: KafkaClusterAdmin, brokers: list[int], topic: str) -> tuple[
    BrokerConfigs, dict[str, str | None]
]:
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


def state_sequence(path: Path) -> list[tuple[str, str]]:
    """(move, state) of every state record, in journal order."""
    import json

    return [(r["move"], r["state"]) for r in map(json.loads, path.read_text().splitlines())
            if r.get("kind") == "state"]


# ---- a producer that checks every acked message is there afterwards --------------------------
class CheckedProducer:
    """Writes keyed, numbered messages (acks=all) to a topic in a thread; `verify` reads back."""

    def __init__(self, info: SandboxInfo, topic: str) -> None:
        self.info, self.topic = info, topic
        self.acked: set[str] = set()
        self.failed: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> CheckedProducer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(60)

    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        key = (msg.key() or b"").decode()
        if err is None:
            self.acked.add(key)
        else:
            self.failed.append(f"{key}: {err}")

    def _run(self) -> None:
        producer = Producer({"bootstrap.servers": self.info.bootstrap, "acks": "all",
                             "enable.idempotence": True, "linger.ms": 5})
        seq = 0
        while not self._stop.is_set():
            producer.produce(self.topic, key=f"k{seq}".encode(), value=b"x" * 100,
                             on_delivery=self._delivered)
            seq += 1
            producer.poll(0.01)
        producer.flush(60)

    def verify(self, partitions: int) -> None:
        """Every acked key is in the topic."""
        consumer = Consumer({"bootstrap.servers": self.info.bootstrap, "group.id": uuid.uuid4().hex,
                             "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        ends = {}
        for p in range(partitions):
            ends[p] = consumer.get_watermark_offsets(CTP(self.topic, p), timeout=10)[1]
        consumer.assign([CTP(self.topic, p, 0) for p in range(partitions)])
        seen: set[str] = set()
        done: set[int] = {p for p, end in ends.items() if end == 0}
        deadline = time.monotonic() + 120
        while len(done) < partitions and time.monotonic() < deadline:
            for msg in consumer.consume(1000, timeout=1.0):
                if msg.error():
                    continue
                if msg.key():
                    seen.add(msg.key().decode())
                if (msg.offset() or 0) + 1 >= ends[msg.partition() or 0]:
                    done.add(msg.partition() or 0)
        consumer.close()
        assert not self.failed, self.failed[:5]
        assert self.acked, "the producer got no acks at all"
        missing = self.acked - seen
        assert not missing, f"{len(missing)} acked message(s) lost, e.g. {sorted(missing)[:5]}"


# ---- tests -----------------------------------------------------------------------------------
def test_three_moves_in_order_with_throttles_read_back(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    lay = layout(sandbox)
    topic = create_topic(sandbox, "exec-run", 3, [lay.leader, lay.follower])
    # An operator's own throttle settings before the run: a high leader rate on the leader's
    # broker and an entry in the topic's leader list. Both must be back exactly afterwards.
    admin.alter_broker_configs({lay.leader: {LEADER_RATE: "50000000"}})
    admin.alter_topic_configs({topic: {LEADER_REPLICAS: f"0:{lay.spare_a}"}})
    brokers = lay.all_ids
    before = throttle_configs(admin, brokers, topic)
    plan_path = tmp_path / "plan.json"
    moves = make_plan(sandbox, plan_path, [(topic, p, (lay.leader, lay.spare)) for p in range(3)])
    journal = tmp_path / "run.journal"
    seen_during: list[tuple[BrokerConfigs, dict[str, str | None]]] = []
    with CheckedProducer(sandbox, topic) as producer:
        metrics_port = free_port()
        proc = start_rebalance(tmp_path / "execute.log",
                               *execute_args(sandbox, plan_path, journal, "--metrics-port",
                                             str(metrics_port)))
        exported = ""
        try:
            for move in moves:
                wait_for(f"{move.name} copying", lambda m=move: move_in(  # type: ignore[misc]
                    journal, m.name, MoveState.COPYING) or proc.poll() is not None)
                seen_during.append(throttle_configs(admin, brokers, topic))
                exported = exported or scrape(metrics_port)
            assert proc.wait(240) == 0, (tmp_path / "execute.log").read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
    producer.verify(3)
    log = (tmp_path / "execute.log").read_text()

    # One move at a time, in the plan's order: each starts only after the previous is done.
    sequence = state_sequence(journal)
    starts = [sequence.index((m.name, "throttling")) for m in moves]
    dones = [sequence.index((m.name, "done")) for m in moves]
    assert starts == sorted(starts), sequence
    for previous_done, next_start in zip(dones, starts[1:], strict=False):
        assert previous_done < next_start, sequence
    assert replicas_of(admin, topic) == {p: (lay.leader, lay.spare) for p in range(3)}

    # During each move the brokers report the throttle the executor set.
    for index, (broker_now, topic_now) in enumerate(seen_during):
        assert broker_now[lay.leader][LEADER_RATE] == "1000000", (index, broker_now)
        assert broker_now[lay.spare][FOLLOWER_RATE] == "1000000", (index, broker_now)
        leader_list = (topic_now[LEADER_REPLICAS] or "").split(",")
        assert f"0:{lay.spare_a}" in leader_list, topic_now
        assert f"{index}:{lay.leader}" in leader_list, topic_now
        assert f"{index}:{lay.spare}" in (topic_now[FOLLOWER_REPLICAS] or "").split(","), \
            topic_now
    # After the run every throttle config is what it was before, the operator's included.
    assert throttle_configs(admin, brokers, topic) == before, log
    assert before[0][lay.leader][LEADER_RATE] == "50000000"
    assert before[1][LEADER_REPLICAS] == f"0:{lay.spare_a}"
    admin.alter_broker_configs({lay.leader: {LEADER_RATE: None}})
    # The executor's own metrics were served while it ran.
    assert "rebalance_plan_moves 3.0" in exported, exported
    assert 'rebalance_moves{state="' in exported, exported
    assert "rebalance_throttle_cap_bytes_per_second 1e+06" in exported, exported
    status = rebalance("status", "--journal", str(journal))
    assert status.returncode == 0 and "every move is done" in status.stdout, status.stdout


def test_stale_plan_is_refused_and_nothing_changes(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    lay = layout(sandbox)
    topic = create_topic(sandbox, "exec-stale", 2, [lay.leader, lay.follower], 100_000)
    plan_path = tmp_path / "plan.json"
    make_plan(sandbox, plan_path, [(topic, p, (lay.leader, lay.spare)) for p in range(2)])
    # The cluster changes after the plan was made: partition 1 moves elsewhere.
    admin.alter_partition_reassignments({TopicPartition(topic, 1): [lay.spare_a,
                                                                    lay.follower]})
    wait_for("outside reassignment", lambda: replicas_of(admin, topic)[1] ==
             (lay.spare_a, lay.follower) and not admin.list_partition_reassignments())
    before = throttle_configs(admin, lay.all_ids, topic)
    journal = tmp_path / "run.journal"
    result = rebalance(*execute_args(sandbox, plan_path, journal))
    assert result.returncode == 6, result.stdout + result.stderr
    assert f"{topic}-1" in result.stderr and f"{topic}-0" not in result.stderr, result.stderr
    assert "nothing was changed" in result.stderr
    assert not journal.exists()
    assert throttle_configs(admin, lay.all_ids, topic) == before
    assert replicas_of(admin, topic) == {0: (lay.leader, lay.follower),
                                         1: (lay.spare_a, lay.follower)}

