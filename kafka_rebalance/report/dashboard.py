"""The Grafana dashboard of a run: the executor's own metrics and the broker series its gates
read, generated from the same PromQL templates the gates use (the executor's GateQueries: the
defaults of `topology.promql`, or a --queries file), so the dashboard cannot drift from what
the executor watches, whatever the exporter names its series.

`rebalance dashboard [--queries FILE]` (or `python -m kafka_rebalance.report.dashboard`) prints
it; the repository keeps the default one in dashboards/kafka-rebalance.json (a unit test checks
the two agree).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from executor.readings import GateQueries
from topology import promql

DASHBOARD_UID = "kafka-rebalance"


def is_dashboard_file(path: Path) -> bool:
    """A dashboard this tool wrote: a JSON object with its uid."""
    try:
        doc: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and doc.get("uid") == DASHBOARD_UID


WINDOW_VAR = "$window"
BROKER_VAR = "$broker"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
WINDOWS = ("10s", "30s", "1m", "2m", "5m")
Panel = dict[str, Any]
PanelSpec = tuple[str, str, str, tuple[tuple[str, str], ...]]


# The executor's metrics (executor/exporter.py), served with `execute --metrics-port`.
RUN_PANELS: tuple[PanelSpec, ...] = (
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


def broker_panels(queries: GateQueries) -> tuple[PanelSpec, ...]:
    """The broker series the gates and --adaptive read, and the copy traffic against the cap,
    each a gate template whose rate window and broker choice are the dashboard's variables."""
    label = queries.broker_label
    legend = f"broker {{{{{label}}}}}"

    def per_broker(template: str) -> tuple[tuple[str, str], ...]:
        expr = promql.render(template, window=WINDOW_VAR, selector=f'{label}=~"{BROKER_VAR}"')
        return ((expr, legend),)

    return (
        ("Network in per broker (gate: back near baseline)", "Bps", "timeseries",
         per_broker(queries.net_in)),
        ("Network out per broker (gate: back near baseline)", "Bps", "timeseries",
         per_broker(queries.net_out)),
        ("Reassignment bytes in per broker against the cap", "Bps", "timeseries",
         (*per_broker(queries.reassignment_in), CAP)),
        ("Reassignment bytes out per broker against the cap", "Bps", "timeseries",
         (*per_broker(queries.reassignment_out), CAP)),
        ("Client traffic in per broker (--adaptive headroom)", "Bps", "timeseries",
         per_broker(queries.traffic_in)),
        ("Client traffic out per broker (--adaptive headroom)", "Bps", "timeseries",
         per_broker(queries.traffic_out)),
        ("Under-replicated partitions (gate: none besides the moves)", "short", "timeseries",
         per_broker(queries.under_replicated)),
        ("Produce p99 latency (gate: --produce-p99-max-ms; SLO guard)", "ms", "timeseries",
         per_broker(queries.produce_p99_ms)),
        ("Consumer fetch p99 latency (SLO guard)", "ms", "timeseries",
         per_broker(queries.fetch_p99_ms)),
        ("Log flush p95 latency (SLO guard)", "ms", "timeseries",
         per_broker(queries.flush_p95_ms)),
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


def _variables(queries: GateQueries) -> list[dict[str, Any]]:
    windows = list(WINDOWS) if queries.window in WINDOWS else [queries.window, *WINDOWS]
    chosen = "1m" if queries.window == GateQueries().window else queries.window
    broker_values = f"label_values({queries.broker_label})"
    return [
        {"name": "datasource", "label": "Prometheus", "type": "datasource",
         "query": "prometheus"},
        {"name": "window", "label": "rate window (the gate's: --rate-window)", "type": "custom",
         "query": ",".join(windows), "current": {"text": chosen, "value": chosen},
         "options": [{"text": w, "value": w, "selected": w == chosen} for w in windows]},
        {"name": "broker", "label": "broker", "type": "query", "datasource": DATASOURCE,
         "definition": broker_values, "query": {"query": broker_values, "refId": "brokers"},
         "multi": True, "includeAll": True, "allValue": ".*", "refresh": 2, "sort": 3,
         "current": {"text": "All", "value": "$__all"}},
    ]


def dashboard(queries: GateQueries | None = None) -> dict[str, Any]:
    """The dashboard as Grafana's JSON model (import it, or provision it from a file), over
    `queries` (the executor's defaults when None)."""
    queries = queries or GateQueries()
    panels: list[Panel] = []
    y = 0
    for title, group in (("Run: the executor's own metrics (execute --metrics-port)",
                          RUN_PANELS),
                         ("Brokers: the series the gates read", broker_panels(queries))):
        panels.append(_row(len(panels) + 1, title, y))
        y += 1
        for index, (name, unit, kind, targets) in enumerate(group):
            panels.append(_panel(len(panels) + 1, name, unit, kind, targets,
                                 12 * (index % 2), y + 8 * (index // 2)))
        y += 8 * ((len(group) + 1) // 2)
    return {
        "uid": DASHBOARD_UID, "title": "kafka-rebalance: run and gates",
        "description": "A throttled partition rebalance: the executor's progress, its gates' "
                       "broker series, and the copy traffic against the throttle cap.",
        "tags": ["kafka", "rebalance"], "editable": True, "schemaVersion": 39, "version": 1,
        "time": {"from": "now-1h", "to": "now"}, "refresh": "10s", "timezone": "",
        "templating": {"list": _variables(queries)}, "annotations": {"list": []}, "links": [],
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
    sys.stdout.write(to_json(dashboard()))  # the default: dashboards/kafka-rebalance.json


if __name__ == "__main__":
    main()
