"""The Grafana dashboard of a run: the executor's own metrics and the broker series its gates
read, generated from the same PromQL templates the gates use (`topology.promql`), so the
dashboard cannot drift from what the executor watches.

`python -m kafka_rebalance.report.dashboard` prints it; the repository keeps the output in
dashboards/kafka-rebalance.json (a unit test checks the two agree).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from topology import promql

DASHBOARD_UID = "kafka-rebalance"
WINDOW_VAR = "$window"
BROKER_VAR = "$broker"
BROKER_SELECTOR = 'broker_id=~"$broker"'
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
Panel = dict[str, Any]


def broker_query(template: str) -> str:
    """A gate template for the dashboard: its rate window and broker choice are variables."""
    return promql.render(template, window=WINDOW_VAR, selector=BROKER_SELECTOR)


# The executor's metrics (executor/exporter.py), served with `execute --metrics-port`.
RUN_PANELS: tuple[tuple[str, str, str, tuple[tuple[str, str], ...]], ...] = (
    ("Moves by state", "short", "timeseries",
     (("sum by (state) (rebalance_moves)", "{{state}}"),
      ("max(rebalance_plan_moves)", "moves in the plan"))),
    ("Moves done", "percentunit", "stat",
     (('sum(rebalance_moves{state="done"}) / max(rebalance_plan_moves)', "done"),)),
    ("Bytes on the new replicas of the move in flight", "bytes", "timeseries",
     (("rebalance_move_copied_bytes", "{{move}}"),)),
    ("Gate waiting after a move (1 = waiting or holding)", "short", "timeseries",
     (("max(rebalance_gate_waiting)", "gate waiting"),)),
    ("Polls held: metrics unavailable", "short", "timeseries",
     ((f"sum(increase(rebalance_holds_total[{WINDOW_VAR}]))", "holds"),)),
    ("Throttle cap (--max-mbps)", "Bps", "stat",
     (("max(rebalance_throttle_cap_bytes_per_second)", "cap"),)),
    ("SLO guard: rate ceiling per broker", "Bps", "timeseries",
     (("rebalance_slo_guard_level_bytes_per_second", "broker {{broker}}"),
      ("max(rebalance_throttle_cap_bytes_per_second)", "cap (--max-mbps)"))),
    ("SLO guard decisions", "short", "timeseries",
     ((f"sum by (action) (increase(rebalance_slo_guard_decisions_total[{WINDOW_VAR}]))",
       "{{action}}"),)),
)

CAP = ("max(rebalance_throttle_cap_bytes_per_second)", "cap (--max-mbps)")

# The broker series the gates and --adaptive read, and the copy traffic against the cap.
BROKER_PANELS: tuple[tuple[str, str, str, tuple[tuple[str, str], ...]], ...] = (
    ("Network in per broker (gate: back near baseline)", "Bps", "timeseries",
     ((broker_query(promql.BROKER_NETWORK_IN_RATE), "broker {{broker_id}}"),)),
    ("Network out per broker (gate: back near baseline)", "Bps", "timeseries",
     ((broker_query(promql.BROKER_NETWORK_OUT_RATE), "broker {{broker_id}}"),)),
    ("Reassignment bytes in per broker against the cap", "Bps", "timeseries",
     ((broker_query(promql.BROKER_REASSIGNMENT_IN_RATE), "broker {{broker_id}}"), CAP)),
    ("Reassignment bytes out per broker against the cap", "Bps", "timeseries",
     ((broker_query(promql.BROKER_REASSIGNMENT_OUT_RATE), "broker {{broker_id}}"), CAP)),
    ("Client traffic in per broker (--adaptive headroom)", "Bps", "timeseries",
     ((broker_query(promql.BROKER_CLIENT_IN_RATE), "broker {{broker_id}}"),)),
    ("Client traffic out per broker (--adaptive headroom)", "Bps", "timeseries",
     ((broker_query(promql.BROKER_CLIENT_OUT_RATE), "broker {{broker_id}}"),)),
    ("Under-replicated partitions (gate: none besides the moves)", "short", "timeseries",
     ((broker_query(promql.UNDER_REPLICATED_PARTITIONS), "broker {{broker_id}}"),)),
    ("Produce p99 latency (gate: --produce-p99-max-ms; SLO guard)", "ms", "timeseries",
     ((broker_query(promql.PRODUCE_P99_MS), "broker {{broker_id}}"),)),
    ("Consumer fetch p99 latency (SLO guard)", "ms", "timeseries",
     ((broker_query(promql.FETCH_CONSUMER_P99_MS), "broker {{broker_id}}"),)),
    ("Log flush p95 latency (SLO guard)", "ms", "timeseries",
     ((broker_query(promql.LOG_FLUSH_P95_MS), "broker {{broker_id}}"),)),
)


def _panel(panel_id: int, title: str, unit: str, kind: str,
           queries: Sequence[tuple[str, str]], x: int, y: int) -> Panel:
    return {
        "id": panel_id, "type": kind, "title": title, "datasource": DATASOURCE,
        "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom"}}
        if kind == "timeseries" else {"reduceOptions": {"calcs": ["lastNotNull"]}},
        "targets": [{"refId": chr(ord("A") + index), "datasource": DATASOURCE, "expr": expr,
                     "legendFormat": legend}
                    for index, (expr, legend) in enumerate(queries)],
    }


def _row(panel_id: int, title: str, y: int) -> Panel:
    return {"id": panel_id, "type": "row", "title": title, "collapsed": False,
            "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}, "panels": []}


def _variables() -> list[dict[str, Any]]:
    windows = ["10s", "30s", "1m", "2m", "5m"]
    broker_values = "label_values(kafka_broker_bytes_in_total, broker_id)"
    return [
        {"name": "datasource", "label": "Prometheus", "type": "datasource",
         "query": "prometheus"},
        {"name": "window", "label": "rate window (the gate's: --rate-window)", "type": "custom",
         "query": ",".join(windows), "current": {"text": "1m", "value": "1m"},
         "options": [{"text": w, "value": w, "selected": w == "1m"} for w in windows]},
        {"name": "broker", "label": "broker", "type": "query", "datasource": DATASOURCE,
         "definition": broker_values, "query": {"query": broker_values, "refId": "brokers"},
         "multi": True, "includeAll": True, "allValue": ".*", "refresh": 2, "sort": 3,
         "current": {"text": "All", "value": "$__all"}},
    ]


def dashboard() -> dict[str, Any]:
    """The dashboard as Grafana's JSON model (import it, or provision it from a file)."""
    panels: list[Panel] = []
    y = 0
    for title, group in (("Run: the executor's own metrics (execute --metrics-port)",
                          RUN_PANELS),
                         ("Brokers: the series the gates read", BROKER_PANELS)):
        panels.append(_row(len(panels) + 1, title, y))
        y += 1
        for index, (name, unit, kind, queries) in enumerate(group):
            panels.append(_panel(len(panels) + 1, name, unit, kind, queries,
                                 12 * (index % 2), y + 8 * (index // 2)))
        y += 8 * ((len(group) + 1) // 2)
    return {
        "uid": DASHBOARD_UID, "title": "kafka-rebalance: run and gates",
        "description": "A throttled partition rebalance: the executor's progress, its gates' "
                       "broker series, and the copy traffic against the throttle cap.",
        "tags": ["kafka", "rebalance"], "editable": True, "schemaVersion": 39, "version": 1,
        "time": {"from": "now-1h", "to": "now"}, "refresh": "10s", "timezone": "",
        "templating": {"list": _variables()}, "annotations": {"list": []}, "links": [],
        "panels": panels,
    }


def queries(model: dict[str, Any]) -> list[tuple[str, str]]:
    """(panel title, expr) of every query of a dashboard model, rows' panels included."""
    found: list[tuple[str, str]] = []
    for panel in model.get("panels", []):
        for inner in [panel, *panel.get("panels", [])]:
            found.extend((str(inner.get("title", "")), str(target["expr"]))
                         for target in inner.get("targets", []) if "expr" in target)
    return found


def to_json(model: dict[str, Any]) -> str:
    return json.dumps(model, indent=2, sort_keys=True) + "\n"


def main() -> None:
    sys.stdout.write(to_json(dashboard()))


if __name__ == "__main__":
    main()
