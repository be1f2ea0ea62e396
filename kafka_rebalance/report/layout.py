"""Tables laid out for the terminal they print to: 80 columns first, wider when there is room.

A table comes in layouts from the most to the least complete; the first whose widest row fits
the width is printed. Cells of names fold onto a second line if even the last does not fit,
never cut with an ellipsis. `width=None` (the HTML report, JSON, tests) is the full layout.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence

from rich.console import Console
from rich.table import Table

WIDE = 120  # at this width and more a review shows its full layout


def fit(width: int | None, layouts: Sequence[Callable[[], Table]]) -> Table:
    """The first of `layouts` whose widest row fits `width` columns (else the last)."""
    if width is None:
        return layouts[0]()
    measure = Console(width=10_000, file=io.StringIO())
    *wider, last = layouts
    for make in wider:
        table = make()
        if measure.measure(table).maximum <= width:
            return table
    return last()
