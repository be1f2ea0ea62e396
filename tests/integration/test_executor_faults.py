"""Faults against the real sandbox: kill -9 mid-move then `resume`, `cancel` mid-move, and
Prometheus stopped mid-run (the executor holds, then continues once it is back).

Moves copy ~8 MB under a 0.5 MB/s throttle, so there is time to act while a move is copying.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the sibling module's helpers (importlib mode)
from test_executor_run import (
    create_topic,
    drop_test_topics,
    layout,
    make_plan,
    move_in,
    rebalance,
    replicas_of,
    start_rebalance,
    throttle_configs,
    wait_for,
)

from executor.journal import RunOutcome, read_journal
from executor.state import MoveState
from sandbox import process
from sandbox.state import SandboxInfo, read_state, write_state
from topology.kafka_admin import KafkaClusterAdmin

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _drop_topics(sandbox: SandboxInfo) -> Iterator[None]:
    yield
    drop_test_topics(sandbox)

BIG_PARTITION = 8_000_000
SLOW_MBPS = "0.5"


@pytest.fixture
def admin(sandbox: SandboxInfo) -> KafkaClusterAdmin:
    client = KafkaClusterAdmin(sandbox.bootstrap)
    yield client  # type: ignore[misc]
    client.close()


def slow_args(info: SandboxInfo, plan: Path, journal: Path) -> list[str]:
    return ["execute", str(plan), "--bootstrap", info.bootstrap, "--prometheus",
            info.prometheus_url, "--max-mbps", SLOW_MBPS, "--journal", str(journal),
            "--poll-seconds", "0.5"]


def conn(info: SandboxInfo) -> list[str]:
    return ["--bootstrap", info.bootstrap, "--prometheus", info.prometheus_url]


def test_kill_9_mid_move_then_resume_completes_and_leaves_no_throttle(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    lay = layout(sandbox)
    topic = create_topic(sandbox, "exec-kill", 2, [lay.leader, lay.follower], BIG_PARTITION)
    before = throttle_configs(admin, lay.all_ids, topic)
    plan = tmp_path / "plan.json"
    moves = make_plan(sandbox, plan, [(topic, p, (lay.leader, lay.spare)) for p in range(2)])
    journal = tmp_path / "run.journal"
    proc = start_rebalance(tmp_path / "execute.log", *slow_args(sandbox, plan, journal))
    try:
        wait_for("first move copying", lambda: move_in(journal, moves[0].name,
                                                       MoveState.COPYING))
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    # The killed run left its throttle on the cluster and says so.
    assert throttle_configs(admin, lay.all_ids, topic) != before
    status = rebalance("status", "--journal", str(journal))
    assert status.returncode == 0 and "copying" in status.stdout, status.stdout

    resumed = rebalance("resume", "--journal", str(journal), *conn(sandbox),
                        "--poll-seconds", "0.5")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert replicas_of(admin, topic) == {0: (lay.leader, lay.spare), 1: (lay.leader, lay.spare)}
    assert throttle_configs(admin, lay.all_ids, topic) == before
    run = read_journal(journal)
    assert run.outcome is RunOutcome.COMPLETED
    assert not any(r.throttles_left for r in run.moves.values())


def test_cancel_mid_move_reverts_and_restores_throttles(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    lay = layout(sandbox)
    topic = create_topic(sandbox, "exec-cancel", 2, [lay.leader, lay.follower], BIG_PARTITION)
    admin.alter_broker_configs({lay.spare: {"follower.replication.throttled.rate": "70000000"}})
    before = throttle_configs(admin, lay.all_ids, topic)
    plan = tmp_path / "plan.json"
    moves = make_plan(sandbox, plan, [(topic, p, (lay.leader, lay.spare)) for p in range(2)])
    journal = tmp_path / "run.journal"
    log = tmp_path / "execute.log"
    proc = start_rebalance(log, *slow_args(sandbox, plan, journal))
    try:
        wait_for("first move copying", lambda: move_in(journal, moves[0].name,
                                                       MoveState.COPYING))
        # The executor holds the journal: cancel asks it to cancel, and it does the work.
        cancelled = rebalance("cancel", "--journal", str(journal), *conn(sandbox))
        assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
        assert "asked the executor" in cancelled.stdout
        code = proc.wait(120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 6, log.read_text()  # the run ended cancelled, not completed
    run = read_journal(journal)
    assert run.outcome is RunOutcome.CANCELLED, log.read_text()
    assert run.state_of(moves[0].name) is MoveState.CANCELLED
    assert run.state_of(moves[1].name) is MoveState.CANCELLED
    assert replicas_of(admin, topic) == {0: (lay.leader, lay.follower),
                                         1: (lay.leader, lay.follower)}
    assert not admin.list_partition_reassignments()
    assert throttle_configs(admin, lay.all_ids, topic) == before
    admin.alter_broker_configs({lay.spare: {"follower.replication.throttled.rate": None}})


def _stop_prometheus(info: SandboxInfo) -> list[str]:
    """Stop the sandbox's Prometheus by its pid; returns its command line for the restart."""
    state = read_state(info.dir)
    assert state is not None
    pid = state.prometheus_pid
    command = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)  # reap it when this process started the sandbox
        time.sleep(0.2)
    return [part.decode() for part in command]


def _start_prometheus(info: SandboxInfo, command: list[str]) -> None:
    """Start it again with the same command line and record the new pid in the state file."""
    state = read_state(info.dir)
    assert state is not None
    pid = process.spawn(command, info.dir / "logs" / "prometheus.log", info.dir)
    write_state(replace(state, prometheus_pid=pid))
    wait_for("prometheus back", lambda: process.port_open(info.prometheus_port), 60)


def test_prometheus_stopped_mid_run_holds_then_continues(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    lay = layout(sandbox)
    topic = create_topic(sandbox, "exec-prom", 2, [lay.leader, lay.follower], BIG_PARTITION)
    before = throttle_configs(admin, lay.all_ids, topic)
    plan = tmp_path / "plan.json"
    moves = make_plan(sandbox, plan, [(topic, p, (lay.leader, lay.spare)) for p in range(2)])
    journal = tmp_path / "run.journal"
    log = tmp_path / "execute.log"
    proc = start_rebalance(log, *slow_args(sandbox, plan, journal))
    command: list[str] = []
    try:
        wait_for("first move copying", lambda: move_in(journal, moves[0].name,
                                                       MoveState.COPYING))
        command = _stop_prometheus(sandbox)
        # The copy finishes without metrics, then the gate holds: no new move starts blind.
        wait_for("gate holding", lambda: "hold" in log.read_text()
                 and move_in(journal, moves[0].name, MoveState.COOLING_DOWN), 120)
        time.sleep(5)
        assert proc.poll() is None, log.read_text()
        assert move_in(journal, moves[1].name, MoveState.PENDING), log.read_text()
        assert "metrics unavailable" in log.read_text()
        _start_prometheus(sandbox, command)
        command = []
        code = proc.wait(180)
    finally:
        if command:
            _start_prometheus(sandbox, command)
        if proc.poll() is None:
            proc.kill()
    assert code == 0, log.read_text()
    assert replicas_of(admin, topic) == {0: (lay.leader, lay.spare), 1: (lay.leader, lay.spare)}
    assert throttle_configs(admin, lay.all_ids, topic) == before


def test_ctrl_c_keeps_the_journal_then_cancel_reverts_and_clear_finds_nothing(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    lay = layout(sandbox)
    topic = create_topic(sandbox, "exec-intr", 1, [lay.leader, lay.follower], BIG_PARTITION)
    before = throttle_configs(admin, lay.all_ids, topic)
    plan = tmp_path / "plan.json"
    moves = make_plan(sandbox, plan, [(topic, 0, (lay.leader, lay.spare))])
    journal = tmp_path / "run.journal"
    log = tmp_path / "execute.log"
    proc = start_rebalance(log, *slow_args(sandbox, plan, journal))
    try:
        wait_for("move copying", lambda: move_in(journal, moves[0].name, MoveState.COPYING))
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 130, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "rebalance resume" in log.read_text() and "rebalance cancel" in log.read_text()
    # No executor holds the journal now: cancel does the work itself (no metrics needed).
    cancelled = rebalance("cancel", "--journal", str(journal), "--bootstrap", sandbox.bootstrap)
    assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
    assert replicas_of(admin, topic) == {0: (lay.leader, lay.follower)}
    assert throttle_configs(admin, lay.all_ids, topic) == before
    assert read_journal(journal).outcome is RunOutcome.CANCELLED
    cleared = rebalance("clear-throttles", "--journal", str(journal), "--bootstrap",
                        sandbox.bootstrap)
    assert cleared.returncode == 0, cleared.stdout + cleared.stderr
    assert throttle_configs(admin, lay.all_ids, topic) == before
