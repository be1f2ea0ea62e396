"""The weights job's input boundary: notes, files, schemas and rows; one-line errors, exit 2.

Bad local input is refused before Spark starts (pyarrow reads the footers); files that store
columns differently (int32/int64, float/double, ms/us/ns, with or without zone) are read together.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from spark_jobs.weights import HistoryInputError, WeightsParams, main, run
from spark_jobs.weights_io import NOTES_FILE, check_local_history, parse_notes, read_failure

T0_US = 1_767_571_200_000_000  # 2026-01-05T00:00:00Z
MINUTE_US = 60_000_000
REPO = Path(__file__).resolve().parents[3]


def _table(minutes: list[float], rates: list[float], partition: int = 0, *,
           ts_type: pa.DataType | None = None, partition_type: pa.DataType | None = None,
           rate_type: pa.DataType | None = None, size_type: pa.DataType | None = None,
           sizes: list[Any] | None = None, drop: str | None = None) -> pa.Table:
    """History rows in any storage layout (the ts values are always the same instants)."""
    micros = [T0_US + round(m * MINUTE_US) for m in minutes]
    ts_type = ts_type or pa.timestamp("us", tz="UTC")
    scale = {"s": 1_000_000, "ms": 1000, "us": 1, "ns": -1000}[ts_type.unit]
    raw = [m // scale if scale > 0 else m * -scale for m in micros]
    columns = {
        "ts": pa.array(raw, pa.int64()).cast(pa.timestamp(ts_type.unit)).cast(ts_type),
        "topic": pa.array(["t"] * len(minutes)),
        "partition": pa.array([partition] * len(minutes), partition_type or pa.int32()),
        "bytes_in_per_sec": pa.array(rates, rate_type or pa.float64()),
        "bytes_out_per_sec": pa.array(rates, rate_type or pa.float64()),
        "size_bytes": pa.array(sizes or [None] * len(minutes), size_type or pa.int64()),
    }
    if drop:
        del columns[drop]
    return pa.table(columns)


GOOD = _table([0, 1], [1.0, 2.0])


def _error(tmp: Path) -> str:
    with pytest.raises(HistoryInputError) as caught:
        check_local_history(tmp)
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(("notes", "expected"), [
    ("{not json", "is not valid JSON"),
    ("[1, 2]", "must hold a JSON object"),
    (json.dumps({"version": 2, "start": "2026-01-05T00:00:00Z", "step_seconds": 60}),
     "version 2"),
    (json.dumps({"version": 1, "start": "2026-01-05T00:00:00Z"}), "step_seconds None"),
    (json.dumps({"version": 1, "start": "2026-01-05T00:00:00Z", "step_seconds": 0}),
     "step_seconds 0"),
    (json.dumps({"version": 1, "start": "2026-01-05T00:00:00Z", "step_seconds": "60"}),
     "step_seconds '60'"),
    (json.dumps({"version": 1, "start": "yesterday", "step_seconds": 60}), "start 'yesterday'"),
    ("[" * 100_000 + "]" * 100_000, "is not valid JSON (nested too deeply at line 1"),
    (json.dumps({"version": 1, "start": "2026-01-05T00:00:00Z", "step_seconds": math.nan}),
     "step_seconds nan"),
    ('{"version": 1, "start": "\\udc80", "step_seconds": 60}', "lone leading surrogate"),
    (json.dumps({"version": True, "start": "2026-01-05T00:00:00Z", "step_seconds": 60}),
     "version True"),
], ids=["not JSON", "not an object", "version 2", "no step", "step 0",
        "step as text", "start as a word", "nested 100,000 deep", "step NaN",
        "lone surrogate", "version true"])
def test_malformed_notes(history_dir: Any, notes: str | None, expected: str) -> None:
    # Missing notes are no error: the grid then comes from --step or the data
    # (tests/unit/spark/test_weights_grid.py).
    assert expected in _error(history_dir([GOOD], notes=notes))


def test_notes_give_the_grid() -> None:
    notes = parse_notes(json.dumps({"version": 1, "start": "2026-01-05T01:00:00",
                                    "step_seconds": 30}), "n")
    assert (notes.start_seconds, notes.step_seconds) == (T0_US / 1e6 + 3600, 30.0)


def test_no_directory_no_files_no_rows(history_dir: Any, tmp_path: Path) -> None:
    assert "does not exist" in _error(tmp_path / "nope")
    assert "has no data files" in _error(history_dir([], name="empty"))
    assert "has no rows" in _error(history_dir([GOOD.slice(0, 0)], name="no-rows"))


def test_a_file_that_is_not_parquet(history_dir: Any) -> None:
    directory = history_dir([GOOD])
    (directory / "part-00009.parquet").write_text("not parquet")
    message = _error(directory)
    assert "part-00009.parquet is not a readable Parquet file" in message


@pytest.mark.parametrize(("bad", "expected"), [
    (_table([2], [1.0], drop="ts"), "has no column 'ts'"),
    (_table([2], [1.0], drop="size_bytes"), "has no column 'size_bytes'"),
    (_table([2], [1.0]).set_column(0, "ts", pa.array([5], pa.int64())),
     "column 'ts' has type int64, expected a timestamp"),
    (_table([2], [1.0]).set_column(2, "partition", pa.array([0.5])),
     "column 'partition' has type double, expected an integer"),
    (_table([2], [1.0]).set_column(3, "bytes_in_per_sec", pa.array(["1"])),
     "column 'bytes_in_per_sec' has type string, expected a number"),
])
def test_one_file_with_a_wrong_schema_is_named(history_dir: Any, bad: pa.Table,
                                               expected: str) -> None:
    message = _error(history_dir([GOOD, bad]))
    assert "part-00001.parquet" in message and expected in message


def test_files_of_every_layout_are_read_together(spark: SparkSession, history_dir: Any,
                                                 tmp_path: Path) -> None:
    # Partition 0 over three files: us with zone, ns without zone (pandas' default unit) with
    # int64 partitions and float32 rates, ms in another zone with float sizes (pandas writes
    # an integer column with nulls as float64). One sample per minute 0..5: 1, 2, ..., 6.
    tables = [
        _table([0, 1], [1.0, 2.0], sizes=[10, 20]),
        _table([2, 3], [3.0, 4.0], ts_type=pa.timestamp("ns"), partition_type=pa.int64(),
               rate_type=pa.float32(), sizes=[30, 40]),
        _table([4, 5], [5.0, 6.0], ts_type=pa.timestamp("ms", tz="Europe/Berlin"),
               size_type=pa.float64(), sizes=[50.0, math.nan]),
    ]
    out = tmp_path / "w.json"
    notes = {"version": 1, "start": "2026-01-05T00:00:00Z", "step_seconds": 60}
    assert run(spark, str(history_dir(tables, notes=notes)), str(out), WeightsParams(1.0)) == 1
    got = json.loads(out.read_text())
    assert (got["bytes_in_per_sec"], got["size_bytes"]) == (6.0, 50)
    assert math.isclose(got["size_growth_bytes_per_day"], 10.0 * 1440, rel_tol=1e-6)
    assert got["hourly_bytes_in_per_sec"][0] == 6.0


def test_a_pandas_written_history_is_read(spark: SparkSession, tmp_path: Path) -> None:
    directory = tmp_path / "history"
    directory.mkdir()
    frame = pd.DataFrame({"ts": pd.date_range("2026-01-05", periods=4, freq="min", tz="UTC"),
                          "topic": "t", "partition": 3, "bytes_in_per_sec": [4.0, 1, 3, 2],
                          "bytes_out_per_sec": 0.0, "size_bytes": [1, 2, None, 4]})
    frame.to_parquet(directory / "part-0.parquet")  # ns timestamps, int64 partition
    (directory / NOTES_FILE).write_text(json.dumps(
        {"version": 1, "start": "2026-01-05T00:00:00Z", "step_seconds": 60}))
    out = tmp_path / "w.json"
    assert run(spark, str(directory), str(out), WeightsParams(0.5)) == 1
    got = json.loads(out.read_text())
    assert (got["partition"], got["bytes_in_per_sec"], got["size_bytes"]) == (3, 2.5, 4)


def test_spark_read_failures_become_one_line() -> None:
    failure = read_failure(RuntimeError(
        "Job aborted: org.apache.spark.SparkException: [FAILED_READ_FILE.NO_HINT] Encountered "
        "error while reading file file:///h/part-1.parquet.  SQLSTATE: KD001\n\tat x.y(z)"))
    assert failure is not None
    assert str(failure) == ("cannot read the history dataset: [FAILED_READ_FILE.NO_HINT] "
                            "Encountered error while reading file file:///h/part-1.parquet.")
    assert read_failure(RuntimeError("java.lang.OutOfMemoryError")) is None


@pytest.mark.parametrize("entry", ["spark_jobs.weights", "cli"])
def test_bad_input_exits_2_with_one_line_and_no_jvm(history_dir: Any, tmp_path: Path,
                                                    entry: str) -> None:
    directory = history_dir([GOOD, _table([2], [1.0], drop="partition")])
    args = ["--history", str(directory), "--out", str(tmp_path / "w.json")]
    command = [sys.executable, "-m", entry, *(["weights"] if entry == "cli" else []), *args]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "COLUMNS": "300"})
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "part-00001.parquet has no column 'partition'" in lines[0]


def test_main_reports_the_error(history_dir: Any, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    directory = history_dir([GOOD], notes="{}")
    assert main(["--history", str(directory), "--out", str(tmp_path / "w.json")]) == 2
    assert "version None" in capsys.readouterr().err


def test_a_hive_partitioned_history_is_named_as_such(tmp_path: Path) -> None:
    directory = tmp_path / "hive"
    (directory / "topic=t").mkdir(parents=True)
    pq.write_table(_table([0, 1], [1.0, 2.0], drop="topic"),
                   directory / "topic=t" / "part-0.parquet")
    message = _error(directory)
    assert "has no column 'topic'" in message
    assert "Hive-partitioned layout this reader does not read" in message


def test_a_missing_column_in_a_plain_layout_gets_no_hive_hint(history_dir: Any) -> None:
    assert "Hive" not in _error(history_dir([_table([2], [1.0], drop="topic")]))
