"""A cluster whose exporter names series as Strimzi's rules do: a sandbox started with
`--metric-names strimzi` (kafka_server_brokertopicmetrics_bytesin_total and so on, the broker id
in the label `broker`) runs a move with `execute --queries dashboards/queries-strimzi.yaml`,
and every query of that file, and every broker panel of the dashboard `rebalance dashboard
--queries` builds from it, returns data from the real Prometheus over the run. The sandbox's
own names are checked the same way by test_dashboard_queries. Its brokers keep Kafka's own
replication quota window (11 samples of 1 s), as such a cluster would."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic

from executor.readings import TEMPLATE_KEYS, GateQueries
from kafka_rebalance.report.dashboard import queries as dashboard_queries
from kafka_rebalance.sandbox.state import SandboxInfo
from tests.integration.executor_support import (
    ROOT,
    create_topic,
    execute_args,
    fill,
    has_data,
    make_plan,
    own_sandbox,
    range_query,
    rebalance,
    state_times,
)
from tests.integration.kafka_topics import create_topics
from topology import promql
from topology.kafka_admin import KafkaClusterAdmin

pytestmark = pytest.mark.integration

QUERIES = ROOT / "dashboards" / "queries-strimzi.yaml"
TOPIC = "strimzi-named"
NO_SERIES_HERE = {"consumer_lag"}  # kafka_exporter's series: no such exporter on a sandbox


@pytest.fixture(scope="module")
def strimzi(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxInfo]:
    with own_sandbox(tmp_path_factory, "strimzi-sandbox", 27290, brokers=3, racks=3,
                     metric_names="strimzi", quota_window_samples=None) as info:  # Kafka's 11
        yield info


def _fill(info: SandboxInfo) -> None:
    create_topics(info.bootstrap, [NewTopic(TOPIC, 2, replica_assignment=[[1, 2], [2, 1]])])
    producer = Producer({"bootstrap.servers": info.bootstrap, "acks": "all",
                         "linger.ms": 20})
    for n in range(3000):
        producer.produce(TOPIC, value=b"s" * 1000, partition=n % 2)
        producer.poll(0)
    assert producer.flush(60) == 0


def test_a_strimzi_named_cluster_is_gated_and_drawn_by_its_queries_file(
        strimzi: SandboxInfo, tmp_path: Path) -> None:
    _fill(strimzi)
    queries = GateQueries.from_dict(yaml.safe_load(QUERIES.read_text()), str(QUERIES))
    assert queries.broker_label == "broker"
    plan = tmp_path / "plan.json"
    make_plan(strimzi, plan, [(TOPIC, 0, (3, 2))])
    start = time.time()
    run = rebalance(*execute_args(strimzi, plan, tmp_path / "plan.json.journal", "--queries",
                                  str(QUERIES)), timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    admin = KafkaClusterAdmin(strimzi.bootstrap)
    try:
        assert {p.partition: p.replicas for p in admin.partitions([TOPIC])}[0] == (3, 2)
    finally:
        admin.close()
    time.sleep(3)  # the last scrapes of the run
    end = time.time()

    # every gate and guard query of the file, per broker, over the run
    for key in TEMPLATE_KEYS:
        expr = queries.render(getattr(queries, key))
        found = range_query(strimzi, expr, start - 5, end)
        if key in NO_SERIES_HERE:
            assert found == [], (key, found)
            continue
        assert has_data(found), f"{key}: no data for {expr}"
        if key != "consumer_lag":
            brokers = {s["metric"].get("broker") for s in found}
            assert brokers >= {"1", "2", "3"} or key.startswith(("produce", "fetch")), \
                (key, brokers)
    # the default (sandbox) names find nothing here: the file is what makes it work
    assert range_query(strimzi, promql.render(promql.BROKER_NETWORK_IN_RATE, "10s"),
                  start - 5, end) == []

    # the dashboard built from the same file: every broker panel has data
    board = tmp_path / "dash.json"
    made = rebalance("dashboard", "--queries", str(QUERIES), "--out", str(board))
    assert made.returncode == 0, made.stderr
    # the executor's own series (rebalance_*) exist only with --metrics-port scraped, which
    # test_dashboard_queries covers; here the broker panels
    broker_panels = [(title, expr) for title, expr in dashboard_queries(json.loads(
        board.read_text())) if not re.search(r"(?<![a-z_])rebalance_", expr)]
    assert len(broker_panels) >= 6
    empty = []
    for title, expr in broker_panels:
        filled = fill(expr)
        if "consumergroup" not in filled and not has_data(range_query(strimzi, filled, start - 5,
                                                                  end)):
            empty.append((title, filled))
    assert not empty, empty


def test_a_copy_into_a_broker_that_just_received_one_holds_the_cap(
        strimzi: SandboxInfo, tmp_path: Path) -> None:
    """Kafka measures a replication quota over its window, so a copy into a broker whose window
    still holds an earlier copy's bytes runs at full speed until it has made up the gap: here,
    with --quota-window 3 taken as asked, the second 8 MB copy below took 0.5 s at a 1 MB/s
    cap. The run waits the window the brokers describe (11 s) and says why."""
    first = create_topic(strimzi, "held-first", 1, [1, 2], 4_000_000)
    second = create_topic(strimzi, "held-second", 1, [1, 2], 8_000_000)
    for topic in (first, second):  # each into broker 3, the second just after the first
        plan, journal = tmp_path / f"{topic}.json", tmp_path / f"{topic}.journal"
        make_plan(strimzi, plan, [(topic, 0, (1, 3))])
        run = rebalance(*execute_args(strimzi, plan, journal, "--queries", str(QUERIES),
                                      max_mbps="2", quota_window="3"), timeout=300)
        assert run.returncode == 0, run.stdout + run.stderr
    said = run.stdout + run.stderr
    assert ("--quota-window 3 s is shorter than the replication quota window of broker(s) "
            "1, 2, 3 (11 s") in said, said
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    assert records[0]["settings"]["quota_window_seconds"] == 11.0  # a resume keeps it
    at = state_times(journal)
    moved = f"{second}-0"
    # 8 MB at 2 MB/s: 4 s, less what Kafka lets through before its quota first holds (the
    # first second's share and one 1 MiB fetch)
    assert at[(moved, "verifying")] - at[(moved, "copying")] >= 3.0, at
    admin = KafkaClusterAdmin(strimzi.bootstrap)
    try:
        assert {p.topic: p.replicas for p in admin.partitions([first, second])} == {
            first: (1, 3), second: (1, 3)}
    finally:
        admin.close()
