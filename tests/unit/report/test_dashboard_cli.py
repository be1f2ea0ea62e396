"""`rebalance dashboard`: the default dashboard, one for another exporter's names from a
--queries file, and outputs it must not replace."""

from __future__ import annotations

import json
from pathlib import Path

from kafka_rebalance.report.dashboard import queries
from tests.unit.conftest import Rebalance

ROOT = Path(__file__).resolve().parents[3]
STRIMZI = """\
# a JMX exporter with Strimzi-style rules, brokers relabelled node_id
net_in: >-
  sum by (node_id) (rate(kafka_server_brokertopicmetrics_bytesin_total{{{selector}}}[{window}]))
net_out: >-
  sum by (node_id) (rate(kafka_server_brokertopicmetrics_bytesout_total{{{selector}}}[{window}]))
broker_label: node_id
window: 30s
"""


def test_it_prints_the_committed_dashboard(rebalance: Rebalance) -> None:
    code, out = rebalance("dashboard")
    assert code == 0
    assert out == (ROOT / "dashboards" / "kafka-rebalance.json").read_text()


def test_a_queries_file_gives_a_dashboard_of_its_names(rebalance: Rebalance,
                                                       tmp_path: Path) -> None:
    (tmp_path / "queries.yaml").write_text(STRIMZI)
    out = tmp_path / "dash.json"
    code, said = rebalance("dashboard", "--queries", str(tmp_path / "queries.yaml"),
                           "--out", str(out))
    assert code == 0 and "wrote" in said
    exprs = [expr for _, expr in queries(json.loads(out.read_text()))]
    assert ("sum by (node_id) (rate(kafka_server_brokertopicmetrics_bytesin_total"
            '{node_id=~"$broker"}[$window]))') in exprs
    # written again over its own file; a file of something else is kept
    assert rebalance("dashboard", "--out", str(out))[0] == 0
    other = tmp_path / "notes.json"
    other.write_text('{"mine": true}\n')
    code, error = rebalance("dashboard", "--out", str(other))
    assert code == 2 and "is not a dashboard written by rebalance" in error
    assert other.read_text() == '{"mine": true}\n'


def test_a_bad_queries_file_is_refused_and_nothing_is_written(rebalance: Rebalance,
                                                              tmp_path: Path) -> None:
    (tmp_path / "queries.yaml").write_text("net_inn: x\n")
    code, error = rebalance("dashboard", "--queries", str(tmp_path / "queries.yaml"),
                            "--out", str(tmp_path / "dash.json"))
    assert code == 2 and "unknown key(s) ['net_inn']" in error
    assert not (tmp_path / "dash.json").exists()
