"""A run's status, and what its report shows beside the journal: `rebalance status` as typed
values, with the files and Prometheus read here; the commands only render them.

`run_status` finds the journal (--journal, beside the plan, or the only one here), checks that
a plan given with it is its plan, folds the journal once (`executor.journal.replay` and
`executor.timeline`) and estimates what is left. `plan_of_run` and `measured_copy_rates` are
what the HTML run report adds: the plan beside the journal and each receiver's copy rate as
Prometheus measured it; what cannot be had becomes a notice, never an error.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from executor.journal import (
    find_journal,
    journal_in_use,
    plan_beside,
    read_records,
    runs_plan,
)
from executor.records import Record
from executor.status import StatusView, status_view
from executor.timeline import run_settle
from kafka_rebalance.core.errors import InputError, MetricsError, RebalanceError
from kafka_rebalance.files.planfile import read_plan
from planner.planfile import PlanFile

# Prometheus samples per receiver over a run on a status page (the query step follows).
MEASURED_POINTS = 600

Series = dict[int, list[tuple[float, float]]]


def run_status(plan_path: Path | None, journal: Path | None,
               now: float | None = None) -> tuple[StatusView, list[Record]]:
    """The status of the run of `plan_path` or `journal` (see find_journal), and the journal's
    intact records. A journal read while its run goes on is read without locking it."""
    path = find_journal(plan_path, journal)
    records = read_records(path)
    if plan_path is not None and journal is not None and records \
            and not _of_plan(records, read_plan(plan_path)):
        raise InputError(f"{path} is the journal of another plan than {plan_path} (other "
                         "moves); give the journal's own plan, or only --journal")
    if plan_path is not None:
        plan: str | None = str(plan_path)
    else:
        beside = plan_beside(path)
        plan = str(beside) if beside is not None and beside.is_file() else None
    view = status_view(records, str(path), plan, journal_in_use(path), run_settle(records),
                       time.time() if now is None else now)
    return view, records


def plan_of_run(journal: Path, plan_path: Path | None, records: Sequence[Record],
                notices: list[str]) -> PlanFile | None:
    """The plan file of the run, when it is there and holds the journal's moves; else None
    and a notice saying why."""
    candidate = plan_path if plan_path is not None else plan_beside(journal)
    if candidate is None or not candidate.is_file():
        notices.append("No plan file beside the journal (give PLAN.json): the page shows the "
                       "run only.")
        return None
    try:
        plan_file = read_plan(candidate)
    except RebalanceError as exc:
        notices.append(f"The plan {candidate} could not be read ({exc}): the page shows the "
                       "run only.")
        return None
    if not _of_plan(records, plan_file):
        notices.append(f"The plan {candidate} holds other moves than the journal's run: the "
                       "page shows the run only.")
        return None
    return plan_file


def measured_copy_rates(prometheus: str, started_at: float | None, elapsed: float,
                        receivers: Sequence[int], queries: Mapping[str, object],
                        notices: list[str]) -> Series | None:
    """Reassignment bytes in per receiving broker over the run, seconds from its start, read
    with the run's own queries (`queries`, as its journal header keeps them); None and a
    notice when Prometheus does not answer or has no such series."""
    from topology import promql
    from topology.prom_source import PrometheusMetrics

    if started_at is None or not receivers:
        return None
    window = str(queries.get("window", promql.DEFAULT_RATE_WINDOW))
    label = str(queries.get("broker_label", "broker_id"))
    brokers = "|".join(str(b) for b in receivers)
    query = promql.render(promql.BROKER_REASSIGNMENT_IN_RATE, window=window,
                          selector=f'{label}=~"{brokers}"')
    start, end = started_at, started_at + max(elapsed, 1.0)
    step = max(1.0, math.ceil((end - start) / MEASURED_POINTS))
    try:
        series = PrometheusMetrics(prometheus, timeout_s=20).query_range(query, start, end,
                                                                         step)
    except (MetricsError, InputError) as exc:
        notices.append(f"Prometheus did not answer ({exc}): the copy rates are the journal's "
                       "alone.")
        return None
    measured: Series = {}
    for labels, samples in series:
        raw = labels.get(label, "")
        if raw.isascii() and raw.isdigit():
            measured.setdefault(int(raw), []).extend(
                (t - start, v) for t, v in samples if math.isfinite(v))
    if not measured:
        notices.append(f"Prometheus has no reassignment series for the run ({query}): the "
                       "copy rates are the journal's alone.")
    return measured or None


def _of_plan(records: Sequence[Record], plan_file: PlanFile) -> bool:
    return runs_plan(records, plan_file.moves, plan_file.log_dirs)
