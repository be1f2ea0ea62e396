"""One run per cluster, held on the cluster itself: a second run (the same plan under another
file name, so another journal) is refused before it changes anything, and a killed run's lease
passes to its own `resume`, not to another run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from executor.journal import read_journal
from executor.records import RunOutcome
from executor.state import MoveState
from kafka_rebalance.sandbox.state import SandboxInfo
from tests.integration.executor_support import (
    create_topic,
    execute_args,
    layout,
    make_plan,
    rebalance,
    replicas_of,
    start_rebalance,
    throttle_configs,
)
from tests.integration.kafka_topics import create_topics, wait_for
from topology.kafka_admin import KafkaClusterAdmin

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("drop_exec_topics")]

REFUSED = ("another run holds this cluster", "claimed this cluster at the same moment")


def test_two_runs_started_together_one_is_refused_and_nothing_is_left(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    lay = layout(sandbox)
    topic = create_topic(sandbox, "exec-lease", 2, [lay.leader, lay.follower])
    before = throttle_configs(admin, lay.all_ids, topic)
    first_plan, second_plan = tmp_path / "first.json", tmp_path / "second.json"
    make_plan(sandbox, first_plan, [(topic, p, (lay.leader, lay.spare)) for p in range(2)])
    second_plan.write_bytes(first_plan.read_bytes())
    journals = [tmp_path / "first.journal", tmp_path / "second.journal"]
    procs = [start_rebalance(tmp_path / "first.log",
                             *execute_args(sandbox, first_plan, journals[0]))]
    time.sleep(0.2)
    procs.append(start_rebalance(tmp_path / "second.log",
                                 *execute_args(sandbox, second_plan, journals[1])))
    codes = [p.wait(300) for p in procs]
    logs = [(tmp_path / name).read_text() for name in ("first.log", "second.log")]
    assert sorted(codes) == [0, 6], logs
    refused = codes.index(6)
    assert any(text in logs[refused] for text in REFUSED), logs[refused]
    assert not journals[refused].exists()  # refused before its journal was made
    assert read_journal(journals[1 - refused]).outcome is RunOutcome.COMPLETED
    assert replicas_of(admin, topic) == {0: (lay.leader, lay.spare), 1: (lay.leader, lay.spare)}
    assert throttle_configs(admin, lay.all_ids, topic) == before


def test_a_killed_runs_lease_goes_to_its_resume_not_to_another_run(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    lay = layout(sandbox)
    topic = create_topic(sandbox, "exec-lease-kill", 1, [lay.leader, lay.follower], 8_000_000)
    # Empty, so moving it changes no broker's load: the last run below is judged on the lease
    # alone, not refused by the validator for a balance the first move changed.
    other = create_topic(sandbox, "exec-lease-other", 1, [lay.leader, lay.follower], 0)
    before = throttle_configs(admin, lay.all_ids, topic)
    plan, other_plan = tmp_path / "plan.json", tmp_path / "other.json"
    moves = make_plan(sandbox, plan, [(topic, 0, (lay.leader, lay.spare))])
    make_plan(sandbox, other_plan, [(other, 0, (lay.leader, lay.spare))])
    journal = tmp_path / "plan.journal"
    proc = start_rebalance(tmp_path / "run.log",
                           *execute_args(sandbox, plan, journal, max_mbps="0.5"))
    try:
        wait_for("the move to copy", lambda: journal.exists() and read_journal(journal)
                 .state_of(moves[0].name) is MoveState.COPYING, 120)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    refused = rebalance(*execute_args(sandbox, other_plan, tmp_path / "other.journal"))
    assert refused.returncode == 6, refused.stdout + refused.stderr
    assert "another run holds this cluster" in refused.stderr, refused.stderr
    assert not (tmp_path / "other.journal").exists()
    assert replicas_of(admin, other) == {0: (lay.leader, lay.follower)}
    resumed = rebalance("resume", "--journal", str(journal), "--bootstrap", sandbox.bootstrap,
                        "--prometheus", sandbox.prometheus_url, "--poll-seconds", "0.5")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert replicas_of(admin, topic) == {0: (lay.leader, lay.spare)}
    assert throttle_configs(admin, lay.all_ids, topic) == before
    after = rebalance(*execute_args(sandbox, other_plan, tmp_path / "other2.journal"))
    assert after.returncode == 0, after.stdout + after.stderr  # released at the run's end


CLAIM = """
import sys
from executor.lease import LeaseKeeper
from kafka_rebalance.core.errors import LeaseRefused
from topology.kafka_lease import KafkaLeaseStore
import time
bootstrap, topic, run = sys.argv[1], sys.argv[2], sys.argv[3]
keeper = LeaseKeeper(KafkaLeaseStore(bootstrap, topic=topic))
print("ready", flush=True)
sys.stdin.readline()  # the go: written to the three claimants at once
try:
    keeper.acquire(run, "claimant " + run)
except LeaseRefused:
    print("refused")
else:
    print("held")
    time.sleep(3)
    keeper.release()
"""


@pytest.mark.parametrize("attempt", range(3))
def test_three_claims_in_the_same_millisecond_give_one_holder_and_clean_refusals(
        sandbox: SandboxInfo, attempt: int) -> None:
    """The fence between claimants: exactly one holds, the others are refused (never a cluster
    error), and librdkafka's fatal log line about the fence does not reach the operator."""
    procs = [subprocess.Popen([sys.executable, "-c", CLAIM, sandbox.bootstrap,
                               f"lease-race-{attempt}", f"run-{n}"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for n in range(3)]
    for proc in procs:  # each has its client made: what is left is the claim itself
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    assert sorted(out.strip() for out, _ in outs) == ["held", "refused", "refused"], outs
    assert [err for _, err in outs] == ["", "", ""]


def test_the_leases_age_is_read_on_the_clusters_clock_not_the_holders(
        sandbox: SandboxInfo, monkeypatch: pytest.MonkeyPatch) -> None:
    """A holder whose clock runs an hour behind looks killed to a claimant that compares
    clocks; an hour ahead, alive for an hour after it was killed. The claim measures the age
    between the broker's append times instead. The topic here was made by an older version
    (create time): the first claim switches it to append time."""
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

    import executor.lease
    from executor.lease import LeaseKeeper, LeaseRecord
    from kafka_rebalance.core.errors import LeaseRefused
    from topology.kafka_lease import KafkaLeaseStore

    topic = "lease-clock-skew"
    client = AdminClient({"bootstrap.servers": sandbox.bootstrap})
    create_topics(sandbox.bootstrap, [NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})])

    def write(record: LeaseRecord) -> None:
        KafkaLeaseStore(sandbox.bootstrap, topic=topic).claim(lambda raw, ago: record.encode())

    write(LeaseRecord("run-old", "older version pid 6", time.time()))
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    # a broker applies the change after the controller acknowledges it; the claim waits for
    # one to read it back, and every broker follows within moments
    wait_for("the lease topic stamped with append time", lambda: client.describe_configs(
        [resource])[resource].result(30)["message.timestamp.type"].value == "LogAppendTime",
             30, 0.2)
    write(LeaseRecord("run-slow", "slow clock pid 7", time.time() - 3600))
    with pytest.raises(LeaseRefused, match=r"another run holds this cluster: run run-slow"):
        LeaseKeeper(KafkaLeaseStore(sandbox.bootstrap, topic=topic)).acquire("run-b", "b")

    monkeypatch.setattr(executor.lease, "TTL_SECONDS", 2.0)
    write(LeaseRecord("run-fast", "fast clock pid 8", time.time() + 3600))
    with pytest.raises(LeaseRefused, match=r"another run holds this cluster: run run-fast"):
        LeaseKeeper(KafkaLeaseStore(sandbox.bootstrap, topic=topic)).acquire("run-b", "b")
    time.sleep(3)
    with pytest.raises(LeaseRefused, match=r"run run-fast .* has not renewed it for [3-9] s"):
        LeaseKeeper(KafkaLeaseStore(sandbox.bootstrap, topic=topic)).acquire("run-b", "b")
    taker = LeaseKeeper(KafkaLeaseStore(sandbox.bootstrap, topic=topic), heartbeat_seconds=60)
    taker.acquire("run-b", "b", take_over="run-fast")
    taker.release()
    client.delete_topics([topic])[topic].result(30)
