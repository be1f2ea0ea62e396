"""Partition weights from the Spark job's output (Parquet or JSON lines), applied to a topology.

The weights replace a snapshot's instantaneous rates with measured averages, and can project
sizes `horizon_days` ahead by each partition's growth. Read with pyarrow/pandas (never pyspark).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from core.errors import InputError
from topology.documents import decode_json, read_text
from topology.model import Partition, TopicPartition, Topology, is_topic_name
from topology.units import MAX_QUANTITY

WEIGHT_COLUMNS = ("topic", "partition", "bytes_in_per_sec", "bytes_out_per_sec", "size_bytes",
                  "size_growth_bytes_per_day")
_NUMERIC = WEIGHT_COLUMNS[2:]


@dataclass(frozen=True, slots=True)
class PartitionWeight:
    """Measured rates, size and growth of one partition; None where nothing was measured."""

    bytes_in_per_sec: float | None
    bytes_out_per_sec: float | None
    size_bytes: float | None
    size_growth_bytes_per_day: float | None

    def projected_size(self, snapshot_size: int, horizon_days: float) -> int:
        """Size after `horizon_days` of growth (the snapshot's size when none was measured)."""
        base = snapshot_size if self.size_bytes is None else self.size_bytes
        growth = self.size_growth_bytes_per_day or 0.0
        return max(0, round(base + growth * horizon_days))


def _is_parquet_file(path: Path) -> bool:
    """Parquet files start with the magic bytes PAR1 (whatever their name)."""
    if path.suffix.lower() in (".parquet", ".pq"):
        return True
    with path.open("rb") as fh:
        return fh.read(4) == b"PAR1"


def _read_frame(path: Path) -> pd.DataFrame:
    if not path.exists():
        raise InputError(f"weights file {path} does not exist")
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
    return pd.DataFrame.from_records(rows)


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
    missing = [c for c in WEIGHT_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"weights {path}: missing column(s) {', '.join(missing)} "
                         f"(expected {', '.join(WEIGHT_COLUMNS)})")
    frame = frame[list(WEIGHT_COLUMNS)].copy()
    if frame["topic"].isna().any() or frame["partition"].isna().any():
        raise InputError(f"weights {path}: a row has no topic or partition")
    numbers = pd.to_numeric(frame["partition"], errors="coerce")
    bad_partition = ~numbers.notna() | (numbers < 0) | (numbers % 1 != 0)
    if bad_partition.any():
        row = frame[bad_partition].iloc[0]
        raise InputError(f"weights {path}: topic {row['topic']} has partition "
                         f"{str(row['partition'])!r}; partitions are integers >= 0")
    for column in _NUMERIC:
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = ((values.isna() & frame[column].notna()) | values.isin([np.inf, -np.inf])
               | (values.abs() > MAX_QUANTITY))
        if column != "size_growth_bytes_per_day":
            bad |= values < 0
        if bad.any():
            row = frame[bad].iloc[0]
            raise InputError(f"weights {path}: partition {row['topic']}-{row['partition']} has "
                             f"a non-numeric or negative {column} ({row[column]}); give a finite "
                             f"number up to {MAX_QUANTITY:.0e}")
        frame[column] = values.astype(float)
    out: dict[TopicPartition, PartitionWeight] = {}
    for topic, number, *values in frame.itertuples(index=False, name=None):
        key = TopicPartition(str(topic), int(number))
        if key in out:
            raise InputError(f"weights {path}: partition {key} appears more than once")
        b_in, b_out, size, growth = (None if pd.isna(v) else float(v) for v in values)
        out[key] = PartitionWeight(b_in, b_out, size, growth)
    return out


def apply_weights(topology: Topology, weights: Mapping[TopicPartition, PartitionWeight],
                  horizon_days: float = 0.0) -> tuple[Topology, tuple[str, ...]]:
    """The topology with weighted rates and (projected) sizes, and notes on what did not match.

    Partitions without a weight, and null (unmeasured) fields of a weight, keep the snapshot's
    values; weights of partitions the topology lacks (deleted topics) are ignored.
    """
    if not 0 <= horizon_days < math.inf:
        raise InputError(f"--horizon must not be negative or infinite, got {horizon_days}")
    parts: list[Partition] = []
    unweighted = 0
    grown = stored = 0  # bytes on disk (every replica): from growth, and in all
    for p in topology.partitions:
        w = weights.get(p.key)
        if w is None:
            unweighted += 1
            parts.append(p)
            stored += p.size_bytes * len(p.replicas)
            continue
        projected = w.projected_size(p.size_bytes, horizon_days)
        grown += (projected - w.projected_size(p.size_bytes, 0.0)) * len(p.replicas)
        stored += projected * len(p.replicas)
        parts.append(Partition(
            p.topic, p.partition, p.replicas, projected,
            p.bytes_in_per_sec if w.bytes_in_per_sec is None else w.bytes_in_per_sec,
            p.bytes_out_per_sec if w.bytes_out_per_sec is None else w.bytes_out_per_sec))
    known = {p.key for p in topology.partitions}
    unknown = sum(1 for key in weights if key not in known)
    notes = []
    if unweighted:
        notes.append(f"{unweighted} partition(s) have no weight; their snapshot values are used")
    if unknown:
        notes.append(f"{unknown} weight row(s) name partitions the cluster does not have")
    if grown > stored / 2:  # one sentence naming the cause when a plan then finds disks full
        notes.append(f"{grown / stored:.0%} of the disk projected --horizon {horizon_days:g} "
                     f"days ahead is growth from the weights (+{grown / 1e9:,.1f} GB): if the "
                     "plan finds the brokers too full, that growth is why; weights from a "
                     "history of minutes extrapolate a burst (recompute them from days of "
                     "history, or plan without --horizon)")
    return topology.with_partitions(parts), tuple(notes)
