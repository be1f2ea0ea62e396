"""Where a plan's time goes: named phases, timed on the monotonic clock.

The planner times its own stages (arrays, targets, bounds, greedy, neighbourhoods, exact,
polish) and the use case adds its own (validate, order); `plan --json` and the planner
benchmark report them, so a slow plan says which stage grew.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class Phases:
    """Seconds per phase name, summed over every time the phase runs."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.monotonic() - start

    def items(self) -> tuple[tuple[str, float], ...]:
        return tuple(self.seconds.items())
