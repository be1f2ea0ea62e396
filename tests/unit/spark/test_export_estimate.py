"""History export: the size estimate and limit before any query, and the note on a history much
shorter than the window asked for. No Prometheus: a fake range source and a stubbed adapter."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_rebalance.core.errors import InputError
from tests.unit.conftest import RebalanceMain
from topology import history, prom_source
from topology.history import (
    LARGE_EXPORT_QUERIES,
    MAX_EXPORT_STEPS,
    MIN_GROWTH_SPAN_SECONDS,
    ExportSummary,
    HistoryQueries,
    Series,
    check_export_size,
    chunk_ranges,
    coverage_note,
    estimate_export,
    export_history,
    fitting_step,
    parse_duration,
    parse_min_growth_span,
)
from topology.units import duration_text

T0 = 1_767_571_200.0  # 2026-01-05T00:00:00Z
DAY = 86_400.0


@pytest.mark.parametrize(("seconds", "text"), [
    (720, "12m"), (7 * DAY, "7d"), (DAY + 2 * 3600 + 5, "1d2h"), (60, "1m"), (90, "1m30s"),
    (0.5, "0.5s"), (1, "1s"), (3600 + 59, "1h59s"),
])
def test_compact_duration(seconds: float, text: str) -> None:
    assert duration_text(seconds, compact=True) == text
    # Exact in two units: it reads back as the same duration (else the two largest units).
    shown = parse_duration(text, "x")
    assert shown == seconds if seconds != DAY + 2 * 3600 + 5 else shown == seconds - 5


@pytest.mark.parametrize(("window", "step"), [(7 * DAY, 60.0), (7 * DAY, 1.0), (600.0, 60.0),
                                              (59.0, 60.0), (11_000 * 60.0, 60.0)])
def test_the_estimate_counts_the_chunks_the_export_queries(window: float, step: float) -> None:
    estimate = estimate_export(window, step)
    end = T0 + window - window % step
    start = end - (window // step) * step
    ranges = chunk_ranges(start, end, step)
    assert estimate.chunks == len(ranges)
    assert estimate.steps == sum(round((e - s) / step) + 1 for s, e in ranges)
    assert estimate.queries == 4 * len(ranges)


def test_ten_years_at_one_second_is_refused_with_a_step_that_fits() -> None:
    with pytest.raises(InputError) as caught:
        check_export_size(3650 * DAY, 1.0, "3650d", "1s")
    message = str(caught.value)
    assert message.startswith("--since 3650d at --step 1s is 315,360,001 samples per series "
                              "(114,680 range queries)")
    assert "use --step 10m or more, or a shorter --since" in message
    # The suggested step does fit, and the next smaller round step does not.
    assert estimate_export(3650 * DAY, 600).steps <= MAX_EXPORT_STEPS
    assert estimate_export(3650 * DAY, 300).steps > MAX_EXPORT_STEPS
    assert check_export_size(7 * DAY, 1.0, "7d", "1s").chunks == 55  # 604,801 samples: allowed


def test_fitting_step_beyond_the_round_steps_is_whole_days() -> None:
    assert fitting_step(10**9 * DAY) % DAY == 0
    assert fitting_step(600.0) == 1


def test_coverage_note_only_for_much_shorter_data() -> None:
    assert coverage_note(T0, T0 + 7 * DAY, T0, T0 + 7 * DAY) is None
    assert coverage_note(T0, T0 + 7 * DAY, T0 + 3 * DAY, T0 + 7 * DAY) is None  # over half
    end = T0 + 7 * DAY
    note = coverage_note(T0, end, end - 720, end)
    assert note is not None
    assert note.startswith("Prometheus returned 12m of the 7d asked for "
                           "(2026-01-11T23:48:00+00:00 to 2026-01-12T00:00:00+00:00)")
    assert note.endswith("the weights job measures no size growth from less than 1d")
    two_days = coverage_note(T0, T0 + 30 * DAY, T0, T0 + 2 * DAY)
    assert two_days is not None and "growth" not in two_days


class LastMinutes:
    """A Prometheus that keeps only the last `keep` seconds: older steps have no samples."""

    def __init__(self, end: float, keep: float) -> None:
        self.first = end - keep
        self.calls = 0

    def query_range(self, query: str, start: float, end: float, step: float) -> Series:
        self.calls += 1
        steps = [start + k * step for k in range(int((end - start) // step) + 1)]
        kept = [t for t in steps if t >= self.first]
        if query == "size":
            return [({"topic": "t", "partition": "0"}, [(t, 100.0) for t in kept])]
        return [({"topic": "t"}, [(t, 5.0) for t in kept])]


def test_an_export_of_12_minutes_of_7_days_says_so(tmp_path: Path) -> None:
    end = T0 + 7 * DAY
    source = LastMinutes(end, keep=720)
    summary = export_history(source, T0, end, 60.0, tmp_path / "h",
                             HistoryQueries("in", "out", "size"))
    assert summary.rows == 13  # 12 minutes at 60 s, both ends
    short = [n for n in summary.notes if n.startswith("Prometheus returned 12m of the 7d")]
    assert len(short) == 1
    full = export_history(LastMinutes(end, keep=7 * DAY), T0, end, 60.0, tmp_path / "full",
                          HistoryQueries("in", "out", "size"))
    assert not any("Prometheus returned" in n for n in full.notes)


def test_min_growth_span_flag() -> None:
    assert parse_min_growth_span("0") == 0.0
    assert parse_min_growth_span("36h") == 36 * 3600
    assert duration_text(MIN_GROWTH_SPAN_SECONDS, compact=True) == "1d"  # the CLI's default text
    with pytest.raises(InputError, match="--min-growth-span"):
        parse_min_growth_span("-1d")


# --- the CLI: refused before any query, an estimate for large exports ----------------------


class Recorder:
    """Stands in for the Prometheus adapter and export: records that they ran."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, float, float]] = []

    def source(self, url: str, timeout_s: int = 0) -> object:
        return object()

    def export(self, source: object, start: float, end: float, step: float, out: Path,
               queries: HistoryQueries, on_chunk: object = None) -> ExportSummary:
        self.calls.append((start, end, step))
        out.mkdir()
        return ExportSummary(1, 1, 1, ("part-00000.parquet",), ())


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    recorded = Recorder()
    monkeypatch.setattr(prom_source, "PrometheusMetrics", recorded.source)
    monkeypatch.setattr(history, "export_history", recorded.export)
    return recorded


def test_a_ten_year_export_at_one_second_is_refused_before_querying(
        tmp_path: Path, rebalance_main: RebalanceMain, recorder: Recorder) -> None:
    run = rebalance_main
    out = tmp_path / "history"
    result = run("history", "export", "--prometheus", "http://127.0.0.1:1", "--since",
                 "3650d", "--step", "1s", "--out", str(out))
    assert result.code == 2
    assert result.err_lines[0].startswith("error: --since 3650d at --step 1s is 315,360,001 "
                                          "samples per series")
    assert recorder.calls == [] and not out.exists()


def test_a_large_export_says_how_many_queries_first(
        tmp_path: Path, rebalance_main: RebalanceMain, recorder: Recorder) -> None:
    run = rebalance_main
    result = run("history", "export", "--prometheus", "http://127.0.0.1:1", "--since", "7d",
                 "--step", "5s", "--out", str(tmp_path / "big"))
    assert result.code == 0, result.err
    assert estimate_export(7 * DAY, 5).queries >= LARGE_EXPORT_QUERIES
    assert ("note: a large export: 120,961 samples per series, 44 range queries (11 chunks of "
            "up to 11,000 steps)") in result.err
    assert len(recorder.calls) == 1
    small = run("history", "export", "--prometheus", "http://127.0.0.1:1", "--since", "7d",
                "--step", "60s", "--out", str(tmp_path / "small"))
    assert small.code == 0 and "a large export" not in small.err
