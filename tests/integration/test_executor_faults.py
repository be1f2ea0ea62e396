"""Faults against the real sandbox: kill -9 mid-move then `resume`, `cancel` mid-move, and
Prometheus stopped mid-run (the executor holds, then continues once it is back).

Moves copy ~8 MB under a 0.5 MB/s throttle, so there is time to act while a move copies (a
cancel must reach the move before its copy ends); where a test acts at once (kill -9) and then
waits for the outcome whatever the copy did meanwhile, at 1 MB/s.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from executor.journal import read_journal
from executor.records import RunOutcome
from executor.state import MoveState
from kafka_rebalance.sandbox import cluster, process
from kafka_rebalance.sandbox.state import SandboxInfo, read_state, write_state
from planner.result import Move
from tests.integration.executor_support import (
    Layout,
    ThrottleConfigs,
    create_topic,
    execute_args,
    layout,
    make_plan,
    move_in,
    rebalance,
    replicas_of,
    start_rebalance,
    throttle_configs,
)
from tests.integration.kafka_topics import wait_for
from topology.kafka_admin import KafkaClusterAdmin

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("drop_exec_topics")]

BIG_PARTITION = 8_000_000
SLOW_MBPS = "0.5"
QUICK_MBPS = "1"


@dataclass(frozen=True)
class SlowRun:
    """A test topic whose followers move to the spare broker, under a slow `execute` child."""

    lay: Layout
    topic: str
    before: ThrottleConfigs  # the throttle configs read back before the run started
    moves: list[Move]
    journal: Path
    log: Path
    proc: subprocess.Popen[bytes]

    def wait_copying(self, what: str = "first move copying") -> None:
        wait_for(what, lambda: move_in(self.journal, self.moves[0].name, MoveState.COPYING))

    def throttles_now(self, admin: KafkaClusterAdmin) -> ThrottleConfigs:
        """The topic's and every broker's throttle configs, read back from the brokers now."""
        return throttle_configs(admin, self.lay.all_ids, self.topic)


def start_slow_run(info: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path, prefix: str,
                   partitions: int, mbps: str = SLOW_MBPS) -> SlowRun:
    """Create the topic, read its throttle configs back, plan its moves and start executing."""
    lay = layout(info)
    topic = create_topic(info, prefix, partitions, [lay.leader, lay.follower], BIG_PARTITION)
    before = throttle_configs(admin, lay.all_ids, topic)
    plan = tmp_path / "plan.json"
    moves = make_plan(info, plan, [(topic, p, (lay.leader, lay.spare))
                                   for p in range(partitions)])
    journal, log = tmp_path / "run.journal", tmp_path / "execute.log"
    proc = start_rebalance(log, *execute_args(info, plan, journal, max_mbps=mbps))
    return SlowRun(lay, topic, before, moves, journal, log, proc)


def conn(info: SandboxInfo) -> list[str]:
    return ["--bootstrap", info.bootstrap, "--prometheus", info.prometheus_url]


def test_kill_9_mid_move_then_resume_completes_and_leaves_no_throttle(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    run = start_slow_run(sandbox, admin, tmp_path, "exec-kill", 2, QUICK_MBPS)
    lay = run.lay
    try:
        run.wait_copying()
    finally:
        os.kill(run.proc.pid, signal.SIGKILL)
        run.proc.wait(30)
    # The killed run left its throttle on the cluster and says so.
    assert run.throttles_now(admin) != run.before
    status = rebalance("status", "--journal", str(run.journal))
    assert status.returncode == 0 and "copying" in status.stdout, status.stdout

    resumed = rebalance("resume", "--journal", str(run.journal), *conn(sandbox),
                        "--poll-seconds", "0.5")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert replicas_of(admin, run.topic) == {0: (lay.leader, lay.spare),
                                             1: (lay.leader, lay.spare)}
    assert run.throttles_now(admin) == run.before
    state = read_journal(run.journal)
    assert state.outcome is RunOutcome.COMPLETED
    assert not any(r.throttles_left for r in state.moves.values())


def test_cancel_mid_move_reverts_and_restores_throttles(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    spare = layout(sandbox).spare
    admin.alter_broker_configs({spare: {"follower.replication.throttled.rate": "70000000"}})
    run = start_slow_run(sandbox, admin, tmp_path, "exec-cancel", 2)
    lay, log = run.lay, run.log
    try:
        run.wait_copying()
        # The executor holds the journal: cancel asks it to cancel, and it does the work.
        cancelled = rebalance("cancel", "--journal", str(run.journal), *conn(sandbox))
        assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
        assert "asked the executor" in cancelled.stdout
        code = run.proc.wait(120)
    finally:
        if run.proc.poll() is None:
            run.proc.kill()
    text = log.read_text()
    assert code == 8, text  # cancelled as asked: its own exit code, not an error
    assert "error:" not in text, text
    assert "run cancelled after " in text and "0 of 2 move(s) done" in text, text
    summary_rows = [line.split() for line in text.splitlines()
                    if f"{run.moves[0].name} " in line and line.split()[-1:] == ["cancelled"]]
    assert summary_rows, text  # the summary's table row of the move cut short
    state = read_journal(run.journal)
    assert state.outcome is RunOutcome.CANCELLED, text
    assert state.state_of(run.moves[0].name) is MoveState.CANCELLED
    assert state.state_of(run.moves[1].name) is MoveState.CANCELLED
    assert replicas_of(admin, run.topic) == {0: (lay.leader, lay.follower),
                                             1: (lay.leader, lay.follower)}
    assert not admin.list_partition_reassignments()
    assert run.throttles_now(admin) == run.before
    admin.alter_broker_configs({spare: {"follower.replication.throttled.rate": None}})


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
    run = start_slow_run(sandbox, admin, tmp_path, "exec-prom", 2, QUICK_MBPS)
    lay, log, journal = run.lay, run.log, run.journal
    command: list[str] = []
    try:
        run.wait_copying()
        command = _stop_prometheus(sandbox)
        # The copy finishes without metrics, then the gate holds: no new move starts blind.
        wait_for("gate holding", lambda: "hold" in log.read_text()
                 and move_in(journal, run.moves[0].name, MoveState.COOLING_DOWN), 120)
        time.sleep(5)
        assert run.proc.poll() is None, log.read_text()
        assert move_in(journal, run.moves[1].name, MoveState.PENDING), log.read_text()
        assert "metrics unavailable" in log.read_text()
        _start_prometheus(sandbox, command)
        command = []
        code = run.proc.wait(180)
    finally:
        if command:
            _start_prometheus(sandbox, command)
        if run.proc.poll() is None:
            run.proc.kill()
    assert code == 0, log.read_text()
    assert replicas_of(admin, run.topic) == {0: (lay.leader, lay.spare),
                                             1: (lay.leader, lay.spare)}
    assert run.throttles_now(admin) == run.before


def test_ctrl_c_keeps_the_journal_then_cancel_reverts_and_clear_finds_nothing(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    run = start_slow_run(sandbox, admin, tmp_path, "exec-intr", 1)
    log, journal = run.log, run.journal
    try:
        run.wait_copying("move copying")
        run.proc.send_signal(signal.SIGINT)
        assert run.proc.wait(60) == 130, log.read_text()
    finally:
        if run.proc.poll() is None:
            run.proc.kill()
    assert "rebalance resume" in log.read_text() and "rebalance cancel" in log.read_text()
    # No executor holds the journal now: cancel does the work itself (no metrics needed).
    cancelled = rebalance("cancel", "--journal", str(journal), "--bootstrap", sandbox.bootstrap)
    assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
    assert replicas_of(admin, run.topic) == {0: (run.lay.leader, run.lay.follower)}
    assert run.throttles_now(admin) == run.before
    assert read_journal(journal).outcome is RunOutcome.CANCELLED
    cleared = rebalance("clear-throttles", "--journal", str(journal), "--bootstrap",
                        sandbox.bootstrap)
    assert cleared.returncode == 0, cleared.stdout + cleared.stderr
    assert run.throttles_now(admin) == run.before


def test_target_broker_killed_mid_move_is_cancelled_and_only_its_throttle_waits(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    """A broker failure: the move's new broker dies (SIGKILL) while it copies. The executor
    sees it offline (or making no progress), cancels the reassignment, restores every throttle
    it can (the live brokers' and the topic lists) and stops with a report naming the broker;
    the dead broker's own rate waits for `clear-throttles` once it is back, and then
    `resume --retry-failed` carries the move out."""
    lay = layout(sandbox)
    target = lay.spare  # a session broker, started again below (an added one would stay empty
    # and draw later tests' plans away from the brokers they add)
    # the broker must die while the copy runs: 8 s at the cap
    topic = create_topic(sandbox, "exec-dead", 1, [lay.leader, lay.follower], BIG_PARTITION)
    everyone = lay.all_ids
    before = throttle_configs(admin, everyone, topic)
    plan = tmp_path / "plan.json"
    move = make_plan(sandbox, plan, [(topic, 0, (lay.leader, target))])[0]
    journal, log = tmp_path / "run.journal", tmp_path / "execute.log"
    proc = start_rebalance(log, *execute_args(sandbox, plan, journal, max_mbps=QUICK_MBPS))
    try:
        wait_for("the move copying", lambda: move_in(journal, move.name, MoveState.COPYING)
                 or proc.poll() is not None)
        assert throttle_configs(admin, [target], topic)[0][target][
            "follower.replication.throttled.rate"] == str(int(float(QUICK_MBPS) * 1e6))
        cluster.kill_broker(sandbox.dir, target)
        code = proc.wait(180)
    finally:
        if proc.poll() is None:
            proc.kill()
    try:
        text = log.read_text()
        assert code == 6, text
        reason = read_journal(journal).moves[move.name].reason
        assert f"[{target}] went offline" in reason or "no progress" in reason, reason
        # the dead broker is named, not the bootstrap list as if the whole cluster were away,
        # and no write is tried through it (each would wait out the request timeout)
        assert f"broker {target}: could not restore (it is offline)" in reason, reason
        assert "clear-throttles" in reason and sandbox.bootstrap not in reason, reason
        assert read_journal(journal).state_of(move.name) is MoveState.FAILED
        assert replicas_of(admin, topic) == {0: (lay.leader, lay.follower)}  # reverted
        assert not admin.list_partition_reassignments()
        live = [b for b in lay.all_ids if b != target]
        live_brokers, topic_values = throttle_configs(admin, live, topic)
        assert live_brokers == {b: before[0][b] for b in live}
        assert topic_values == before[1]
    finally:  # a session broker: the tests after this one need it back whatever happened
        cluster.start_broker(sandbox.dir, target)
    cleared = rebalance("clear-throttles", "--journal", str(journal), "--bootstrap",
                        sandbox.bootstrap)
    assert cleared.returncode == 0, cleared.stdout + cleared.stderr
    fresh = KafkaClusterAdmin(sandbox.bootstrap)  # the fixture's client may still back off
    try:
        assert throttle_configs(fresh, everyone, topic) == before
        # the restarted broker catches up before later tests (their preflight refuses URPs)
        wait_for("every partition back in sync", lambda: all(
            set(p.isr) == set(p.replicas) for p in fresh.partitions()), timeout_s=120)
        # the broker is back: the failed move runs again, like a fresh one, to its target
        retried = rebalance("resume", "--journal", str(journal), *conn(sandbox),
                            "--retry-failed", "--max-mbps", "4", "--poll-seconds", "0.5")
        assert retried.returncode == 0, retried.stdout + retried.stderr
        assert read_journal(journal).outcome is RunOutcome.COMPLETED
        assert replicas_of(fresh, topic) == {0: (lay.leader, target)}
        assert throttle_configs(fresh, everyone, topic) == before
    finally:
        fresh.close()
