"""The real Clock adapter: wall-clock time for the journal, sleeps for the poll loop.

The journal records wall-clock seconds (operators read them); waits use `time.sleep`.
"""

from __future__ import annotations

import time


class SystemClock:
    """`kafka_rebalance.core.ports.Clock` over the process's clock."""

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)
