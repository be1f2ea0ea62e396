"""`rebalance execute` options that bound what a run does, on the real sandbox: `--dry-run`
changes nothing and names throttles already set; `--finish-by` starts no move that would end
after the window, and `resume` finishes the run later; `--concurrency 2` copies two moves on
disjoint brokers at once and never two on one broker.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from executor.journal import read_journal
from executor.records import RunOutcome
from executor.state import MoveState
from executor.throttle import FOLLOWER_RATE, LEADER_REPLICAS
from kafka_rebalance.sandbox.state import SandboxInfo
from tests.integration.executor_support import (
    create_topic,
    execute_args,
    layout,
    make_plan,
    move_in,
    rebalance,
    replicas_of,
    start_rebalance,
    state_sequence,
    throttle_configs,
)
from tests.integration.kafka_topics import wait_for
from topology import promql
from topology.kafka_admin import KafkaClusterAdmin

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("drop_exec_topics")]


def test_dry_run_changes_nothing_and_names_throttles_already_set(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    lay = layout(sandbox)
    topic = create_topic(sandbox, "exec-dry", 2, [lay.leader, lay.follower], 500_000)
    # a slow rate and a topic list entry left behind by an earlier reassignment
    admin.alter_broker_configs({lay.spare: {FOLLOWER_RATE: "300000"}})
    admin.alter_topic_configs({topic: {LEADER_REPLICAS: f"1:{lay.leader}"}})
    try:
        plan = tmp_path / "plan.json"
        make_plan(sandbox, plan, [(topic, p, (lay.leader, lay.spare)) for p in range(2)])
        before = throttle_configs(admin, lay.all_ids, topic), replicas_of(admin, topic)
        journal = tmp_path / "run.journal"
        result = rebalance(*execute_args(sandbox, plan, journal, "--dry-run"))
        assert result.returncode == 0, result.stdout + result.stderr
        out = " ".join((result.stdout + result.stderr).split())
        assert "Dry run: 2 move(s), nothing changed" in out
        assert "preflight: ok" in out
        assert (f"broker {lay.spare} already has {FOLLOWER_RATE}=300000 (lower than the cap"
                in out), out
        assert f"topic {topic} already has {LEADER_REPLICAS}=1:{lay.leader}" in out, out
        assert not journal.exists()
        assert (throttle_configs(admin, lay.all_ids, topic), replicas_of(admin, topic)) == before
    finally:
        admin.alter_broker_configs({lay.spare: {FOLLOWER_RATE: None}})


def test_finish_by_starts_no_move_past_the_window_and_resume_finishes(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    lay = layout(sandbox)
    # At 1 MB/s the first move (3 MB, leader -> spare) needs about 3 s and starts after start-up
    # (and a quota window when a broker carried a copy just before); the second (20 MB,
    # follower -> spare_a) shares no broker end with it, so it starts only after the first's
    # gate, and needs 20 s: with the window ending 18 s from now it cannot fit however fast
    # the first move goes (its first second may run well above the cap), while the first fits.
    topic = create_topic(sandbox, "exec-window", 1, [lay.leader, lay.follower], 3_000_000)
    second = create_topic(sandbox, "exec-window-b", 1, [lay.follower, lay.leader], 20_000_000)
    plan = tmp_path / "plan.json"
    make_plan(sandbox, plan, [(topic, 0, (lay.leader, lay.spare)),
                              (second, 0, (lay.follower, lay.spare_a))])
    before = throttle_configs(admin, lay.all_ids, topic), throttle_configs(
        admin, lay.all_ids, second)
    journal = tmp_path / "run.journal"
    # the gate's queries from a file (the default net in/out, written out, a 12 s window)
    queries = tmp_path / "gate-queries.yaml"
    queries.write_text(f"window: 12s\nnet_in: '{promql.BROKER_NETWORK_IN_RATE}'\n")
    end = (datetime.now().astimezone() + timedelta(seconds=18)).isoformat(timespec="seconds")
    first = rebalance(*execute_args(sandbox, plan, journal, "--finish-by", end,
                                    "--queries", str(queries)))
    text = " ".join((first.stdout + first.stderr).split())
    assert first.returncode == 6, text  # stopped: an ExecutionError, resumable
    assert "not started; `rebalance resume` continues the run" in text, text
    run = read_journal(journal)
    assert run.outcome is RunOutcome.STOPPED
    states = [run.state_of(m.name) for m in run.plan.moves]
    assert states == [MoveState.DONE, MoveState.PENDING], states
    assert replicas_of(admin, topic)[0] == (lay.leader, lay.spare)
    assert replicas_of(admin, second)[0] == (lay.follower, lay.leader)  # not started
    assert (throttle_configs(admin, lay.all_ids, topic),
            throttle_configs(admin, lay.all_ids, second)) == before

    header = json.loads(journal.read_text().splitlines()[0])
    assert header["settings"]["queries"]["window"] == "12s"
    resumed = rebalance("resume", "--journal", str(journal), "--bootstrap", sandbox.bootstrap,
                        "--prometheus", sandbox.prometheus_url, "--poll-seconds", "0.5")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert read_journal(journal).outcome is RunOutcome.COMPLETED
    assert replicas_of(admin, second) == {0: (lay.follower, lay.spare_a)}
    assert (throttle_configs(admin, lay.all_ids, topic),
            throttle_configs(admin, lay.all_ids, second)) == before


def test_concurrency_two_copies_disjoint_moves_together_never_two_on_a_broker(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    lay = layout(sandbox)
    # RF 1 moves: a-0 (leader -> follower) and b-0 (spare_a -> spare) share no broker end and
    # may copy together; a-1 (leader -> spare_a) sends from a-0's sender, so it waits until
    # a-0's copy ends and takes the leader over (spare_a only sends in b-0: its in is free).
    # 3 MB each at 1 MB/s: a few seconds of copying.
    topic_a = create_topic(sandbox, "exec-conc-a", 2, [lay.leader], 3_000_000)
    topic_b = create_topic(sandbox, "exec-conc-b", 1, [lay.spare_a], 3_000_000)
    plan = tmp_path / "plan.json"
    moves = make_plan(sandbox, plan, [(topic_a, 0, (lay.follower,)), (topic_b, 0, (lay.spare,)),
                                      (topic_a, 1, (lay.spare_a,))])
    before = (throttle_configs(admin, lay.all_ids, topic_a),
              throttle_configs(admin, lay.all_ids, topic_b))
    journal = tmp_path / "run.journal"
    log = tmp_path / "execute.log"
    proc = start_rebalance(log, *execute_args(sandbox, plan, journal, "--concurrency", "2"))
    try:
        first, second, third = moves
        wait_for("two moves copying at once", lambda: (
            move_in(journal, first.name, MoveState.COPYING)
            and move_in(journal, second.name, MoveState.COPYING)) or proc.poll() is not None,
            timeout_s=120, every_s=0.1)
        rates = admin.broker_configs(lay.all_ids, (FOLLOWER_RATE,))
        assert proc.wait(240) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    # while both copied, each target broker had its follower throttle
    assert rates[lay.follower][FOLLOWER_RATE] == "1000000", rates
    assert rates[lay.spare][FOLLOWER_RATE] == "1000000", rates
    sequence = state_sequence(journal)
    # the third move started only once the first move's copy from the same sender was ending
    third_start = sequence.index((third.name, "throttling"))
    assert sequence.index((first.name, "copying")) < third_start
    assert (f"{third.name} takes over from {first.name} as its copy ends" in log.read_text()
            or sequence.index((first.name, "done")) < third_start), sequence
    assert replicas_of(admin, topic_a) == {0: (lay.follower,), 1: (lay.spare_a,)}
    assert replicas_of(admin, topic_b) == {0: (lay.spare,)}
    assert (throttle_configs(admin, lay.all_ids, topic_a),
            throttle_configs(admin, lay.all_ids, topic_b)) == before
