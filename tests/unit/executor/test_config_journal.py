"""ExecutorConfig's round trip through the journal header: what a run keeps comes back as it
was, a header written by an older version still reads, and only the overrides change what a
continued run uses."""

from __future__ import annotations

import json
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest

from executor.config import DEFAULT_QUOTA_WINDOW_SECONDS, ExecutorConfig, RunHeader, RunOverrides
from executor.gates import GatePolicy
from executor.journal import JournalFile, header_record, header_settings
from executor.plan import ExecutionPlan
from executor.readings import GateQueries
from executor.slo import SloPolicy
from kafka_rebalance.core.errors import ExecutionError, InputError
from planner.result import Move
from topology.model import Capacity

MB = 1_000_000
PLAN = ExecutionPlan.of([Move("t", 0, (1, 2), (1, 3), 5 * MB)])

# Every field away from its default.
EVERYTHING = ExecutorConfig(
    max_bytes_per_sec=7 * MB, concurrency=3, cooldown_seconds=12.5, poll_seconds=0.25,
    stall_intervals=9, elect_leaders=False, adaptive=True, adaptive_floor_bytes_per_sec=500_000,
    adaptive_every_polls=4, adaptive_change=0.25,
    capacities={1: Capacity(1e12, 1e8, 1e8), 2: Capacity(2e12, 2e8, 2e8)},
    gate=GatePolicy(margin=0.3, floor_bytes_per_sec=2.5 * MB, consecutive=6,
                    produce_p99_max_ms=45.0),
    queries=GateQueries(net_in="in_rate{{{selector}}}", broker_label="node", window="2m"),
    allow_under_replicated=True, allow_quota_burst=True, gate_timeout_seconds=600.0,
    quota_window_seconds=22.0, final_gate=True, finish_by=1_900_000_000.0,
    cordon_brokers=frozenset({4}),
    slo=SloPolicy(enabled=False, produce_p99_max_ms=80.0, fetch_p99_max_ms=None,
                  flush_p95_max_ms=40.0, under_replicated_max=3, consumer_lag_max=5000.0,
                  decrease=0.7, increase_fraction=0.2, floor_fraction=0.25, every_seconds=4.0))

# What the continuing process gives: the settings a journal never keeps.
PROCESS = RunOverrides(allow_under_replicated=True, allow_quota_burst=True,
                       finish_by=1_900_000_000.0, poll_seconds=0.25)


def as_written(config: ExecutorConfig, tmp_path: Path) -> dict[str, Any]:
    """The header's settings as a journal file on disk holds them."""
    path = tmp_path / "run.journal"
    JournalFile.create(path, header_record(PLAN, config.to_journal())).close()
    sink, records = JournalFile.open(path)
    sink.close()
    return header_settings(records)


def test_every_field_is_non_default() -> None:
    defaults = ExecutorConfig(max_bytes_per_sec=1)
    same = [f.name for f in fields(ExecutorConfig) if f.name != "max_bytes_per_sec"
            and getattr(EVERYTHING, f.name) == getattr(defaults, f.name)]
    assert same == []


def test_the_round_trip_through_a_journal_file_keeps_every_field(tmp_path: Path) -> None:
    restored = ExecutorConfig.from_journal(as_written(EVERYTHING, tmp_path), overrides=PROCESS)
    # never journaled as settings: capacities (an adaptive resume reads them again from
    # --capacities against the live brokers) and the brokers to cordon (that acts once, when
    # the run starts; the journal's cordon record keeps what it cordoned, for a cancel)
    assert restored == replace(EVERYTHING, capacities={}, cordon_brokers=frozenset())


def test_without_overrides_the_process_settings_are_the_defaults(tmp_path: Path) -> None:
    restored = ExecutorConfig.from_journal(as_written(EVERYTHING, tmp_path),
                                           overrides=RunOverrides())
    assert (restored.poll_seconds, restored.allow_under_replicated, restored.allow_quota_burst,
            restored.finish_by) == (1.0, False, False, None)
    assert restored.adaptive and restored.concurrency == 3 and restored.stall_intervals == 9


def test_a_new_cap_derives_the_adaptive_floor_again() -> None:
    settings = EVERYTHING.to_journal()
    slower = ExecutorConfig.from_journal(
        settings, overrides=RunOverrides(max_bytes_per_sec=400_000))
    assert (slower.max_bytes_per_sec, slower.adaptive_floor_bytes_per_sec) == (400_000, 400_000)
    faster = ExecutorConfig.from_journal(settings,
                                         overrides=RunOverrides(max_bytes_per_sec=20 * MB))
    assert faster.adaptive_floor_bytes_per_sec == MB
    off = ExecutorConfig.from_journal(settings, overrides=RunOverrides(adaptive=False))
    assert not off.adaptive and off.adaptive_floor_bytes_per_sec == 500_000


# The settings of a header written before this version kept the executor's tuning (and, in
# the oldest fixtures, before it kept the gate's queries and the quota window).
BEFORE_TUNING = {"max_bytes_per_sec": 2 * MB, "concurrency": 2, "cooldown_seconds": 5.0,
                 "adaptive": False, "elect_leaders": True, "gate_margin": 0.2,
                 "gate_floor_bytes_per_sec": 500_000.0, "gate_consecutive": 4,
                 "gate_timeout_seconds": 120.0, "produce_p99_max_ms": None,
                 "quota_window_seconds": 11.0, "final_gate": True,
                 "queries": GateQueries(window="30s").to_dict()}


def test_a_header_from_before_the_tuning_was_kept_reads_with_the_defaults() -> None:
    record = json.loads(json.dumps(header_record(PLAN, BEFORE_TUNING)))
    config = ExecutorConfig.from_journal(header_settings([record]), overrides=RunOverrides())
    assert config == ExecutorConfig(
        max_bytes_per_sec=2 * MB, concurrency=2, cooldown_seconds=5.0,
        gate=GatePolicy(margin=0.2, floor_bytes_per_sec=500_000.0, consecutive=4),
        gate_timeout_seconds=120.0, quota_window_seconds=11.0, final_gate=True,
        queries=GateQueries(window="30s"))


@pytest.mark.parametrize("settings", [
    {"max_bytes_per_sec": 2_000_000, "concurrency": 1},  # tests/unit/executor fixtures
    {"max_bytes_per_sec": 2 * MB, "concurrency": 1, "cooldown_seconds": 5.0,
     "gate_margin": 0.2},
])
def test_the_oldest_fixture_headers_still_read(settings: dict[str, Any]) -> None:
    config = ExecutorConfig.from_journal(settings, overrides=RunOverrides())
    assert config.max_bytes_per_sec == 2 * MB
    assert config.queries == GateQueries() and config.quota_window_seconds == 0.0
    assert config.adaptive_floor_bytes_per_sec == MB and config.stall_intervals == 30


def test_a_header_that_lost_its_quota_window_waits_kafkas_default() -> None:
    """A resume chooses the window from the brokers again (executor.runner); a cancel, which
    starts no copy, still builds its starter on the header's settings."""
    settings = {"max_bytes_per_sec": 2 * MB, "quota_window_seconds": None}
    config = ExecutorConfig.from_journal(settings, overrides=RunOverrides())
    assert config.quota_window_seconds is None
    assert config.quota_window == DEFAULT_QUOTA_WINDOW_SECONDS


def test_a_header_without_settings_needs_a_cap_and_takes_one() -> None:
    record = header_record(PLAN, {})
    del record["settings"]
    with pytest.raises(InputError, match="no throttle cap: pass --max-mbps"):
        ExecutorConfig.from_journal(header_settings([record]), overrides=RunOverrides())
    config = ExecutorConfig.from_journal(header_settings([record]),
                                         overrides=RunOverrides(max_bytes_per_sec=3 * MB))
    assert config == ExecutorConfig(max_bytes_per_sec=3 * MB)


@pytest.mark.parametrize("bad", [{"stall_intervals": "many"}, {"adaptive_change": [1]},
                                 {"adaptive_floor_bytes_per_sec": "x"}])
def test_malformed_tuning_is_a_corrupt_journal(bad: dict[str, Any]) -> None:
    with pytest.raises(ExecutionError, match="the run header's settings are malformed"):
        ExecutorConfig.from_journal({**BEFORE_TUNING, **bad}, overrides=RunOverrides())


def test_a_new_cap_must_be_positive() -> None:
    with pytest.raises(InputError, match="--max-mbps must be positive"):
        RunOverrides(max_bytes_per_sec=0)


def test_the_views_read_the_header_a_config_writes() -> None:
    header = RunHeader.of(EVERYTHING.to_journal())
    assert header.cap_bytes_per_sec == 7 * MB
    assert header.cooldown_seconds == 12.5
    assert header.concurrency == 3
    assert header.quota_window_seconds == EVERYTHING.quota_window_seconds
    assert header.adaptive is True
    assert header.queries == EVERYTHING.queries.to_dict()


@pytest.mark.parametrize(("settings", "expected"), [
    ({}, RunHeader()),  # a header from before settings were kept
    ({"max_bytes_per_sec": -5, "cooldown_seconds": float("nan")}, RunHeader()),
    ({"max_bytes_per_sec": True, "cooldown_seconds": "10"}, RunHeader()),  # not numbers
    ({"max_bytes_per_sec": float("inf")}, RunHeader()),
    ({"max_bytes_per_sec": 1e-300}, RunHeader()),  # under 1 B/s: no run ever capped so
    ({"concurrency": "auto"}, RunHeader(concurrency="auto")),
    ({"concurrency": 0}, RunHeader()),  # unreadable: one at a time
    ({"concurrency": "3"}, RunHeader(concurrency=3)),
    ({"quota_window_seconds": 0}, RunHeader(quota_window_seconds=0.0)),  # --quota-window 0
    ({"quota_window_seconds": -1}, RunHeader(quota_window_seconds=DEFAULT_QUOTA_WINDOW_SECONDS)),
    ({"queries": ["not", "a", "dict"]}, RunHeader()),
    ({"adaptive": "yes"}, RunHeader()),
    ({"max_bytes_per_sec": 2_000_000, "cooldown_seconds": 0}, RunHeader(2e6, 0.0)),
])
def test_an_old_or_edited_header_reads_as_unknown_or_default(
        settings: dict[str, Any], expected: RunHeader) -> None:
    assert RunHeader.of(settings) == expected
