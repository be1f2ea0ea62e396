"""`rebalance execute` against the real sandbox: moves run one at a time in the plan's order
under the throttle the brokers report, operator throttles survive, and no acked message is lost.

Each test creates its own topic (RF 2, leader on rack a, follower on rack b) with a few MB of
random data per partition, so that a follower move under a 1 MB/s throttle takes seconds. Plans
are built with the planner's own plan-file code from a live snapshot; moves change followers only
(the leader stays), which keeps the plan valid for the planner's validator.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer
from confluent_kafka import TopicPartition as CTP

from executor.state import MoveState
from executor.throttle import FOLLOWER_RATE, FOLLOWER_REPLICAS, LEADER_RATE, LEADER_REPLICAS
from kafka_rebalance.sandbox.state import SandboxInfo
from planner.result import Move
from tests.integration.executor_support import (
    BrokerConfigs,
    create_topic,
    execute_args,
    layout,
    make_plan,
    move_in,
    rebalance,
    replicas_of,
    scrape,
    start_rebalance,
    state_sequence,
    throttle_configs,
)
from tests.integration.kafka_topics import free_port, wait_for
from topology.kafka_admin import KafkaClusterAdmin
from topology.model import TopicPartition

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("drop_exec_topics")]


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

    # One copy at a time, in the plan's order. The three moves copy from the leader into the
    # spare, so each next one may take both over as the previous copy ends (a 4 MB copy can
    # also end between two polls): it starts after the previous one's copy began, and before
    # that one is done only when it took it over.
    sequence = state_sequence(journal)
    text = (tmp_path / "execute.log").read_text()
    starts = [sequence.index((m.name, "throttling")) for m in moves]
    assert starts == sorted(starts), sequence
    for previous, following in itertools.pairwise(moves):
        next_start = sequence.index((following.name, "throttling"))
        assert sequence.index((previous.name, "copying")) < next_start, sequence
        assert (f"{following.name} takes over from {previous.name} as its copy ends" in text
                or sequence.index((previous.name, "done")) < next_start), sequence
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
    assert_output_for_people(log, moves)
    as_json = rebalance("status", "--journal", str(journal), "--json")
    assert as_json.returncode == 0, as_json.stderr
    doc = json.loads(as_json.stdout)
    assert (doc["state"], doc["moves_done"], doc["moves_total"], doc["eta_seconds"]) == (
        "completed", 3, 3, 0.0), doc
    assert doc["bytes_done"] == doc["bytes_total"] == sum(m.bytes_moved for m in moves), doc
    assert doc["mean_copy_rate_bytes_per_sec"] > 0 and doc["elapsed_seconds"] > 0, doc


def assert_output_for_people(log: str, moves: list[Move]) -> None:
    """The run's log in a pipe: a few lines per move (the gate is sampled every 0.5 s, but
    said only when its verdict changes), rates in human units, and a
    summary against the 1 MB/s cap with a row per move."""
    lines = log.splitlines()
    assert not re.search(r"\d{5,} B/s", log), log  # no raw byte rates
    for move in moves:
        gate = [line for line in lines if f"gate after {move.name}:" in line]
        assert len(gate) <= 6, gate
        assert any(f"{move.name}: copied " in line and "of the cap)" in line
                   for line in lines), log
    assert re.search(r"^run completed after .+: 3 of 3 move\(s\) done", log, re.M), log
    assert re.search(r"^copying took .+ in all: mean [\d.]+ [kM]B/s of the 1\.00 MB/s cap "
                     r"\(\d+%\)$", log, re.M), log
    rows = {cells[1]: cells for cells in (line.split() for line in lines)
            if len(cells) > 2 and cells[0].isdigit() and cells[-1] == "done"}
    assert sorted(rows) == sorted(m.name for m in moves), log


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

