"""The Grafana dashboard in the repository: generated from the gates' own PromQL templates, and
naming only metrics the executor exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client import CollectorRegistry

from executor.config import Event, EventKind
from executor.exporter import ExecutorMetrics
from executor.readings import GateQueries
from kafka_rebalance.report.dashboard import (
    BROKER_VAR,
    WINDOW_VAR,
    dashboard,
    queries,
    to_json,
)
from topology import promql

ROOT = Path(__file__).resolve().parents[3]
DASHBOARD = ROOT / "dashboards" / "kafka-rebalance.json"


def test_the_committed_dashboard_is_the_generated_one() -> None:
    assert DASHBOARD.read_text() == to_json(dashboard()), (
        "dashboards/kafka-rebalance.json is stale: regenerate it with "
        "`python -m kafka_rebalance.report.dashboard > dashboards/kafka-rebalance.json`")


def test_every_executor_metric_it_names_is_exported() -> None:
    registry = CollectorRegistry()
    metrics = ExecutorMetrics(registry, 1_000_000)
    metrics(Event(EventKind.STATE, "", "t-0", 1, 2, state="copying"))
    metrics(Event(EventKind.PROGRESS, "", "t-0", 1, 2, bytes_done=10))
    metrics(Event(EventKind.HOLD, "held"))
    metrics(Event(EventKind.GUARD, "lowered", state="lowered", broker=2, rate=500_000))
    exported = {s.name for family in registry.collect() for s in family.samples}
    named = {name for _, expr in queries(dashboard())
             for name in re.findall(r"\brebalance_\w+", expr)}
    assert named and named <= exported, named - exported
    families = {family.name for family in registry.collect()}
    assert {n.removesuffix("_total") for n in named} >= families  # every one is shown


def test_it_shows_every_series_the_gates_read() -> None:
    exprs = {expr for _, expr in queries(dashboard())}
    gate = GateQueries()
    selector = f'broker_id=~"{BROKER_VAR}"'
    for template in (gate.net_in, gate.net_out, gate.traffic_in, gate.traffic_out,
                     gate.produce_p99_ms, gate.fetch_p99_ms, gate.flush_p95_ms,
                     gate.under_replicated, promql.BROKER_REASSIGNMENT_IN_RATE):
        assert promql.render(template, window=WINDOW_VAR, selector=selector) in exprs


def test_a_queries_file_names_the_series_and_the_broker_label() -> None:
    """Another exporter's names (a JMX exporter with Strimzi-style rules, brokers labelled
    node_id): every broker panel queries them, and the broker variable reads that label."""
    other = GateQueries.from_dict({
        "net_in": "sum by (node_id) (rate(kafka_server_brokertopicmetrics_bytesin_total"
                  "{{{selector}}}[{window}]))",
        "net_out": "sum by (node_id) (rate(kafka_server_brokertopicmetrics_bytesout_total"
                   "{{{selector}}}[{window}]))",
        "reassignment_out": "sum by (node_id) (rate("
                            "kafka_server_brokertopicmetrics_reassignmentbytesout_total"
                            "{{{selector}}}[{window}]))",
        "broker_label": "node_id", "window": "30s"}, "test")
    model = dashboard(other)
    exprs = [expr for _, expr in queries(model)]
    assert ('sum by (node_id) (rate(kafka_server_brokertopicmetrics_bytesin_total'
            '{node_id=~"$broker"}[$window]))') in exprs
    assert any("reassignmentbytesout_total" in e for e in exprs)
    assert not any('broker_id=~"$broker"' in e for e in exprs)  # the label chooses brokers
    variables = {v["name"]: v for v in model["templating"]["list"]}
    assert variables["broker"]["definition"] == "label_values(node_id)"
    assert variables["window"]["current"]["value"] == "30s"
    legends = {t["legendFormat"] for p in model["panels"] for t in p.get("targets", [])}
    assert "broker {{node_id}}" in legends


def test_variables_are_defined_and_ids_unique() -> None:
    model = json.loads(DASHBOARD.read_text())
    defined = {f"${v['name']}" for v in model["templating"]["list"]}
    for title, expr in queries(model):
        used = set(re.findall(r"\$\{?\w+", expr))
        assert used <= defined, (title, used - defined)
    ids = [p["id"] for p in model["panels"]]
    assert len(ids) == len(set(ids))
    for panel in model["panels"]:
        refs = [t["refId"] for t in panel.get("targets", [])]
        assert len(refs) == len(set(refs)), panel["title"]
    cells = set()
    for panel in model["panels"]:
        grid = panel["gridPos"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, ("panels overlap", panel["title"])
                cells.add((x, y))
