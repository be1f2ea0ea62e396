"""The SLO guard on the real sandbox with partitions that fall under-replicated during the
run, away from the copy: a broker the move does not touch is killed (kill -9) while the move
copies. The leaders of its partitions count them under-replicated, which a cluster-wide rule
would take for the copy's doing and slow it; the guard reads from the cluster's metadata that
their missing replicas are on an offline broker (no pause cures that) and that no lagging
replica is on the copy's sender or receiver: it slows nothing, and the brokers report the cap
on both ends all along. (A follower cannot be made to lag while it stays live here: Kafka does
not throttle an in-sync follower; the attribution to live followers is covered by the unit
tests.)"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from executor.journal import parse_lines
from executor.state import MoveState
from executor.throttle import FOLLOWER_RATE, LEADER_RATE
from kafka_rebalance.core.errors import ClusterError
from kafka_rebalance.sandbox import cluster
from kafka_rebalance.sandbox.state import SandboxInfo
from tests.integration.executor_support import (
    create_topic,
    execute_args,
    layout,
    make_plan,
    move_in,
    range_query,
    start_rebalance,
    throttle_configs,
)
from tests.integration.kafka_topics import wait_for
from topology.kafka_admin import KafkaClusterAdmin

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("drop_exec_topics")]

CAP = 500_000
SIZE = 14_000_000  # 28 s at the cap: the dead broker leaves the ISR about 10 s after its
# death (benchmarks/README.md, the dead-broker drain), well inside the copy
GUARD = ("--slo-produce-p99-ms", "60000", "--slo-fetch-p99-ms", "60000",
         "--slo-flush-p95-ms", "60000", "--slo-under-replicated", "0", "--slo-interval", "1")


def test_under_replication_away_from_the_copy_slows_nothing(sandbox: SandboxInfo,
                                                            tmp_path: Path) -> None:
    lay = layout(sandbox)
    victim = lay.spare_a  # neither the copy's sender (leader) nor its receiver (spare)
    moved = create_topic(sandbox, "exec-urp-move", 1, [lay.leader, lay.follower], SIZE)
    plan = tmp_path / "plan.json"
    (move,) = make_plan(sandbox, plan, [(moved, 0, (lay.leader, lay.spare))])
    journal, log = tmp_path / "plan.json.journal", tmp_path / "run.log"
    admin = KafkaClusterAdmin(sandbox.bootstrap)
    # the shared sandbox as earlier tests left it (a broker they restarted may still be
    # catching up): a live follower behind near the copy is under-replication the guard rightly
    # acts on, so the test starts from a cluster in sync
    wait_for("every partition in sync before the run", lambda: all(
        set(p.isr) == set(p.replicas) for p in admin.partitions()), timeout_s=120)
    ends_rates: list[tuple[str | None, str | None]] = []
    killed_at: float | None = None
    try:
        proc = start_rebalance(log, *execute_args(sandbox, plan, journal, *GUARD,
                                                  max_mbps="0.5", calm_slo=False))
        wait_for("the move copying", lambda: move_in(journal, move.name, MoveState.COPYING)
                 or proc.poll() is not None)
        cluster.kill_broker(sandbox.dir, victim)
        killed_at = time.time()
        deadline = time.monotonic() + 300
        while proc.poll() is None:
            assert time.monotonic() < deadline, log.read_text()
            try:
                brokers, _ = throttle_configs(admin, [lay.leader, lay.spare], moved)
            except ClusterError:  # the client may still route a request to the dead broker
                continue
            ends_rates.append((brokers[lay.leader].get(LEADER_RATE),
                               brokers[lay.spare].get(FOLLOWER_RATE)))
            time.sleep(0.5)
    finally:
        admin.close()
        if killed_at is not None:  # a session broker: later tests need it back, in sync
            cluster.start_broker(sandbox.dir, victim)
            fresh = KafkaClusterAdmin(sandbox.bootstrap)
            try:
                wait_for("every partition back in sync", lambda: all(
                    set(p.isr) == set(p.replicas) for p in fresh.partitions()), timeout_s=120)
            finally:
                fresh.close()
    text = log.read_text()
    assert proc.returncode == 0, text

    records, _ = parse_lines(journal.read_bytes(), str(journal))
    times = {str(r["state"]): float(r["at"]) for r in records
             if r.get("kind") == "state" and r.get("move") == move.name}
    # the leaders counted partitions under-replicated while the move copied ...
    assert killed_at is not None and times["copying"] < killed_at < times["verifying"]
    counted = range_query(sandbox, "sum(kafka_under_replicated_partitions)", killed_at,
                          times["verifying"])
    assert any(float(v) >= 1 for s in counted for _, v in s["values"]), counted
    # ... and the guard slowed nothing: no step journaled, the cap read back on both ends
    assert not [r for r in records if r.get("kind") == "guard"], text
    assert (str(CAP), str(CAP)) in ends_rates, ends_rates  # both set while it copied
    assert {rate for rates in ends_rates for rate in rates} <= {str(CAP), None}, ends_rates
