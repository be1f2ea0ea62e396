"""Reading partition weights from the Spark job's output: Parquet (a file or a directory) or JSON
lines, checked row by row. Read with pyarrow/pandas (never pyspark); planner.weights applies them.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafka_rebalance.core.errors import InputError
from planner.weights import OPTIONAL_WEIGHT_COLUMNS, WEIGHT_COLUMNS, PartitionWeight
from topology.documents import decode_json, read_text
from topology.model import INT32_MAX, TopicPartition, is_topic_name
from topology.units import MAX_QUANTITY

_NUMERIC = (*WEIGHT_COLUMNS[2:], *OPTIONAL_WEIGHT_COLUMNS)


def _is_parquet_file(path: Path) -> bool:
    """Parquet files start with the magic bytes PAR1 (whatever their name)."""
    if path.suffix.lower() in (".parquet", ".pq"):
        return True
    with path.open("rb") as fh:
        return fh.read(4) == b"PAR1"


def _read_frame(path: Path) -> pd.DataFrame:
    if not path.exists():
        raise InputError(f"weights file {path} does not exist")
    _refuse_other_files(path)
    try:
        if path.is_dir() or _is_parquet_file(path):
            table = pq.read_table(path)
            _refuse_nan(table, path)
            return table.to_pandas()
        return _json_lines(path)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read weights {path} as Parquet or JSON lines: "
                         f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                         ) from None


def _refuse_other_files(path: Path) -> None:
    """A history directory, a snapshot or a plan given as --weights, named as what it is."""
    if path.is_dir() and (path / "_notes.json").is_file():
        raise InputError(f"weights {path} is a traffic history (`rebalance history export`), "
                         "not weights: compute them with `rebalance weights --history "
                         f"{path} --out weights.parquet` and give that file")
    if path.is_file() and not _is_parquet_file(path):
        with path.open("rb") as fh:
            head = fh.read(4096).decode("utf-8", "replace")
        compact = "".join(head.split())
        if compact.startswith("{") and any(f'"{key}":' in compact
                                           for key in ("brokers", "moves", "version")):
            kind = "plan" if '"moves":' in compact else "snapshot"
            raise InputError(f"weights {path} looks like a {kind} file, not weights: give the "
                             "output of `rebalance weights` (JSON lines or Parquet)")


def _json_lines(path: Path) -> pd.DataFrame:
    """Rows of a JSON-lines file, decoded by the shared JSON reader (topics stay strings even
    when they look like numbers, "007"; null stays apart from NaN until it is checked)."""
    lines = [line for line in read_text(path, "weights").splitlines() if line.strip()]
    try:
        rows = decode_json("[" + ",".join(lines) + "]")
    except ValueError:
        rows = [_json_line(line, number, path) for number, line in enumerate(lines, start=1)]
    bad = next((n for n, row in enumerate(rows, start=1) if not isinstance(row, dict)), None)
    if bad is not None:
        raise InputError(f"weights {path}: row {bad} is not a JSON object")
    if any("NaN" in line for line in lines):  # the only way in for a NaN: else no scan
        for row in rows:
            column = next((c for c in _NUMERIC if _is_nan(row.get(c))), None)
            if column is not None:
                raise _nan_error(path, row, column)
    try:
        return pd.DataFrame.from_records(rows)
    except OverflowError:  # an integer beyond 64 bits, which no column can hold
        number, column = next((n, c) for n, row in enumerate(rows, start=1)
                              for c, v in row.items()
                              if isinstance(v, int) and abs(v) >= 2**63)
        raise InputError(f"weights {path}: row {number} has a number too large in "
                         f"{str(column)!r:.40}; partitions are integers from 0 to {INT32_MAX} "
                         "and rates and sizes at most 1e24") from None


def _is_bool(value: object) -> bool:
    """true and false are JSON's, not numbers (pandas would read them as 1 and 0)."""
    return isinstance(value, bool | np.bool_)


def _partition_number(value: object) -> float:
    """A partition number as given (an integer from 0 to INT32_MAX, maybe stored as a float),
    else NaN: a bool, a string (even "3": the job writes numbers), a fraction, a number too
    large for a float."""
    if _is_bool(value) or not isinstance(value, int | float | np.integer | np.floating):
        return math.nan
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return math.nan
    return number if 0 <= number <= INT32_MAX and number % 1 == 0 else math.nan


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _json_line(line: str, number: int, path: Path) -> Any:
    try:
        return decode_json(line)
    except ValueError as exc:
        raise InputError(f"weights {path}: row {number} is not valid JSON ({exc})") from None


def _refuse_nan(table: pa.Table, path: Path) -> None:
    """NaN is no measurement and no number; a weight not measured is null (Parquet keeps the
    two apart, pandas would not)."""
    for column in _NUMERIC:
        if column in table.column_names and pa.types.is_floating(table[column].type):
            index = pc.index(pc.is_nan(table[column]), True).as_py()
            if index >= 0:
                raise _nan_error(path, table.slice(index, 1).to_pylist()[0], column)


def _nan_error(path: Path, row: dict[str, Any], column: str) -> InputError:
    topic, number = row.get("topic"), row.get("partition")
    name = (f"{topic}-{number}" if isinstance(topic, str) and is_topic_name(topic)
            else f"{topic!r:.60}-{number!r:.20}")
    return InputError(f"weights {path}: partition {name} has NaN {column}; give a finite "
                      "number, or null where nothing was measured")


def read_weights(path: Path) -> dict[TopicPartition, PartitionWeight]:
    """Read a weights file; InputError names a missing column or a bad row."""
    frame = _read_frame(path)
    if frame.empty and not len(frame.columns):
        raise InputError(f"weights {path}: the file holds no rows; give the output of "
                         "`rebalance weights` (JSON lines or Parquet)")
    missing = [c for c in WEIGHT_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"weights {path}: missing column(s) {', '.join(missing)} "
                         f"(expected {', '.join(WEIGHT_COLUMNS)})")
    for column in OPTIONAL_WEIGHT_COLUMNS:  # weights written before it: all unmeasured
        if column not in frame.columns:
            frame[column] = None
    frame = frame[[*WEIGHT_COLUMNS, *OPTIONAL_WEIGHT_COLUMNS]].copy()
    if frame["topic"].isna().any() or frame["partition"].isna().any():
        raise InputError(f"weights {path}: a row has no topic or partition")
    named = frame["topic"].map(lambda topic: isinstance(topic, str) and is_topic_name(topic))
    if not named.all():
        topic = frame["topic"][~named].iloc[0]
        if not isinstance(topic, str):  # 123 is a fine topic name, but not as a number
            raise InputError(f"weights {path}: topic {topic!s:.60} is not a JSON string; "
                             f"write topic names in quotes (\"{topic!s:.60}\")")
        raise InputError(f"weights {path}: topic {topic!r:.60} is not a Kafka topic name "
                         "(letters, digits, '.', '_' and '-')")
    numbers = frame["partition"].map(_partition_number)
    bad_partition = numbers.isna()
    if bad_partition.any():
        row = frame[bad_partition].iloc[0]
        raise InputError(f"weights {path}: topic {row['topic']} has partition "
                         f"{str(row['partition'])!r:.40}; partitions are integers from 0 to "
                         f"{INT32_MAX}, written as JSON numbers")
    for column in _NUMERIC:
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = ((values.isna() & frame[column].notna()) | values.isin([np.inf, -np.inf])
               | (values.abs() > MAX_QUANTITY) | frame[column].map(_is_bool)
               | frame[column].map(lambda value: isinstance(value, str)))  # "5": a hand edit
        if column != "size_growth_bytes_per_day":
            bad |= values < 0
        if bad.any():
            row = frame[bad].iloc[0]
            value = row[column]
            shown = repr(value) if isinstance(value, str) else str(value)  # '5': a string
            raise InputError(f"weights {path}: partition {row['topic']}-{row['partition']} has "
                             f"a non-numeric, negative or too large {column} ({shown:.40}); "
                             f"give a finite number up to {MAX_QUANTITY:.0e}")
        frame[column] = values.astype(float)
    out: dict[TopicPartition, PartitionWeight] = {}
    for topic, number, *values in frame.itertuples(index=False, name=None):
        key = TopicPartition(str(topic), int(number))
        if key in out:
            raise InputError(f"weights {path}: partition {key} appears more than once")
        b_in, b_out, size, growth, requests = (None if pd.isna(v) else float(v) for v in values)
        out[key] = PartitionWeight(b_in, b_out, size, growth, requests)
    return out
