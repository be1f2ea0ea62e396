"""Partition weights from the Spark job's output (Parquet or JSON lines), applied to a topology.

The weights replace a snapshot's instantaneous rates with measured averages, and can project
sizes `horizon_days` ahead by each partition's growth. Read with pyarrow/pandas (never pyspark).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from topology.errors import InputError
from topology.model import Partition, TopicPartition, Topology

WEIGHT_COLUMNS = ("topic", "partition", "bytes_in_per_sec", "bytes_out_per_sec", "size_bytes",
                  "size_growth_bytes_per_day")
_NUMERIC = WEIGHT_COLUMNS[2:]
_MAX_NUMBER = 1e24  # bytes or bytes/s beyond any real partition: a unit mix-up


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
    try:
        if path.is_dir() or _is_parquet_file(path):
            return pd.read_parquet(path)
        # Topic names are strings even when they look like numbers ("007", "1e3").
        return pd.read_json(path, lines=True, dtype={"topic": object})
    except FileNotFoundError:
        raise InputError(f"weights file {path} does not exist") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read weights {path} as Parquet or JSON lines: "
                         f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                         ) from None


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
               | (values.abs() > _MAX_NUMBER))
        if column != "size_growth_bytes_per_day":
            bad |= values < 0
        if bad.any():
            row = frame[bad].iloc[0]
            raise InputError(f"weights {path}: partition {row['topic']}-{row['partition']} has "
                             f"a non-numeric or negative {column} ({row[column]}); give a finite "
                             f"number up to {_MAX_NUMBER:.0e}")
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
    for p in topology.partitions:
        w = weights.get(p.key)
        if w is None:
            unweighted += 1
            parts.append(p)
            continue
        parts.append(Partition(
            p.topic, p.partition, p.replicas, w.projected_size(p.size_bytes, horizon_days),
            p.bytes_in_per_sec if w.bytes_in_per_sec is None else w.bytes_in_per_sec,
            p.bytes_out_per_sec if w.bytes_out_per_sec is None else w.bytes_out_per_sec))
    known = {p.key for p in topology.partitions}
    unknown = sum(1 for key in weights if key not in known)
    notes = []
    if unweighted:
        notes.append(f"{unweighted} partition(s) have no weight; their snapshot values are used")
    if unknown:
        notes.append(f"{unknown} weight row(s) name partitions the cluster does not have")
    return topology.with_partitions(parts), tuple(notes)
