"""Request balance on the real cluster: four brokers level in bytes (two topics of equal
partitions and equal bytes, each on its own pair of brokers, leaders alternating), where
producers send one topic many small requests and the other few large ones. A live snapshot
reads the request rates from the brokers' per-topic request meters through Prometheus; the
bytes alone need no move, `plan --request-balance` spreads the chatty topic's leaders over
the other pair; `execute` applies it, and the leaders read back from the brokers serve the
requests more evenly."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic

from kafka_rebalance.files.planfile import read_plan
from kafka_rebalance.sandbox.state import SandboxInfo
from planner.arrays import to_arrays
from planner.goals import Goals
from planner.requests import request_level
from tests.integration.executor_support import execute_args, layout, rebalance
from tests.integration.kafka_topics import create_topics, produce, wait_in_sync
from topology import promql
from topology.kafka_admin import KafkaClusterAdmin
from topology.model import TopicPartition, replace_replicas
from topology.prom_source import PrometheusMetrics
from topology.snapshot import read_snapshot

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("drop_exec_topics")]

CAPACITIES = Path(__file__).parents[2] / "examples" / "sandbox-capacities.yaml"
TOLERANCE = 0.3
SMALL_REQUESTS = 400  # one record each, each acknowledged before the next is sent


def _create(bootstrap: str, topic: str, assignment: list[list[int]]) -> None:
    """An exec- topic (drop_exec_topics deletes it) with this replica assignment, in sync."""
    create_topics(bootstrap, [NewTopic(topic, len(assignment), replica_assignment=assignment)])
    wait_in_sync(bootstrap, topic, len(assignment))


def _chatter(bootstrap: str, topic: str, partitions: int) -> None:
    """SMALL_REQUESTS produce requests of one small record each, round the partitions."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    for n in range(SMALL_REQUESTS):
        producer.produce(topic, value=b"x" * 64, partition=n % partitions)
        assert producer.flush(30) == 0


def _series(metrics: PrometheusMetrics, metric: str, topic: str, fn: str = "") -> float:
    """The topic's series summed (with `fn`, e.g. "rate", over 1m); 0 without any."""
    query = f'sum({fn}({metric}{{topic="{topic}"}}[1m]))' if fn else \
        f'sum({metric}{{topic="{topic}"}})'
    return sum(value for _, value in metrics.query(query))


def _wait(check: Callable[[], bool], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "Prometheus does not show the topics' traffic"
        time.sleep(2)


def _topic_requests(metrics: PrometheusMetrics, topic: str) -> float:
    query = promql.render(promql.TOPIC_REQUESTS_RATE, "1m", f'topic="{topic}"')
    return sum(value for _, value in metrics.query(query))


def test_a_chatty_topics_leaders_are_spread_and_the_brokers_report_it(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    lay = layout(sandbox)
    pairs = {"chatty": (lay.leader, lay.follower), "bulk": (lay.spare_a, lay.spare)}
    names = {}
    for kind, (one, two) in pairs.items():
        names[kind] = f"exec-requests-{kind}-{uuid.uuid4().hex[:8]}"
        _create(sandbox.bootstrap, names[kind], [[one, two], [two, one]] * 2)
        produce(sandbox.bootstrap, names[kind], dict.fromkeys(range(4), 100))
    chatty, bulk = names["chatty"], names["bulk"]
    metrics = PrometheusMetrics(sandbox.prometheus_url)
    # a rate counts what a counter gains after its first scrape: the series first, then the
    # traffic the snapshot reads (the same bytes into both topics, small requests to one)
    _wait(lambda: all(_series(metrics, "kafka_topic_bytes_in_total", t) for t in names.values()))
    for topic in names.values():
        produce(sandbox.bootstrap, topic, dict.fromkeys(range(4), 300))
    _chatter(sandbox.bootstrap, chatty, 4)
    _wait(lambda: all(_series(metrics, "kafka_topic_bytes_in_total", t, "rate") > 0
                      for t in names.values())
          and _topic_requests(metrics, chatty) > 2 * _topic_requests(metrics, bulk))

    snap = tmp_path / "snap.json"
    taken = rebalance("snapshot", "--bootstrap", sandbox.bootstrap, "--prometheus",
                      sandbox.prometheus_url, "--capacities", str(CAPACITIES), "--out", str(snap))
    assert taken.returncode == 0, taken.stdout + taken.stderr
    doc = json.loads(snap.read_text())
    assert any("request rates are per-topic Prometheus rates" in n for n in doc["notes"])
    # this test's topics and brokers only: the shared sandbox's other topics stay
    doc["partitions"] = [p for p in doc["partitions"] if p["topic"] in (chatty, bulk)]
    doc["brokers"] = [b for b in doc["brokers"] if b["id"] in {*pairs["chatty"], *pairs["bulk"]}]
    snap.write_text(json.dumps(doc))
    rates = {p["topic"]: p.get("requests_per_sec", 0.0) for p in doc["partitions"]}
    assert rates[chatty] > rates[bulk], rates  # per partition, many small vs few large

    plain = tmp_path / "plain.json"  # without the goal: the bytes need no move
    planned = rebalance("plan", "--snapshot", str(snap), "--tolerance", "0.5",
                        "--time-limit", "6", "--out", str(plain))
    assert planned.returncode == 0, planned.stdout + planned.stderr
    assert not read_plan(plain).moves, planned.stdout
    plan = tmp_path / "requests.json"
    planned = rebalance("plan", "--snapshot", str(snap), "--request-balance", str(TOLERANCE),
                        "--tolerance", "0.5", "--time-limit", "6", "--out", str(plan))
    assert planned.returncode == 0, planned.stdout + planned.stderr
    assert "Request balance" in planned.stdout, planned.stdout
    made = read_plan(plan)
    assert made.requests is not None and made.moves, planned.stdout
    assert made.requests.after.over_fair < made.requests.before.over_fair, made.requests
    assert made.requests.before.brokers_outside == 4, made.requests  # two at 2x, two idle
    assert made.requests.after.brokers_outside < 4, made.requests
    topology = read_snapshot(snap)
    goals = Goals(tolerance=0.5, request_balance=TOLERANCE)

    run = rebalance(*execute_args(sandbox, plan, tmp_path / "requests.journal"), timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    live = {p.key: p.replicas for p in admin.partitions([chatty, bulk])}
    for move in made.moves:
        assert live[move.key] == move.target, move.name
    leaders = {p.key: p.leader for p in admin.partitions([chatty])}
    assert set(leaders.values()) - set(pairs["chatty"]), leaders  # the other pair leads some
    placed = replace_replicas(topology, {TopicPartition(p.topic, p.partition): live[p.key]
                                         for p in topology.partitions})
    before, after = to_arrays(topology, goals), to_arrays(placed, goals)
    assert (request_level(after, after.replicas, TOLERANCE).over_fair
            < request_level(before, before.replicas, TOLERANCE).over_fair)
