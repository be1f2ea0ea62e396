"""One local SparkSession for the whole test run: one core, one shuffle partition, no UI.

`history_dir` writes a history dataset the way `rebalance history export` does: Parquet files
plus `_notes.json` (step 60 s, start 2026-01-05T00:00:00Z unless a test passes other notes).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from spark_jobs.session import build_session

NOTES: dict[str, Any] = {"version": 1, "start": "2026-01-05T00:00:00+00:00",
                         "end": "2026-01-06T00:00:00+00:00", "step_seconds": 60.0}

HistoryWriter = Callable[..., Path]


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = build_session("local[1]", app_name="rebalance-unit-tests", shuffle_partitions=1)
    session.conf.set("spark.sql.adaptive.enabled", "false")
    yield session
    session.stop()


@pytest.fixture
def history_dir(tmp_path: Path) -> HistoryWriter:
    """write(tables, notes=NOTES, name="history") -> the directory (notes=None: no notes file)."""

    def write(tables: Sequence[pa.Table], notes: dict[str, Any] | str | None = NOTES,
              name: str = "history") -> Path:
        directory = tmp_path / name
        directory.mkdir()
        for index, table in enumerate(tables):
            pq.write_table(table, directory / f"part-{index:05d}.parquet")
        if notes is not None:
            text = notes if isinstance(notes, str) else json.dumps(notes)
            (directory / "_notes.json").write_text(text)
        return directory

    return write
