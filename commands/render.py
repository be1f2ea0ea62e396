"""Rich rendering helpers shared by the commands (tables, human-readable units, notes).

Every string from a user or a cluster (paths, rack and topic names, messages) reaches rich
escaped (`rich.markup.escape`) or as plain text (`say`, `note`, `Text`): a rack named "[/]x"
must print as written, not break or restyle the output.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from core.errors import RebalanceError
from report.text import human_bytes
from topology.load import balance, broker_loads
from topology.model import RESOURCES, Resource, Topology


def _console(stderr: bool = False) -> Console:
    """A console that keeps tables readable when output goes to a file or a pipe."""
    probe = Console(stderr=stderr)
    return probe if probe.is_terminal else Console(stderr=stderr, width=max(probe.width, 140))


console = _console()
err_console = _console(stderr=True)


def say(text: str, target: Console | None = None) -> None:
    """Print `text` exactly as given (no markup, no highlighting), on stdout by default."""
    (target or console).print(Text(text), highlight=False, soft_wrap=True)


class NoteHold:
    """Notes held back by `notes_held()`; `release()` prints them and stops holding."""

    def __init__(self) -> None:
        self.lines: list[Text] = []

    def release(self) -> None:
        if self in _holds:
            _holds.remove(self)
        lines, self.lines = self.lines, []
        for line in lines:
            _emit(line)


_holds: list[NoteHold] = []


def note(message: str, label: str = "note", style: str = "yellow") -> None:
    """A 'note: message' line on stderr, the message printed as written. Inside `notes_held()`
    it waits until the block ends or releases it."""
    _emit(Text.assemble((f"{label}:", style), " ", message) if label else Text(message))


def _emit(line: Text) -> None:
    if _holds:
        _holds[-1].lines.append(line)
    else:
        err_console.print(line, highlight=False, soft_wrap=True)


@contextmanager
def notes_held() -> Iterator[NoteHold]:
    """Hold the notes of a block so that a refusal's error line comes first on stderr: on a
    RebalanceError they ride on the error (`add_note`; `cli.main` prints them after the error
    line); otherwise they are printed when the block ends or calls `release()`."""
    hold = NoteHold()
    _holds.append(hold)
    try:
        yield hold
    except RebalanceError as exc:
        for line in hold.lines:
            exc.add_note(line.plain)
        hold.lines = []
        raise
    finally:
        hold.release()


_RESOURCE_TITLES = {Resource.DISK: "disk", Resource.NET_IN: "net in", Resource.NET_OUT: "net out"}


def topology_table(topology: Topology, title: str = "Brokers") -> Table:
    """Per-broker table grouped by rack: replicas, leaders, load and utilization per resource."""
    loads = broker_loads(topology)
    bal = balance(topology)
    replicas = {b.id: 0 for b in topology.brokers}
    leaders = dict(replicas)
    for p in topology.partitions:
        leaders[p.replicas[0]] += 1
        for r in p.replicas:
            replicas[r] += 1
    table = Table(title=escape(title))
    for header in ("rack", "broker", "replicas", "leaders"):
        table.add_column(header, justify="right" if header != "rack" else "left", no_wrap=True)
    for res in RESOURCES:
        table.add_column(_RESOURCE_TITLES[res], justify="right", no_wrap=True)
        table.add_column("util", justify="right", no_wrap=True)
    for rack in topology.racks:
        for b in (b for b in topology.brokers if b.rack == rack):
            load = loads[b.id]
            row = [escape(str(rack)), str(b.id) + ("" if b.alive else " (offline)"),
                   str(replicas[b.id]), str(leaders[b.id])]
            for res in RESOURCES:
                amount = human_bytes(load.of(res), "B" if res is Resource.DISK else "B/s")
                util = bal[res].utilization.get(b.id)
                row += [amount, f"{util:.1%}" if util is not None else "-"]
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
    return table
