"""Which settings a resumed run uses, said in one line. Pure.

A cycle that resumes an earlier run uses the flags of the auto process running now (its cap,
cooldown, gate and quota-window settings), not those in the run's journal: an operator who
restarts `rebalance auto` with a lower --max-mbps or a longer --cooldown means it for every
move from then on, the remaining moves of an earlier run included (as `rebalance resume
--max-mbps` overrides a journal's cap). The one exception is the executor's: a move that was
in flight when the earlier process ended keeps the throttle journaled for it until it is done.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_LABELS = {
    "max_bytes_per_sec": "cap",
    "cooldown_seconds": "cooldown",
    "quota_window_seconds": "quota window",
    "gate_timeout_seconds": "gate timeout",
    "gate_floor_bytes_per_sec": "gate floor",
    "gate_margin": "gate margin",
    "gate_consecutive": "gate samples",
    "produce_p99_max_ms": "produce p99 limit",
}


def _show(key: str, value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if key.endswith("bytes_per_sec"):
        return f"{value / 1e6:g} MB/s"
    if key.endswith("_seconds"):
        return f"{value:g} s"
    if key.endswith("_ms"):
        return f"{value:g} ms"
    return f"{value:g}"


def _same(a: Any, b: Any) -> bool:
    numbers = (int, float)
    if (isinstance(a, numbers) and isinstance(b, numbers)
            and not isinstance(a, bool) and not isinstance(b, bool)):
        return float(a) == float(b)
    return bool(a == b)


def setting_changes(started: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """'cap 1 MB/s (the run started with 2 MB/s)' for each setting in `now` (this process's,
    ExecutorConfig.summary()) that differs from `started` (the journal header's)."""
    changes = []
    for key in now:  # the summary's order: cap first
        before = started.get(key)
        if key in started and _same(before, now[key]):
            continue
        label = _LABELS.get(key, key.replace("_", " "))
        was = (f"the run started with {_show(key, before)}" if key in started
               else "not in the run's journal")
        changes.append(f"{label} {_show(key, now[key])} ({was})")
    return changes


def resume_line(journal_name: str, started: Mapping[str, Any], now: Mapping[str, Any]) -> str:
    """The log line of a resumed run: which flags apply and what changed."""
    changes = setting_changes(started, now)
    detail = "; ".join(changes) if changes else "the same as when the run started"
    return (f"resuming {journal_name} with this auto process's flags: {detail} (a move left in "
            "flight keeps its journaled throttle until it is done)")
