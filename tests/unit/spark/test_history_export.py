"""History export: duration parsing, chunking, the size-proportional split, the written dataset."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafka_rebalance.core.errors import InputError, MetricsError
from topology.history import (
    HISTORY_ARROW_SCHEMA,
    NOTES_FILE,
    HistoryQueries,
    Series,
    chunk_ranges,
    export_history,
    parse_duration,
    split_topic_rates,
)

T0 = 1_767_571_200.0  # 2026-01-05T00:00:00Z


@pytest.mark.parametrize(("text", "seconds"), [("7d", 604_800), ("60s", 60), ("1h30m", 5400),
                                               ("90", 90), ("2w", 1_209_600)])
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text, "--since") == seconds


@pytest.mark.parametrize("text", ["", "7x", "d7", "-5", "0s", "1h 30m"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(InputError, match="--since"):
        parse_duration(text, "--since")


def test_chunks_cover_every_step_once_within_the_limit() -> None:
    ranges = chunk_ranges(0.0, 7 * 86_400.0, 60.0, max_points=11_000)
    points = [int((e - s) / 60) + 1 for s, e in ranges]
    assert max(points) <= 11_000
    assert sum(points) == 7 * 1440 + 1
    assert ranges[0][0] == 0.0 and ranges[-1][1] == 7 * 86_400.0
    assert all(b[0] == a[1] + 60 for a, b in itertools.pairwise(ranges))


class FakeRange:
    """Answers each query from a fixed table, recording the calls."""

    def __init__(self, answers: dict[str, Series]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, float, float, float]] = []

    def query_range(self, query: str, start: float, end: float, step: float) -> Series:
        self.calls.append((query, start, end, step))
        return [(labels, [(t, v) for t, v in samples if start <= t <= end])
                for labels, samples in self.answers[query]]


QUERIES = HistoryQueries("in", "out", "size")


def _answers() -> dict[str, Series]:
    steps = [T0, T0 + 60]
    return {
        "in": [({"topic": "t"}, [(s, 300.0) for s in steps])],
        "out": [({"topic": "t"}, [(s, 600.0) for s in steps])],
        "size": [({"topic": "t", "partition": "0"}, [(T0, 100.0), (T0 + 60, 0.0)]),
                 ({"topic": "t", "partition": "1"}, [(T0, 200.0), (T0 + 60, 0.0)])],
    }


def test_split_is_proportional_to_size_and_equal_without_size() -> None:
    answers = _answers()
    frame = split_topic_rates(answers["in"], answers["out"], answers["size"])
    assert list(frame.columns) == [f.name for f in HISTORY_ARROW_SCHEMA]
    assert frame["bytes_in_per_sec"].tolist() == [100.0, 200.0, 150.0, 150.0]
    assert frame["bytes_out_per_sec"].tolist() == [200.0, 400.0, 300.0, 300.0]
    assert frame["size_bytes"].tolist() == [100, 200, 0, 0]
    assert frame["partition"].tolist() == [0, 1, 0, 1]


def test_a_partition_added_mid_window_has_no_rows_before_it_existed() -> None:
    """Partition 1 appears at the second step: before that its topic's whole rate is
    partition 0's, and partition 1 has no row (not a rate of 0, which would read as idle)."""
    steps = [T0, T0 + 60]
    frame = split_topic_rates(
        [({"topic": "t"}, [(s, 300.0) for s in steps])],
        [({"topic": "t"}, [(s, 600.0) for s in steps])],
        [({"topic": "t", "partition": "0"}, [(T0, 100.0), (T0 + 60, 100.0)]),
         ({"topic": "t", "partition": "1"}, [(T0 + 60, 200.0)])])
    assert frame["partition"].tolist() == [0, 0, 1]
    assert frame["bytes_in_per_sec"].tolist() == [300.0, 100.0, 200.0]
    assert frame["size_bytes"].tolist() == [100, 100, 200]


def test_export_writes_dataset_and_notes(tmp_path: Path) -> None:
    source = FakeRange(_answers())
    progress: list[tuple[int, int]] = []
    out = tmp_path / "history"
    summary = export_history(source, T0, T0 + 60, 60.0, out, QUERIES,
                             on_chunk=lambda i, n: progress.append((i, n)))
    assert summary.rows == 4 and summary.partitions == 2 and summary.chunks == 1
    assert progress == [(1, 1)]
    table = pq.read_table(out)
    assert table.schema.equals(HISTORY_ARROW_SCHEMA, check_metadata=False)
    assert table.num_rows == 4
    assert b"log size" in pq.read_schema(out / summary.files[0]).metadata[b"rebalance.history.note"]
    notes = json.loads((out / NOTES_FILE).read_text())
    assert notes["rates_split_by_size"] is True
    assert "proportion to each partition's log size" in notes["notes"][0]


def test_export_refuses_a_non_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "x").write_text("keep me")
    with pytest.raises(InputError, match="not an empty directory"):
        export_history(FakeRange(_answers()), T0, T0 + 60, 60.0, tmp_path, QUERIES)
    assert (tmp_path / "x").read_text() == "keep me"


def test_export_with_no_series_is_a_metrics_error(tmp_path: Path) -> None:
    source = FakeRange({"in": [], "out": [], "size": []})
    with pytest.raises(MetricsError, match="no partition sizes"):
        export_history(source, T0, T0 + 60, 60.0, tmp_path / "h", QUERIES)


def test_request_rates_are_exported_split_like_the_bytes(tmp_path: Path) -> None:
    answers = {**_answers(), "req": [({"topic": "t"}, [(T0, 30.0), (T0 + 60, 10.0)])]}
    out = tmp_path / "history"
    export_history(FakeRange(answers), T0, T0 + 60, 60.0, out,
                   HistoryQueries("in", "out", "size", topic_requests="req"))
    table = pq.read_table(out)
    assert table["requests_per_sec"].to_pylist() == [10.0, 20.0, 5.0, 5.0]
    assert json.loads((out / NOTES_FILE).read_text())["queries"]["topic_requests"] == "req"
    # without the query (a history from before): the column is there, every value null
    plain = tmp_path / "plain"
    export_history(FakeRange(_answers()), T0, T0 + 60, 60.0, plain, QUERIES)
    assert pq.read_table(plain)["requests_per_sec"].to_pylist() == [None] * 4
