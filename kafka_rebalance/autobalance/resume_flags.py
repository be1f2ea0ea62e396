"""Which settings a resumed run uses, said in one line. Pure.

A cycle that resumes an earlier run follows the rule of `rebalance resume`
(ExecutorConfig.from_journal): the run keeps the settings in its journal (cooldown, quota
window, gates, concurrency), and the auto process running now gives its cap, as `resume
--max-mbps` does, and the window's end. The line names every journaled setting that differs
from what the run started with (the cap, or a setting an older journal did not keep). A move
that was in flight when the earlier process ended keeps the throttle journaled for it until it
is done.
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
    "adaptive_floor_bytes_per_sec": "adaptive floor",
    "slo": "SLO guard",
}
# Executor tuning no flag sets: a journal from before they were kept ran with the defaults.
_UNSAID_WHEN_UNKEPT = frozenset({"stall_intervals", "adaptive_floor_bytes_per_sec",
                                 "adaptive_every_polls", "adaptive_change"})


def _show(key: str, value: Any) -> str:
    if value is None:
        return "none"
    if key == "slo" and isinstance(value, dict):
        return "on" if value.get("enabled") else "off"
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
    """'cap 1 MB/s (the run started with 2 MB/s)' for each setting in `now` (the resumed run's,
    ExecutorConfig.to_journal()) that differs from `started` (the journal header's)."""
    changes = []
    for key in now:  # to_journal's order: cap first
        before = started.get(key)
        if key in started and _same(before, now[key]):
            continue
        if key not in started and key in _UNSAID_WHEN_UNKEPT:
            continue
        label = _LABELS.get(key, key.replace("_", " "))
        was = (f"the run started with {_show(key, before)}" if key in started
               else "not in the run's journal")
        changes.append(f"{label} {_show(key, now[key])} ({was})")
    return changes


def resume_line(journal_name: str, started: Mapping[str, Any], now: Mapping[str, Any]) -> str:
    """The log line of a resumed run: its own settings, and each that is not as it started."""
    changes = setting_changes(started, now)
    detail = " except " + "; ".join(changes) if changes else ""
    return (f"resuming {journal_name} with the run's own settings{detail}; a move left in "
            "flight keeps its journaled throttle until it is done")
