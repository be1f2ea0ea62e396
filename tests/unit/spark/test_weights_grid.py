"""Histories the user brings (no `_notes.json`): the grid from the data or --step; short
histories said and not extrapolated; a quiet Spark with progress from the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from spark_jobs.grid import GridSource, HistorySpan, SamplingGrid, grid_notes, pick_step, span_notes
from spark_jobs.session import QUIET_LOG4J2, quiet_log_config, user_sets_driver_options
from spark_jobs.weights import WeightsParams, compute
from spark_jobs.weights_io import HistoryNotes, check_local_history

T0_US = 1_767_571_200_000_000  # 2026-01-05T00:00:00Z
SECOND_US = 1_000_000
MINUTE_US = 60 * SECOND_US
DAY_S = 86_400
REPO = Path(__file__).resolve().parents[3]
NOTES = {"version": 1, "start": "2026-01-05T00:00:00+00:00", "step_seconds": 60}

Row = tuple[int, int, float, int | None]
"""(ts in microseconds, partition, bytes in per second, size) of topic t."""


def _table(rows: list[Row]) -> pa.Table:
    return pa.table({
        "ts": pa.array([r[0] for r in rows], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "topic": pa.array(["t"] * len(rows)),
        "partition": pa.array([r[1] for r in rows], pa.int32()),
        "bytes_in_per_sec": pa.array([r[2] for r in rows], pa.float64()),
        "bytes_out_per_sec": pa.array([2 * r[2] for r in rows], pa.float64()),
        "size_bytes": pa.array([r[3] for r in rows], pa.int64()),
    })


def _jittered_minutes(minutes: int, partitions: int = 2) -> list[Row]:
    """One sample a minute per partition, a few seconds off the minute (never the first), plus
    a repeat of minute 2 exported two seconds early: a metrics store's export."""
    jitter = [0, 3, -2, 1, -3, 2, 0, -1]
    rows: list[Row] = []
    for p in range(partitions):
        for m in range(minutes):
            ts = T0_US + m * MINUTE_US + jitter[m % len(jitter)] * SECOND_US
            rows.append((ts, p, float(10 * (p + 1) + m % 5), 1000 * (p + 1) + 100 * m))
        rows.append((T0_US + 2 * MINUTE_US - 2 * SECOND_US, p, 99.0, 1000 * (p + 1) + 200))
    return rows


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# --- pure -------------------------------------------------------------------------------------


def test_pick_step_takes_the_most_common_spacing_smaller_on_ties() -> None:
    assert pick_step([(60 * SECOND_US, 90), (58 * SECOND_US, 5), (120 * SECOND_US, 5)],
                     100) == (60.0, 0.95)
    assert pick_step([(30 * SECOND_US, 10), (15 * SECOND_US, 10)], 20) == (15.0, 0.5)
    assert pick_step([(500_000, 4)], 4) == (0.5, 1.0)
    assert pick_step([(47 * SECOND_US, 9), (5 * SECOND_US, 1)], 10) == (47.0, 0.9)
    assert pick_step([], 0) is None


def test_pick_step_sees_through_jitter() -> None:
    # Samples a few seconds off the minute: the most common spacing is 63 s, their median 59 s,
    # and the round step within 5% of it is the minute.
    seconds = {63: 3, 55: 2, 56: 1, 65: 1, 58: 1, 59: 1, 61: 1, 4: 1}
    assert pick_step([(s * SECOND_US, c) for s, c in seconds.items()], 11) == (60.0, 10 / 11)


def test_grid_notes_say_where_the_grid_came_from() -> None:
    inferred = SamplingGrid(60.0, T0_US / 1e6, GridSource.DATA, 0.97)
    assert grid_notes(inferred, None) == [
        "the history has no _notes.json: sampling grid from the data, step 1m (the spacing of "
        "97% of consecutive samples, give or take jitter), start 2026-01-05T00:00:00+00:00"]
    irregular = SamplingGrid(60.0, 0.0, GridSource.DATA, 0.3)
    assert grid_notes(irregular, None)[0].endswith("irregular: pass --step to set the grid")
    flag = SamplingGrid(60.0, 0.0, GridSource.FLAG)
    assert grid_notes(flag, HistoryNotes(0.0, 30.0)) == [
        "--step 1m replaces the step 30s of the history's _notes.json"]
    assert grid_notes(flag, HistoryNotes(0.0, 60.0)) == []
    assert grid_notes(SamplingGrid(60.0, 0.0, GridSource.NOTES), HistoryNotes(0.0, 60.0)) == []
    assert "no partition has two samples" in grid_notes(
        SamplingGrid(None, 0.0, GridSource.NONE), None)[0]


def test_span_notes_for_short_histories_and_late_partitions() -> None:
    minutes = HistorySpan(T0_US / 1e6, T0_US / 1e6 + 720)
    [short] = span_notes(minutes, DAY_S, partitions=4, without_growth=4)
    assert short == ("the history spans only 12m (2026-01-05T00:00:00+00:00 to "
                     "2026-01-05T00:12:00+00:00): the rates describe that time only, and the "
                     "hourly profile the hours it covers; size growth is not extrapolated from "
                     "less than 1d, so size_growth_bytes_per_day is null (no growth) for every "
                     "partition")
    [lowered] = span_notes(minutes, 0.0, partitions=4, without_growth=0)
    assert "spans only 12m" in lowered and "growth" not in lowered
    week = HistorySpan(0.0, 7.0 * DAY_S)
    assert span_notes(week, DAY_S, partitions=4, without_growth=0) == []
    assert span_notes(week, DAY_S, partitions=4, without_growth=1) == [
        "1 of 4 partitions have sizes over less than 1d (created late in the history, or sizes "
        "missing): their size_growth_bytes_per_day is null (no growth)"]


def test_quiet_log_config_is_written_once_and_never_through_a_link(tmp_path: Path) -> None:
    path = quiet_log_config(tmp_path)
    assert path.read_text() == QUIET_LOG4J2
    assert "rootLogger.level = error" in QUIET_LOG4J2
    assert "org.apache.hadoop.util.NativeCodeLoader" in QUIET_LOG4J2
    assert quiet_log_config(tmp_path) == path
    path.unlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("someone else's")
    path.symlink_to(elsewhere)
    assert quiet_log_config(tmp_path) == path
    assert not path.is_symlink() and path.read_text() == QUIET_LOG4J2
    assert elsewhere.read_text() == "someone else's"


def test_a_users_own_driver_options_are_left_alone() -> None:
    assert user_sets_driver_options("--driver-java-options -Dx=1 pyspark-shell")
    assert user_sets_driver_options("--conf spark.driver.extraJavaOptions=-Dy pyspark-shell")
    assert not user_sets_driver_options("--conf spark.executor.memory=512m pyspark-shell")


# --- Spark ------------------------------------------------------------------------------------


def test_a_history_without_notes_gets_the_grid_from_the_data(
        spark: SparkSession, history_dir: Any, tmp_path: Path) -> None:
    rows = _jittered_minutes(30)
    bare = history_dir([_table(rows)], notes=None, name="bare")
    assert check_local_history(bare).notes is None
    inferred = compute(spark, str(bare), str(tmp_path / "inferred.json"), WeightsParams(0.5))
    noted = compute(spark, str(history_dir([_table(rows)], notes=NOTES, name="noted")),
                    str(tmp_path / "noted.json"), WeightsParams(0.5))
    assert inferred.partitions == noted.partitions == 2
    assert _lines(tmp_path / "inferred.json") == _lines(tmp_path / "noted.json")
    assert inferred.notes[0].startswith(
        "the history has no _notes.json: sampling grid from the data, step 1m (the spacing of ")
    # The repeat of minute 2 snapped onto minute 2: one sample there, the larger value.
    got = _lines(tmp_path / "inferred.json")[0]
    assert got["bytes_in_per_sec"] == 12.0  # median of 10..14 repeating, 99 replacing one 12
    flagged = compute(spark, str(bare), str(tmp_path / "flag.json"), WeightsParams(0.5),
                      step_seconds=60.0)
    assert _lines(tmp_path / "flag.json") == _lines(tmp_path / "noted.json")
    assert not any("_notes.json" in n for n in flagged.notes)


def test_a_short_history_is_said_and_its_growth_not_extrapolated(
        spark: SparkSession, history_dir: Any, tmp_path: Path) -> None:
    directory = history_dir([_table(_jittered_minutes(15))], notes=NOTES)
    out = tmp_path / "w.json"
    result = compute(spark, str(directory), str(out),
                     WeightsParams(0.5, min_growth_span_seconds=DAY_S))
    assert [r["size_growth_bytes_per_day"] for r in _lines(out)] == [None, None]
    assert [r["size_bytes"] for r in _lines(out)] == [2400, 3400]
    assert any(n.startswith("the history spans only 14m") and n.endswith("for every partition")
               for n in result.notes)
    anyway = compute(spark, str(directory), str(out), WeightsParams(0.5))
    # 100 bytes a minute: 144,000 a day, extrapolated from 14 minutes only when asked for.
    assert [r["size_growth_bytes_per_day"] for r in _lines(out)] == pytest.approx([144_000] * 2)
    assert any("spans only 14m" in n for n in anyway.notes)
    assert not any("growth" in n for n in anyway.notes)


def test_a_partition_created_late_gets_no_growth(spark: SparkSession, history_dir: Any,
                                                 tmp_path: Path) -> None:
    hour_us = 60 * MINUTE_US
    rows: list[Row] = [(T0_US + h * hour_us, 0, 5.0, 1000 * h) for h in range(48)]
    rows += [(T0_US + h * hour_us, 1, 5.0, 500 * h) for h in (46, 47)]
    out = tmp_path / "w.json"
    result = compute(spark, str(history_dir([_table(rows)], notes=None)), str(out),
                     WeightsParams(0.5, min_growth_span_seconds=DAY_S))
    growth = [r["size_growth_bytes_per_day"] for r in _lines(out)]
    assert growth[0] == pytest.approx(24_000.0) and growth[1] is None
    assert ("1 of 2 partitions have sizes over less than 1d (created late in the history, or "
            "sizes missing): their size_growth_bytes_per_day is null (no growth)") in result.notes
    assert result.notes[0].startswith("the history has no _notes.json: sampling grid from the "
                                      "data, step 1h (the spacing of 100% of consecutive")


def test_the_cli_is_quiet_and_shows_progress(history_dir: Any, tmp_path: Path) -> None:
    """`rebalance weights` in a pipe: one line per phase with the elapsed time, the notes, and
    no Spark or JVM log line (the JDK's own incubator-module notice aside)."""
    directory = history_dir([_table(_jittered_minutes(15))], notes=None)
    out = tmp_path / "w.json"
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}
    done = subprocess.run(
        [sys.executable, "-m", "cli", "weights", "--history", str(directory), "--out", str(out),
         "--master", "local[1]"], cwd=REPO, capture_output=True, text=True, timeout=600,
        env={**env, "COLUMNS": "300"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("wrote weights for 2 partitions to ")
    lines = done.stderr.strip().splitlines()
    phases = [line.split("] ", 1)[1] for line in lines if line.startswith("[")]
    assert phases == ["starting Spark (local[1])", "reading the history",
                      "finding the sampling grid", "computing weights", f"writing {out}"]
    notes = [line for line in lines if line.startswith("note: ")]
    assert len(notes) == 2 and "sampling grid from the data, step 1m" in notes[0]
    assert "spans only 14m" in notes[1] and "null (no growth)" in notes[1]
    others = [line for line in lines if not line.startswith(("[", "note: "))]
    assert others in ([], ["WARNING: Using incubator modules: jdk.incubator.vector"]), lines
