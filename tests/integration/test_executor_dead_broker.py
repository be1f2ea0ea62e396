"""On the real sandbox: a broker dies between the plan and its execution, and the plan drains
it. The snapshot still names the dead broker's rack (the controller keeps its registration);
the run is not refused for partitions under-replicated only because the broker is offline
(it tells them, and how many the plan heals), reads and sets no config on the
dead broker, completes every move (the leaving replica is the missing one) and leaves every
live broker's and the topic's throttle configs as they were."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from executor.journal import read_journal, read_records
from executor.records import RunOutcome
from executor.state import MoveState
from kafka_rebalance.core.errors import ClusterError
from kafka_rebalance.sandbox import cluster
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
    throttle_configs,
)
from tests.integration.kafka_topics import wait_for
from topology.kafka_admin import KafkaClusterAdmin

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("drop_exec_topics")]

MB = 1_000_000


def test_a_broker_dead_after_the_plan_is_drained_by_it(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    lay = layout(sandbox)
    dead = lay.spare  # a session broker: started again at the end, for the later tests
    rack = next(b.rack for b in sandbox.brokers if b.id == dead)
    topic = create_topic(sandbox, "exec-drain", 2, [lay.leader, dead], 2 * MB)
    healthy = create_topic(sandbox, "exec-drain-healthy", 1, [lay.leader, lay.follower], MB)
    live = [b for b in lay.all_ids if b != dead]
    before = throttle_configs(admin, live, topic)
    plan = tmp_path / "plan.json"
    # the healthy partition's move first in the plan: the run heals the exposed ones first
    moves: list[tuple[str, int, tuple[int, ...]]] = [(healthy, 0, (lay.spare_a, lay.follower))]
    make_plan(sandbox, plan, moves + [(topic, p, (lay.leader, lay.follower)) for p in range(2)])
    cluster.kill_broker(sandbox.dir, dead)
    try:
        # at once, while the controller most likely still has it registered (it fences a
        # broker after broker.session.timeout.ms): the snapshot records it as not alive
        # instead of finding the whole cluster unreachable
        early = tmp_path / "early.json"
        taken = rebalance("snapshot", "--bootstrap", sandbox.bootstrap, "--out", str(early))
        assert taken.returncode == 0, taken.stdout + taken.stderr
        entry = next(b for b in json.loads(early.read_text())["brokers"] if b["id"] == dead)
        assert entry.get("alive") is False, entry
        # and a run previewed at once does not wait on it (its configs would time out): it
        # counts as offline, its port refusing connections, and gets no throttle
        preview = rebalance(*execute_args(sandbox, plan, tmp_path / "dry.journal", "--dry-run",
                                          max_mbps="4", quota_window="0"))
        assert preview.returncode == 0, preview.stdout + preview.stderr
        assert "preflight: ok (dry run, nothing changed)" in preview.stdout
        # the sandbox still serves the operator's next steps with a broker killed on purpose
        produced = rebalance("sandbox", "produce", "exec-drain-more", "--mb", "1",
                             "--partitions", "1", "--dir", str(sandbox.dir))
        assert produced.returncode == 0, produced.stdout + produced.stderr
        wait_for("the dead broker out of the ISR", lambda: all(
            dead not in p.isr for p in admin.partitions([topic])), 60)
        snap = tmp_path / "snap.json"
        taken = rebalance("snapshot", "--bootstrap", sandbox.bootstrap, "--out", str(snap))
        assert taken.returncode == 0, taken.stdout + taken.stderr
        entry = next(b for b in json.loads(snap.read_text())["brokers"] if b["id"] == dead)
        assert entry == {"id": dead, "rack": rack, "alive": False}, entry
        _a_drain_planned_now_heals_the_most_exposed_first(snap, dead, tmp_path)

        journal = tmp_path / "run.journal"
        result = rebalance(*execute_args(sandbox, plan, journal, max_mbps="4",
                                         quota_window="0"))
        output = result.stdout + result.stderr
        assert result.returncode == 0, output
        # told, not refused: the offline broker's partitions, two of which this plan heals
        assert f"because broker(s) [{dead}] are offline" in output, output
        assert "The plan heals 2 of them; the run moves those first" in output, output
        assert "2 are down to one in-sync replica" in output, output
        assert read_journal(journal).outcome is RunOutcome.COMPLETED
        copying = [r["move"] for r in read_records(journal)
                   if r.get("kind") == "state" and r.get("state") == "copying"]
        assert copying[-1] == f"{healthy}-0", copying
        assert replicas_of(admin, topic) == {0: (lay.leader, lay.follower),
                                             1: (lay.leader, lay.follower)}
        assert all(set(p.isr) == {lay.leader, lay.follower} for p in admin.partitions([topic]))
        assert throttle_configs(admin, live, topic) == before
    finally:
        cluster.start_broker(sandbox.dir, dead)
    wait_for("every partition back in sync", lambda: _all_in_sync(sandbox),  # for later tests
             timeout_s=120)


def _all_in_sync(sandbox: SandboxInfo) -> bool:
    """Every partition's ISR full; False while the restarted broker is not answering yet."""
    try:
        fresh = KafkaClusterAdmin(sandbox.bootstrap)
    except ClusterError:
        return False
    try:
        return all(set(p.isr) == set(p.replicas) for p in fresh.partitions())
    except ClusterError:
        return False
    finally:
        fresh.close()

def _a_drain_planned_now_heals_the_most_exposed_first(snap: Path, dead: int,
                                                       tmp_path: Path) -> None:
    """`plan --remove-broker` of the dead broker: the review names the partitions short of
    live replicas first, and the plan moves them in order of live replicas left."""
    out = tmp_path / "drain.json"
    capacities = Path(__file__).parents[2] / "examples" / "sandbox-capacities.yaml"
    planned = rebalance("plan", "--snapshot", str(snap), "--remove-broker", str(dead),
                        "--capacities", str(capacities), "--out", str(out))
    assert planned.returncode == 0, planned.stdout + planned.stderr
    assert f"have replicas on offline broker(s) [{dead}]" in planned.stdout + planned.stderr
    replicas = {(p["topic"], p["partition"]): p["replicas"]
                for p in json.loads(snap.read_text())["partitions"]}
    left = [sum(1 for b in replicas[(m["topic"], m["partition"])] if b != dead)
            for m in json.loads(out.read_text())["moves"]
            if dead in replicas[(m["topic"], m["partition"])]]
    assert left and left == sorted(left), left


def test_a_broker_that_dies_mid_drain_keeps_only_its_own_rate_and_the_run_says_so(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    """The drained broker dies while the first of two moves copies; both moves copy into the
    same receiver, the second taking it over from the first. Every move completes (the dead
    broker is the replica leaving), but its own rate could not be put back: the run exits 6
    naming clear-throttles (not 0), every live broker's rates are back as they were (each move
    had left the shared ones to the other), and once the broker is back, clear-throttles
    clears its rate too."""
    from executor.throttle import BROKER_THROTTLE_CONFIGS

    lay = layout(sandbox)
    dead = lay.spare_a  # drained: the moves take its replicas to lay.spare
    topic = create_topic(sandbox, "exec-dies-mid", 1, [dead, lay.leader], 3 * MB)
    other = create_topic(sandbox, "exec-dies-mid-b", 1, [lay.follower, dead], 3 * MB)
    live = [lay.leader, lay.follower, lay.spare]
    before = admin.broker_configs(live, BROKER_THROTTLE_CONFIGS)
    plan = tmp_path / "plan.json"
    make_plan(sandbox, plan, [(topic, 0, (lay.spare, lay.leader)),
                              (other, 0, (lay.leader, lay.spare))], remove=frozenset({dead}))
    journal = tmp_path / "run.journal"
    log = tmp_path / "run.log"
    killed = False
    try:
        proc = start_rebalance(log, *execute_args(sandbox, plan, journal, max_mbps="1"))
        wait_for("the first move copying", lambda: move_in(journal, f"{topic}-0",
                                                           MoveState.COPYING)
                 or proc.poll() is not None, 120)
        cluster.kill_broker(sandbox.dir, dead)
        killed = True
        assert proc.wait(300) == 6, log.read_text()
        output = log.read_text()
        assert read_journal(journal).outcome is RunOutcome.COMPLETED, output
        assert "clear-throttles" in output, output
        assert replicas_of(admin, topic) == {0: (lay.spare, lay.leader)}
        assert replicas_of(admin, other) == {0: (lay.leader, lay.spare)}
        assert admin.broker_configs(live, BROKER_THROTTLE_CONFIGS) == before
        status = rebalance("status", "--journal", str(journal))
        assert "clear-throttles" in status.stdout, status.stdout
    finally:
        if killed:  # a session broker: later tests need it back, in sync
            cluster.start_broker(sandbox.dir, dead)
            wait_for("every partition back in sync", lambda: _all_in_sync(sandbox), 120)
    cleared = rebalance("clear-throttles", "--journal", str(journal), "--bootstrap",
                        sandbox.bootstrap)
    assert cleared.returncode == 0, cleared.stdout + cleared.stderr
    after = admin.broker_configs([dead], BROKER_THROTTLE_CONFIGS)
    assert all(value is None for value in after[dead].values()), after
