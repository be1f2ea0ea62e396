"""Bad history input: missing columns, wrong types, no rows, bad quantile -> clear errors."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import (
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
)

from kafka_rebalance.core.errors import InputError
from spark_jobs.weights import (
    HISTORY_SCHEMA,
    HistoryInputError,
    WeightsParams,
    compute,
    main,
    run,
    run_job,
    transform,
)

T0 = datetime(2026, 1, 5, 13, 30, tzinfo=UTC)
NOTES = {"version": 1, "start": "2026-01-05T00:00:00+00:00", "step_seconds": 60}


def _schema_with(name: str, data_type: object | None) -> StructType:
    fields = [f for f in HISTORY_SCHEMA.fields if f.name != name]
    if data_type is not None:
        fields.append(StructField(name, data_type, True))  # type: ignore[arg-type]
    return StructType(fields)


@pytest.mark.parametrize("missing", [f.name for f in HISTORY_SCHEMA.fields])
def test_missing_column_is_named(spark: SparkSession, missing: str) -> None:
    df = spark.createDataFrame([], _schema_with(missing, None))
    with pytest.raises(HistoryInputError, match=f"no column '{missing}'"):
        transform(df, WeightsParams())


@pytest.mark.parametrize(
    ("column", "wrong"),
    [("bytes_in_per_sec", StringType()), ("partition", DoubleType()), ("ts", LongType()),
     ("size_bytes", StringType()), ("topic", IntegerType())],
)
def test_wrong_type_is_named(spark: SparkSession, column: str, wrong: object) -> None:
    df = spark.createDataFrame([], _schema_with(column, wrong))
    with pytest.raises(HistoryInputError, match=f"column '{column}' has type"):
        transform(df, WeightsParams())


def test_errors_are_input_errors() -> None:
    assert issubclass(HistoryInputError, InputError)


@pytest.mark.parametrize("quantile", [-0.1, 1.5])
def test_quantile_out_of_range(quantile: float) -> None:
    with pytest.raises(InputError, match="--quantile"):
        WeightsParams(quantile)


def test_timestamp_without_zone_is_read_as_utc(spark: SparkSession) -> None:
    schema = _schema_with("ts", TimestampNTZType())
    row = ("t", 0, 1.0, 2.0, 7, T0.replace(tzinfo=None))
    got = transform(spark.createDataFrame([row], schema), WeightsParams()).collect()[0]
    assert got.hourly_bytes_in_per_sec[13] == 1.0
    assert got.peak_hour == 13


def test_no_rows_is_an_error(spark: SparkSession, tmp_path: Path) -> None:
    history = tmp_path / "history"
    spark.createDataFrame([], HISTORY_SCHEMA).write.parquet(str(history))
    (history / "_notes.json").write_text(json.dumps(NOTES))
    with pytest.raises(HistoryInputError, match="no rows"):
        run(spark, str(history), str(tmp_path / "w.json"), WeightsParams())


def test_missing_dataset_is_an_error(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(HistoryInputError, match="does not exist"):
        run(spark, str(tmp_path / "nope"), str(tmp_path / "w.json"), WeightsParams())


def test_main_exits_non_zero_on_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          spark: SparkSession) -> None:
    history = tmp_path / "history"
    spark.createDataFrame([], _schema_with("bytes_out_per_sec", None)).write.parquet(str(history))
    (history / "_notes.json").write_text(json.dumps(NOTES))
    code = main(["--history", str(history), "--out", str(tmp_path / "w"), "--quantile", "0.9"])
    assert code == 2
    assert "bytes_out_per_sec" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["weights.json", "weights.parquet"])
def test_run_writes_one_sorted_file(spark: SparkSession, tmp_path: Path, name: str) -> None:
    rows = [(T0, "b", 1, 1.0, 2.0, 10), (T0, "a", 3, 5.0, 6.0, 20), (T0, "a", 0, 3.0, 4.0, None)]
    history = tmp_path / "history"
    spark.createDataFrame(rows, HISTORY_SCHEMA).write.parquet(str(history))
    (history / "_notes.json").write_text(json.dumps(NOTES))
    out = tmp_path / name
    assert run(spark, str(history), str(out), WeightsParams()) == 3
    assert out.is_file()
    reader = spark.read.json if name.endswith(".json") else spark.read.parquet
    got = [(r.topic, r.partition, r.bytes_in_per_sec) for r in reader(str(out)).collect()]
    assert got == [("a", 0, 3.0), ("a", 3, 5.0), ("b", 1, 1.0)]
    assert not list(tmp_path.glob(".*tmp"))


def test_topics_kafka_cannot_have_are_left_out_with_a_note(spark: SparkSession,
                                                           tmp_path: Path) -> None:
    """A broken exporter's labels ('', '..', a newline) must not make `plan --weights` refuse
    the whole file: those rows are left out and counted in a note."""
    rows = [(T0, "orders", 0, 1.0, 2.0, 10), (T0, "", 1, 5.0, 6.0, 20),
            (T0, "..", 2, 3.0, 4.0, 30), (T0, "a\nb", 3, 3.0, 4.0, 30)]
    history = tmp_path / "history"
    spark.createDataFrame(rows, HISTORY_SCHEMA).write.parquet(str(history))
    (history / "_notes.json").write_text(json.dumps(NOTES))
    out = tmp_path / "w.json"
    result = compute(spark, str(history), str(out), WeightsParams())
    assert result.partitions == 1
    assert any(n.startswith("3 partition(s) of the history have a topic name Kafka does not "
                            "allow") for n in result.notes), result.notes
    assert [json.loads(line)["topic"] for line in out.read_text().splitlines()] == ["orders"]


def test_an_output_that_is_the_history_is_refused_before_spark(tmp_path: Path) -> None:
    history = tmp_path / "history"
    history.mkdir()
    (history / "part-0.parquet").write_bytes(b"PAR1")
    with pytest.raises(InputError, match="would overwrite or sit inside the history"):
        run_job(str(history), f"file://{history}", WeightsParams())
    assert (history / "part-0.parquet").read_bytes() == b"PAR1"
