"""A cluster at a glance, for `rebalance show`: each broker's replicas, leaders and load by
rack (`topology_table`), and the spread of every resource over the brokers (`spread_table`).
Rack and topic names reach rich escaped."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from kafka_rebalance.report.layout import fit
from topology.load import balance
from topology.model import RESOURCES, Resource, Topology
from topology.units import size_text

_RESOURCE_TITLES = {Resource.DISK: "disk", Resource.NET_IN: "net in", Resource.NET_OUT: "net out"}


def topology_table(topology: Topology, title: str = "Brokers",
                   width: int | None = None) -> Table:
    """Per-broker table grouped by rack: replicas, leaders, load and utilization per resource
    (narrower than that: utilization only, then without leaders)."""
    return fit(width, [lambda: _topology_table(topology, title, True, True),
                       lambda: _topology_table(topology, title, False, True),
                       lambda: _topology_table(topology, title, False, False)])


def _topology_table(topology: Topology, title: str, amounts: bool,
                    leaders: bool) -> Table:
    from planner.tally import tally

    counts = tally(topology)
    bal = balance(topology)
    table = Table(title=escape(title) + ("" if amounts else " (utilization)"))
    for header in ("rack", "broker", "replicas", *(["leaders"] if leaders else [])):
        table.add_column(header, justify="right" if header != "rack" else "left",
                         overflow="fold")
    for res in RESOURCES:
        if amounts:
            table.add_column(_RESOURCE_TITLES[res], justify="right", no_wrap=True)
        table.add_column("util" if amounts else _RESOURCE_TITLES[res], justify="right",
                         no_wrap=True)
    for rack in topology.racks:
        for b in (b for b in topology.brokers if b.rack == rack):
            load = counts.load(b.id)
            row = [escape(str(rack)), str(b.id) + ("" if b.alive else " (offline)"),
                   str(counts.replicas(b.id)), *([str(counts.leaders(b.id))] if leaders else [])]
            for res in RESOURCES:
                util = bal[res].utilization.get(b.id)
                if amounts:
                    unit = "B" if res is Resource.DISK else "B/s"
                    row.append(size_text(load.of(res), unit, compact=True))
                row.append(f"{util:.1%}" if util is not None else "-")
            table.add_row(*row)
    return table


def spread_table(topology: Topology) -> Table:
    """Spread per resource: capacity-weighted average utilization, max/avg and min/avg."""
    table = Table(title="Balance")
    for header in ("resource", "avg util", "max/avg", "min/avg"):
        table.add_column(header, justify="right")
    for res, rb in balance(topology).items():
        table.add_row(_RESOURCE_TITLES[res], f"{rb.average:.1%}",
                      f"{rb.max_over_avg:.3f}", f"{rb.min_over_avg:.3f}")
    from planner.requests import request_spread

    requests = request_spread(topology)
    if requests is not None:  # only snapshots with request rates
        table.add_row("requests", "-", f"{requests[0]:.3f}", f"{requests[1]:.3f}")
    return table
