"""`rebalance resume` and an auto cycle that resumes a run follow one rule: from the same journal
with the same cap and deadline they continue with equal settings (the run's own cooldown,
gates and tuning; the cap given now). Each path runs as it does in production up to the moment
it hands its settings to the executor."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import cli
from executor.config import ExecutorConfig
from executor.lease import LeaseHold
from executor.runner import Executor
from kafka_rebalance.autobalance.cycle import Action
from kafka_rebalance.autobalance.orchestrator import run_cycle
from kafka_rebalance.commands import execute_cmd
from kafka_rebalance.usecases import run as run_usecase
from tests.unit.autobalance.test_orchestrator import MONDAY_1344, setup
from tests.unit.executor.fakes import MB

WINDOW_END = datetime(1970, 1, 13, 13, 47, tzinfo=UTC)


class Handed(Exception):
    """Stops a path once it has handed its settings to the executor."""


@pytest.fixture
def handed(monkeypatch: pytest.MonkeyPatch) -> list[ExecutorConfig]:
    """The configs each resume hands to `Executor.resume`, in order."""
    seen: list[ExecutorConfig] = []

    def resume(records: Any, sink: Any, ports: Any, config: ExecutorConfig,
               *args: Any, **kwargs: Any) -> Executor:
        seen.append(config)
        raise Handed

    monkeypatch.setattr(Executor, "resume", resume)
    return seen


def test_resume_and_an_auto_cycle_continue_a_run_with_equal_settings(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, handed: list[ExecutorConfig]) -> None:
    world, settings, edge, _, said = setup(tmp_path, "daily 13:00-13:47", MONDAY_1344 + 175)
    first = run_cycle(settings, edge)  # stops at the window's end with moves left
    assert first.journal_path is not None and first.report is not None

    # a restarted auto process: a new cap, and a cooldown meant for its new runs
    world.clock.t = datetime(1970, 1, 13, 13, 0, tzinfo=UTC).timestamp()
    restarted = replace(settings, executor=replace(settings.executor, max_bytes_per_sec=5 * MB,
                                                   cooldown_seconds=30.0))
    with pytest.raises(Handed):
        run_cycle(restarted, edge)
    assert said[-1].startswith(f"{Action.RESUME.value}: ")

    @contextmanager
    def fake_ports(*args: object) -> Iterator[Any]:
        yield world.ports()

    @contextmanager
    def no_lease(*args: object) -> Iterator[LeaseHold]:
        yield LeaseHold()

    monkeypatch.setattr(run_usecase, "real_ports", fake_ports)
    monkeypatch.setattr(run_usecase, "cluster_lease", no_lease)
    monkeypatch.setattr(execute_cmd, "_local_now",
                        lambda: datetime.fromtimestamp(world.clock.t, UTC))
    result = CliRunner().invoke(cli.app, [
        "resume", "--journal", str(first.journal_path), "--bootstrap", "127.0.0.1:1",
        "--prometheus", "http://127.0.0.1:1", "--max-mbps", "5",
        "--finish-by", WINDOW_END.isoformat()])
    assert isinstance(result.exception, Handed), result.output

    by_auto, by_resume = handed
    assert by_auto == by_resume
    assert by_auto.max_bytes_per_sec == 5 * MB  # the cap given now
    assert by_auto.cooldown_seconds == settings.executor.cooldown_seconds == 0.0  # the run's
    assert by_auto.stall_intervals == 5 and by_auto.gate.consecutive == 2  # the run's tuning
    assert by_auto.finish_by == WINDOW_END.timestamp()
