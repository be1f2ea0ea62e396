"""The report's charts, drawn with matplotlib into static SVG (no script, no network).

Figures are built with the object API (`matplotlib.figure.Figure`, no pyplot state) and saved
as SVG with text kept as text (`svg.fonttype: none`, small and selectable) and a hash salt per
chart, so that element ids are stable across runs and unique within one page. Collections with
thousands of bars are rasterized inside the SVG (one embedded image instead of thousands of
paths), which keeps a 5,000-move report small.
"""

from __future__ import annotations

import functools
import io
import itertools
import math
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ParamSpec

import numpy as np
from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator, MultipleLocator, PercentFormatter

from executor.schedule import Schedule
from kafka_rebalance.report.plan_view import BrokerUtilization, FlowMatrix, ResourceView
from kafka_rebalance.report.run_view import Phase, RunView
from topology.model import Resource
from topology.units import duration_text, size_text

BEFORE, AFTER, BAND, TARGET = "#a0aec0", "#2b6cb0", "#9ae6b4", "#dd6b20"
CAP, COPY, MEASURED, GUARD = "#c53030", "#2b6cb0", "#38a169", "#d69e2e"
PHASE_COLOURS = {Phase.PREPARING: "#cbd5e0", Phase.COPYING: "#3182ce",
                 Phase.FINISHING: "#805ad5", Phase.GATE: "#ecc94b",
                 Phase.CANCELLING: "#e53e3e"}
RASTERIZE_ABOVE = 400  # bars; more are drawn as one embedded image
# Full-width charts are drawn FIG_WIDTH inches wide with text of at least 8 points: the page
# shows them at its width (up to 1200 px), so at a window of 900 px a point of text is about
# 1.3 px and every label stays at least 10 px high.
FIG_WIDTH = 9.0
UTIL_PER_ROW = 16  # brokers per row of a utilization chart
# With more brokers than three such rows, one strip: a dot per broker before and after, and
# only the notable brokers named (new, removed, offline, or outside their band after the plan).
UTIL_STRIP_ABOVE = 3 * UTIL_PER_ROW
STRIP_NAMED = 16  # brokers named on a strip at most
CHAR_INCHES = 0.065  # the width of a character of MIN_POINTS text, a little generous
MIN_POINTS = 8.0  # the smallest text of a chart
LANES_NAMED = 24  # receiving brokers named on a timeline; with more, every k-th
STYLE: dict[Any, Any] = {"font.size": 9.0, "axes.labelsize": 9.0, "axes.titlesize": 9.5,
         "xtick.labelsize": 8.5, "ytick.labelsize": 8.5, "legend.fontsize": 8.5}
LABEL_CHARS = 24
Series = Mapping[int, Sequence[tuple[float, float]]]
P = ParamSpec("P")


def _styled(draw: Callable[P, str]) -> Callable[P, str]:
    """Draw a chart with the report's text sizes (matplotlib reads them as text is made)."""
    @functools.wraps(draw)
    def styled(*args: P.args, **kwargs: P.kwargs) -> str:
        with rc_context(STYLE):
            return draw(*args, **kwargs)
    return styled


def label(text: str) -> str:
    """A user string as matplotlib text: `$` would start mathtext, long names are cut."""
    short = text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "\u2026"
    return short.replace("$", r"\$")


def to_svg(fig: Figure, chart_id: str) -> str:
    """The figure as an inline <svg> element (no XML prolog, no DOCTYPE)."""
    buffer = io.StringIO()
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": f"kafka-rebalance-{chart_id}"}), \
            warnings.catch_warnings():
        # svg.fonttype none keeps text as text: the browser draws a rack named in any script,
        # so matplotlib's own font lacking its glyphs is no news for the operator's terminal
        warnings.filterwarnings("ignore", message="Glyph .* missing from font")
        warnings.filterwarnings("ignore", message="constrained_layout not applied")
        fig.savefig(buffer, format="svg", bbox_inches="tight", dpi=100,
                    metadata={"Date": None, "Creator": "kafka-rebalance"})
    text = buffer.getvalue()
    svg = _scoped_ids(text[text.find("<svg"):], chart_id)
    return svg.replace("<svg ", f'<svg id="{chart_id}" role="img" ', 1)


_ID_USE = re.compile(r'(\bid="|url\(#|href="#)([^")]+)')


def _scoped_ids(svg: str, prefix: str) -> str:
    """Every element id in `svg` (and every reference to one) prefixed with the chart's id:
    matplotlib names groups figure_1, axes_1, ... in every figure, and ids must be unique in
    the page."""
    return _ID_USE.sub(lambda m: f"{m.group(1)}{prefix}-{m.group(2)}", svg)


# Tick steps for time axes: round seconds, minutes, hours and days.
_TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
               43200, 86400, 172800, 604800)


def time_step(span_seconds: float, ticks: int = 8) -> float:
    """The smallest round step that puts at most `ticks` ticks on `span_seconds`."""
    for step in _TIME_STEPS:
        if span_seconds / step <= ticks:
            return float(step)
    return float(math.ceil(span_seconds / ticks / _TIME_STEPS[-1]) * _TIME_STEPS[-1])




def _duration_axis(axis: Axes, span_seconds: float) -> None:
    axis.xaxis.set_major_formatter(
        FuncFormatter(lambda value, _pos: duration_text(value, compact=True)))
    axis.xaxis.set_major_locator(MultipleLocator(time_step(span_seconds)))


def _bytes_axis(axis: Axes, suffix: str = "B") -> None:
    axis.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: size_text(v, suffix, compact=True)))


def _bars(axis: Axes, rows: Sequence[float], lefts: Sequence[float],
          widths: Sequence[float], colour: str, height: float = 0.8) -> None:
    """Horizontal bars as one collection (fast for thousands; rasterized when many)."""
    if not rows:
        return
    y = np.asarray(rows, dtype=float)
    x0 = np.asarray(lefts, dtype=float)
    x1 = x0 + np.maximum(np.asarray(widths, dtype=float), 0.0)
    half = height / 2
    verts = np.stack([np.column_stack([x0, y - half]), np.column_stack([x0, y + half]),
                      np.column_stack([x1, y + half]), np.column_stack([x1, y - half])],
                     axis=1)
    bars = PolyCollection(list(verts), facecolors=colour, edgecolors=colour, linewidths=0.3)
    bars.set_rasterized(len(rows) > RASTERIZE_ABOVE)
    axis.add_collection(bars)


def _rack_labels(axis: Axes, racks: Sequence[str]) -> None:
    """Rack names above each group of bars and a line between groups."""
    start = 0
    transform = axis.get_xaxis_transform()
    for index in range(1, len(racks) + 1):
        if index < len(racks) and racks[index] == racks[start]:
            continue
        if start > 0:
            axis.axvline(start - 0.5, color="#4a5568", linewidth=0.8)
        axis.text((start + index - 1) / 2, 1.01, label(racks[start]), transform=transform,
                  ha="center", va="bottom", fontsize=MIN_POINTS + 0.5, color="#2d3748")
        start = index


def _rows_of(racks: Sequence[str], per_row: int) -> list[range]:
    """Brokers (by position, grouped by rack) cut into rows of at most `per_row`: a rack
    stays on one row when it fits, a larger one fills rows of its own, of near-equal sizes."""
    groups: list[range] = []
    start = 0
    for index in range(1, len(racks) + 1):
        if index == len(racks) or racks[index] != racks[start]:
            pieces = math.ceil((index - start) / per_row)  # of near-equal sizes
            cuts = [start + (index - start) * k // pieces for k in range(pieces + 1)]
            groups.extend(range(a, b) for a, b in itertools.pairwise(cuts))
            start = index
    rows: list[range] = []
    for group in groups:
        if rows and len(rows[-1]) + len(group) <= per_row:
            rows[-1] = range(rows[-1].start, group.stop)
        else:
            rows.append(group)
    return rows


def _amount_unit(amounts: Sequence[float], unit: str) -> tuple[float, str]:
    """(divisor, unit label) that writes the largest amount under 1000: (1e9, 'GB')."""
    peak = max(amounts, default=0.0)
    for exponent, prefix in ((12, "T"), (9, "G"), (6, "M"), (3, "k")):
        if peak >= 10.0 ** exponent:
            return 10.0 ** exponent, f"{prefix}{unit}"
    return 1.0, unit


def _amount(value: float) -> str:
    return f"{value:.1f}" if value < 99.95 else f"{value:.0f}"


def _band_of(view: ResourceView, broker: BrokerUtilization) -> tuple[float, float]:
    """The band a broker is held to after the plan: its target +/- the tolerance where the
    hard rules force targets, else the average's."""
    if view.forced and broker.target is not None:
        return broker.target * (1 - view.tolerance), broker.target * (1 + view.tolerance)
    return view.band


def _strip_name(broker: BrokerUtilization) -> str:
    return f"{broker.broker_id}" + (f" {broker.role}" if broker.role else "")


def _notable(view: ResourceView, inches_per_broker: float) -> list[int]:
    """Positions of the brokers a strip names: the new, removed and offline ones, then those
    outside their band after the plan (the farthest first); at most STRIP_NAMED, and none
    whose name would touch a name already placed (the one that matters more keeps it)."""
    def distance(broker: BrokerUtilization) -> float:
        lo, hi = _band_of(view, broker)
        return max(lo - broker.after, broker.after - hi, 0.0)

    def half_width(index: int) -> float:
        return len(_strip_name(view.brokers[index])) * CHAR_INCHES / 2 + 0.05

    ranked = sorted(range(len(view.brokers)), key=lambda i: (
        not view.brokers[i].role, -distance(view.brokers[i]), i))
    named: list[int] = []
    for index in ranked:
        broker = view.brokers[index]
        if distance(broker) <= 1e-9 and not broker.role:
            break  # the rest are inside their band and plain
        if all(abs(index - other) * inches_per_broker >= half_width(index) + half_width(other)
               for other in named):
            named.append(index)
        if len(named) == STRIP_NAMED:
            break
    return sorted(named)


def _goal(ax: Axes, view: ResourceView, shown: Sequence[BrokerUtilization], width: float,
          legend: bool, target_lines: bool) -> None:
    """What the brokers are held to: the band around the average after the plan or, where the
    hard rules force them, each broker's target +/- the tolerance (a bar `width` wide, with a
    line at the target when `target_lines`) and the average as a line out of reach. Legend
    labels only when `legend` (the first row of a chart)."""
    if view.forced:  # the hard rules keep brokers off the average: targets are the goal
        ax.axhline(view.average_after, color="#4a5568", linewidth=1, linestyle="--",
                   label="cluster average (out of reach)" if legend else None)
        tx = np.array([i for i, b in enumerate(shown) if b.target is not None], dtype=float)
        ty = np.array([b.target for b in shown if b.target is not None], dtype=float)
        ax.bar(tx, 2 * ty * view.tolerance, width, bottom=ty * (1 - view.tolerance),
               color=TARGET, alpha=0.22, zorder=0,
               label=f"target \u00b1{view.tolerance:.0%}" if legend else None)
        if target_lines:
            ax.hlines(ty, tx - width / 2, tx + width / 2, color=TARGET, linewidth=1.5)
    else:
        lo, hi = view.band
        ax.axhspan(lo, hi, color=BAND, alpha=0.35, zorder=0,
                   label=f"average after \u00b1{view.tolerance:.0%}" if legend else None)
        ax.axhline(view.average_after, color="#276749", linewidth=1, linestyle="--")


def _utilization_strip(view: ResourceView) -> str:
    """Many brokers on one strip: a dot per broker before and after (grouped by rack), the
    band or the targets, and the notable brokers named."""
    brokers = view.brokers
    height = 3.6
    fig = Figure(figsize=(FIG_WIDTH, height))
    fig.subplots_adjust(left=0.09, right=0.99, top=1 - 0.75 / height, bottom=0.7 / height)
    ax = fig.subplots()
    x = np.arange(len(brokers), dtype=float)
    ax.scatter(x, [b.before for b in brokers], s=9, color=BEFORE, label="before", zorder=2)
    ax.scatter(x, [b.after for b in brokers], s=11, color=AFTER, label="after", zorder=3)
    _goal(ax, view, brokers, 1.0, legend=True, target_lines=False)
    peak = max([b.before for b in brokers] + [b.after for b in brokers]
               + [_band_of(view, b)[1] for b in brokers] + [0.01])
    inches_per_broker = FIG_WIDTH * 0.9 / max(len(brokers), 1)
    for index in _notable(view, inches_per_broker):
        broker = brokers[index]
        name = _strip_name(broker)
        reach = len(name) * CHAR_INCHES / 2 / inches_per_broker  # half a name, in brokers
        align = ("left" if index < reach else "right" if index > len(brokers) - 1 - reach
                 else "center")  # a name at an end stays inside the plot
        ax.annotate(label(name), (index, broker.after), xytext=(0, 5),
                    textcoords="offset points", ha=align, va="bottom", fontsize=MIN_POINTS,
                    color="#1a202c")
    ax.set_xlim(-1, len(brokers))
    ax.set_ylim(0, peak * 1.15)
    ax.set_xticks([])
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylabel(f"{view.title} utilization")
    _rack_labels(ax, [b.rack for b in brokers])
    ax.grid(axis="y", linewidth=0.3)
    ax.set_xlabel(f"{len(brokers)} brokers, by rack; named: new, removed or offline ones, and "
                  "those outside their band after the plan")
    fig.legend(loc="upper center", bbox_to_anchor=(0.5, 1.0), ncols=4, frameon=False)
    return to_svg(fig, f"chart-util-{view.resource.value}")


@_styled
def utilization_chart(view: ResourceView) -> str:
    """Every broker's utilization before and after, grouped by rack, with the band around
    the average after the plan and, where the hard rules force them, the targets. Below each
    broker's id, its absolute amount after the plan; large clusters wrap into rows of
    UTIL_PER_ROW brokers so that labels stay readable at a page width of 900 px, and more
    than UTIL_STRIP_ABOVE brokers are drawn as one strip of dots (`_utilization_strip`)."""
    brokers = view.brokers
    if len(brokers) > UTIL_STRIP_ABOVE:
        return _utilization_strip(view)
    rows = _rows_of([b.rack for b in brokers], UTIL_PER_ROW) or [range(0)]
    slots = max(len(r) for r in rows)
    height = 1.2 + 2.6 * len(rows)  # inches: the legend on top, a row of bars per 2.6 in
    fig = Figure(figsize=(FIG_WIDTH, height))
    # fixed margins (a constrained layout measures every label again for each of many rows)
    fig.subplots_adjust(left=0.09, right=0.99, top=1 - 0.55 / height, bottom=0.75 / height,
                        hspace=0.42)
    axes = np.atleast_1d(fig.subplots(len(rows), 1, sharey=True, squeeze=False)).ravel()
    unit = "B" if view.resource is Resource.DISK else "B/s"
    divisor, unit_label = _amount_unit([b.amount_after for b in brokers], unit)
    peak = max([b.before for b in brokers] + [b.after for b in brokers]
               + [b.target * (1 + view.tolerance) for b in brokers if b.target is not None]
               + [view.band[1], 0.01])
    for number, (ax, row) in enumerate(zip(axes, rows, strict=True)):
        shown = [brokers[i] for i in row]
        x = np.arange(len(shown))
        first = number == 0
        ax.bar(x - 0.2, [b.before for b in shown], 0.4, color=BEFORE,
               label="before" if first else None)
        ax.bar(x + 0.2, [b.after for b in shown], 0.4, color=AFTER,
               label="after" if first else None)
        _goal(ax, view, shown, 0.92, legend=first, target_lines=True)
        ax.set_xticks(x, [label(f"{b.broker_id}\n{_amount(b.amount_after / divisor)}"
                                + (f"\n{b.role}" if b.role else "")) for b in shown])
        ax.set_xlim(-0.6, slots - 0.4)
        ax.set_ylim(0, peak * 1.08)
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
        ax.set_ylabel(f"{view.title} utilization")
        _rack_labels(ax, [b.rack for b in shown])
        ax.grid(axis="y", linewidth=0.3)
    axes[-1].set_xlabel(f"broker (rack above); under its id, its {view.title} after the plan "
                        f"in {unit_label}")
    fig.legend(loc="upper center", bbox_to_anchor=(0.5, 1.0), ncols=4, frameon=False)
    return to_svg(fig, f"chart-util-{view.resource.value}")


@_styled
def flow_chart(flows: FlowMatrix) -> str:
    """A heatmap of bytes from each source (row) to each receiving broker (column); with
    more brokers than readable ticks, every k-th broker is named."""
    n = len(flows.broker_ids)
    side = min(FIG_WIDTH - 1.6, max(4.5, 0.3 * n + 2.5))
    fig = Figure(figsize=(side + 1.6, side))
    ax = fig.add_subplot()
    cells = np.array(flows.bytes, dtype=float).reshape(n, n)
    shown = np.ma.masked_where(cells <= 0, cells)
    image = ax.imshow(shown, cmap="Blues", vmin=0, vmax=max(float(cells.max(initial=0)), 1.0),
                      interpolation="nearest")
    names = [label(f"{b} {r}") for b, r in zip(flows.broker_ids, flows.racks, strict=True)]
    spacing = (side - 2.0) * 72 / max(n, 1)  # points between two ticks
    every = max(1, math.ceil(MIN_POINTS / spacing))
    ticks = np.arange(0, n, every)
    ax.set_xticks(ticks, [names[i] for i in ticks], rotation=90)
    ax.set_yticks(ticks, [names[i] for i in ticks])
    ax.set_xlabel("receives a new replica (broker, rack)"
                  + (f"; one broker in {every} named" if every > 1 else ""))
    ax.set_ylabel("sends it: the partition's leader")
    for index in range(1, n):
        if flows.racks[index] != flows.racks[index - 1]:
            ax.axvline(index - 0.5, color="#4a5568", linewidth=0.8)
            ax.axhline(index - 0.5, color="#4a5568", linewidth=0.8)
    peak = float(cells.max(initial=0))
    divisor, unit = _amount_unit([peak], "B")
    numbered = spacing >= 2.6 * MIN_POINTS  # room for a number in each cell
    if numbered:
        for (row, col), value in np.ndenumerate(cells):
            if value > 0:
                ax.text(col, row, _amount(value / divisor), ha="center", va="center",
                        fontsize=MIN_POINTS, color="white" if value > 0.6 * peak else "#1a202c")
    bar = fig.colorbar(image, ax=ax, shrink=0.8)
    bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: size_text(v, compact=True)))
    if numbered:
        bar.set_label(f"bytes (numbers in the cells: {unit})")
    return to_svg(fig, "chart-flows")


def _lanes(moves: Iterable[tuple[float, float, tuple[int, ...]]]) -> tuple[
    list[int], list[float], list[float], list[float]
]:
    """(brokers in lane order, rows, lefts, widths) of copy bars, one lane per receiver."""
    items = list(moves)
    brokers = sorted({b for _, _, targets in items for b in targets})
    lane = {b: i for i, b in enumerate(brokers)}
    rows, lefts, widths = [], [], []
    for start, end, targets in items:
        for broker in targets:
            rows.append(float(lane[broker]))
            lefts.append(start)
            widths.append(end - start)
    return brokers, rows, lefts, widths


@_styled
def timeline_chart(timeline: Schedule, chart_id: str = "chart-timeline") -> str:
    """Bytes copied over time at the review's rate and concurrency with the ETA, and each
    receiving broker's copies as a lane."""
    data = [m for m in timeline.moves if m.move.bytes_moved]
    brokers, rows, lefts, widths = _lanes((m.start, m.copy_end, m.move.added_brokers)
                                          for m in data)
    fig = Figure(figsize=(FIG_WIDTH, 3.2 + min(6.0, 0.22 * len(brokers))))
    top, bottom = fig.subplots(2, 1, sharex=True,
                               height_ratios=[1.0, max(1.0, 0.12 * len(brokers))])
    ends = sorted(m.copy_end for m in timeline.moves)
    done = np.cumsum([m.move.bytes_moved for m in sorted(timeline.moves,
                                                          key=lambda m: m.copy_end)])
    top.step([0.0, *ends], [0, *done], where="post", color=AFTER)
    top.axvline(timeline.eta_seconds, color=TARGET, linestyle="--",
                label=f"ETA {duration_text(timeline.eta_seconds)}")
    top.set_ylabel("bytes copied")
    _bytes_axis(top)
    top.legend(loc="upper left", frameon=False)
    top.grid(linewidth=0.3)
    _bars(bottom, rows, lefts, widths, COPY)
    lanes = range(0, len(brokers), max(1, math.ceil(len(brokers) / LANES_NAMED)))
    bottom.set_yticks(lanes, [str(brokers[i]) for i in lanes])
    bottom.set_ylim(-0.7, max(len(brokers), 1) - 0.3)
    bottom.set_ylabel("receiving broker")
    bottom.set_xlim(0, max(timeline.eta_seconds, 1.0) * 1.02)
    bottom.invert_yaxis()
    _duration_axis(bottom, timeline.eta_seconds)
    bottom.set_xlabel("time from the start")
    return to_svg(fig, chart_id)


@_styled
def run_chart(run: RunView) -> str:
    """Each move's life (one row per move, plan order), coloured by phase."""
    fig = Figure(figsize=(FIG_WIDTH, min(9.0, 2.4 + 0.18 * len(run.moves))),
                 layout="constrained")
    ax = fig.add_subplot()
    by_phase: dict[Phase, tuple[list[float], list[float], list[float]]] = {
        p: ([], [], []) for p in Phase}
    for move in run.moves:
        for span in move.spans:
            rows, lefts, widths = by_phase[span.phase]
            rows.append(float(move.index))
            lefts.append(span.start)
            widths.append(span.end - span.start)
    for phase, (rows, lefts, widths) in by_phase.items():
        _bars(ax, rows, lefts, widths, PHASE_COLOURS[phase])
    ax.set_xlim(0, max(run.elapsed, 1.0) * 1.02)
    ax.set_ylim(len(run.moves) + 0.7, 0.3)
    ax.yaxis.set_major_locator(MaxNLocator(nbins=12, integer=True))
    ax.set_ylabel("move (plan order)")
    ax.set_xlabel("time from the run's start")
    _duration_axis(ax, run.elapsed)
    fig.legend(handles=[Patch(color=PHASE_COLOURS[p], label=p.value) for p in Phase],
               loc="outside upper center", ncols=len(Phase), frameon=False)
    ax.grid(axis="x", linewidth=0.3)
    return to_svg(fig, "chart-run")


@_styled
def copy_rate_chart(run: RunView, measured: Series | None = None) -> str:
    """Per receiving broker: the follower throttle in force, the SLO guard's ceiling where it
    held the broker below that, each finished copy's average rate, the run's cap and (when
    Prometheus answered) the measured reassignment rate."""
    brokers = run.target_brokers
    cols = min(2, max(len(brokers), 1))
    rows = max(1, math.ceil(len(brokers) / cols))
    fig = Figure(figsize=(FIG_WIDTH, 2.4 * rows + 1.0), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols, sharex=True, squeeze=False)).ravel()
    cap = run.cap_bytes_per_sec
    for ax, broker in zip(axes, brokers, strict=False):
        for seg in (c for c in run.caps if c.broker == broker):
            ax.hlines(seg.bytes_per_sec, seg.start, seg.end, color=CAP, linewidth=1.5)
        for ceiling in (g for g in run.guard if g.broker == broker):
            ax.hlines(ceiling.bytes_per_sec, ceiling.start, ceiling.end, color=GUARD,
                      linewidth=1.5, linestyles="dashed")
        for copy in (c for c in run.copies if c.broker == broker):
            ax.hlines(copy.bytes_per_sec, copy.start, copy.end, color=COPY, linewidth=3)
        if measured and measured.get(broker):
            points = measured[broker]
            ax.plot([t for t, _ in points], [v for _, v in points], color=MEASURED,
                    linewidth=0.8)
        if cap is not None:
            ax.axhline(cap, color=CAP, linestyle=":", linewidth=0.8)
        ax.set_title(f"broker {broker}")
        _bytes_axis(ax, "B/s")
        ax.set_ylim(bottom=0)
        ax.grid(linewidth=0.3)
    for ax in axes[len(brokers):]:
        ax.set_axis_off()
    for ax in axes:
        ax.set_xlim(0, max(run.elapsed, 1.0) * 1.02)
        _duration_axis(ax, run.elapsed)
    handles = [Patch(color=CAP, label="follower throttle set (dotted: --max-mbps cap)"),
               Patch(color=COPY, label="copy rate (partition bytes / time listed)")]
    if run.guard:
        handles.append(Patch(color=GUARD, label="SLO guard ceiling (dashed)"))
    if measured:
        handles.append(Patch(color=MEASURED, label="reassignment bytes in (Prometheus)"))
    fig.legend(handles=handles, loc="outside upper center", ncols=2, frameon=False)
    return to_svg(fig, "chart-rates")
