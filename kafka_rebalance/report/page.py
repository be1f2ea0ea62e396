"""One self-contained HTML page from the views: a jinja2 template with every value escaped.

The page loads nothing: styles are inline, charts are inline SVG, and a Content-Security-Policy
(`default-src 'none'`) makes the browser refuse any fetch a future change might add. User and
cluster strings (topic and rack names, reasons, notes) reach the page only through jinja2's
autoescaping; the SVG charts are marked safe because matplotlib escapes the text it writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from kafka_rebalance.report import charts
from kafka_rebalance.report.files import GENERATOR
from kafka_rebalance.report.plan_view import PlanView
from kafka_rebalance.report.run_view import RunView
from topology.units import duration_text, rate_text, size_text


def _environment() -> Environment:
    env = Environment(loader=PackageLoader("kafka_rebalance.report", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["bytes"] = lambda value: size_text(value, compact=True)
    env.filters["rate"] = lambda value: rate_text(value, compact=True)
    env.filters["duration"] = lambda value: duration_text(float(value))
    env.filters["percent"] = lambda value: f"{value:.1%}"
    env.filters["utc"] = _utc
    return env


def _utc(epoch: float | None) -> str:
    if epoch is None:
        return "-"
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


def plan_charts(view: PlanView) -> dict[str, Markup]:
    """The plan's charts as inline SVG, by name."""
    drawn = {f"util_{r.resource.value}": charts.utilization_chart(r) for r in view.resources}
    drawn["flows"] = charts.flow_chart(view.flows)
    drawn["timeline"] = charts.timeline_chart(view.timeline)
    if view.side_by_side is not None and view.side_by_side.moves:
        drawn["timeline_auto"] = charts.timeline_chart(view.side_by_side, "chart-timeline-auto")
    return {name: Markup(svg) for name, svg in drawn.items()}  # matplotlib escapes its text


def run_charts(run: RunView, measured: charts.Series | None) -> dict[str, Markup]:
    """The run's charts as inline SVG, by name."""
    return {"run": Markup(charts.run_chart(run)),
            "rates": Markup(charts.copy_rate_chart(run, measured))}


def render_report(*, title: str, plan: PlanView | None, run: RunView | None = None,
                  measured: charts.Series | None = None, notices: Sequence[str] = (),
                  generated_at: str = "", moves_listed: int = 1000) -> str:
    """The whole page. `notices` are lines about the report itself (e.g. Prometheus was not
    reachable, the plan file does not match the journal)."""
    drawn: Mapping[str, Markup] = {
        **(plan_charts(plan) if plan is not None else {}),
        **(run_charts(run, measured) if run is not None else {})}
    template = _environment().get_template("report.html.j2")
    return template.render(title=title, plan=plan, run=run, charts=drawn,
                           notices=list(notices), generator=GENERATOR,
                           generated_at=generated_at, measured=bool(measured),
                           moves_listed=moves_listed)
