"""Cordoned brokers on the real cluster (Kafka 4.3, KIP-1066): a broker whose
`cordoned.log.dirs` is "*" is read as cordoned by `snapshot`, the plan made from that snapshot
puts no replica on it and says so, and `execute` refuses a plan that would (the cordon being
newer than the plan), changing nothing. Read back from the brokers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
)

from kafka_rebalance.core.errors import ClusterError
from kafka_rebalance.sandbox.state import SandboxInfo
from tests.integration.executor_support import (
    create_topic,
    execute_args,
    layout,
    make_plan,
    rebalance,
    replicas_of,
    throttle_configs,
)
from tests.integration.kafka_topics import create_topics, wait_for
from topology.kafka_admin import KafkaClusterAdmin

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("drop_exec_topics")]

CAPACITIES = Path(__file__).parents[2] / "examples" / "sandbox-capacities.yaml"


def cordon(info: SandboxInfo, broker: int, value: str | None) -> None:
    """Set (or with None delete) the broker's cordoned.log.dirs, as kafka-configs does."""
    op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    resource = ConfigResource(ConfigResource.Type.BROKER, str(broker), incremental_configs=[
        ConfigEntry("cordoned.log.dirs", value, incremental_operation=op)])
    admin = AdminClient({"bootstrap.servers": info.bootstrap})
    admin.incremental_alter_configs([resource])[resource].result(30)


def test_a_cordoned_broker_is_read_planned_around_and_refused_as_a_target(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    lay = layout(sandbox)
    fenced = lay.spare_a
    topic = create_topic(sandbox, "exec-cordon", 2, [lay.leader, lay.follower])
    plan = tmp_path / "onto.json"
    make_plan(sandbox, plan, [(topic, p, (fenced, lay.follower)) for p in range(2)])
    before = throttle_configs(admin, lay.all_ids, topic)
    cordon(sandbox, fenced, "*")
    try:
        wait_for("the cordon applied (KRaft applies dynamic configs asynchronously)",
                 lambda: admin.cordoned_brokers(lay.all_ids) == {fenced}, 30)

        snap = tmp_path / "snap.json"
        taken = rebalance("snapshot", "--bootstrap", sandbox.bootstrap, "--out", str(snap))
        assert taken.returncode == 0, taken.stdout + taken.stderr
        entries = {b["id"]: b for b in json.loads(snap.read_text())["brokers"]}
        assert entries[fenced].get("cordoned") is True
        assert not any(entries[b].get("cordoned") for b in lay.all_ids if b != fenced)

        drain = tmp_path / "drain.json"
        planned = rebalance("plan", "--snapshot", str(snap), "--capacities", str(CAPACITIES),
                            "--out", str(drain), "--time-limit", "10")
        output = planned.stdout + planned.stderr
        assert planned.returncode == 0, output
        assert f"Cordoned (cordoned.log.dirs): broker(s) [{fenced}]" in " ".join(output.split())
        doc = json.loads(drain.read_text())
        assert doc["goals"]["cordoned_brokers"] == [fenced]
        assert not any(fenced in set(m["target"]) - set(m["current"]) for m in doc["moves"])

        refused = rebalance(*execute_args(sandbox, plan, tmp_path / "onto.journal"))
        assert refused.returncode == 6, refused.stdout + refused.stderr
        assert f"broker(s) [{fenced}] are cordoned" in refused.stderr, refused.stderr
        assert not (tmp_path / "onto.journal").exists()
        assert replicas_of(admin, topic) == {0: (lay.leader, lay.follower),
                                             1: (lay.leader, lay.follower)}
        assert throttle_configs(admin, lay.all_ids, topic) == before
    finally:
        cordon(sandbox, fenced, None)
    wait_for("the cordon lifted", lambda: not admin.cordoned_brokers(lay.all_ids), 30)


def test_a_drain_cordons_its_broker_and_a_cancel_lifts_the_cordon(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    """`execute --cordon-drained`: while the drain runs the broker is cordoned, so a topic
    created meanwhile gets no replica there; `rebalance cancel` puts its value back."""
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

    from executor.state import MoveState
    from tests.integration.executor_support import move_in, start_rebalance

    lay = layout(sandbox)
    drained = lay.spare
    topic = create_topic(sandbox, "exec-cordon-drain", 1, [lay.leader, drained], 8_000_000)
    plan = tmp_path / "drain.json"
    move = make_plan(sandbox, plan, [(topic, 0, (lay.leader, lay.follower))],
                     remove=frozenset({drained}))[0]
    journal, log = tmp_path / "drain.journal", tmp_path / "run.log"
    proc = start_rebalance(log, *execute_args(sandbox, plan, journal, "--cordon-drained",
                                              max_mbps="0.5"))
    try:
        wait_for("the move copying", lambda: move_in(journal, move.name, MoveState.COPYING)
                 or proc.poll() is not None)
        assert proc.poll() is None, log.read_text()
        assert admin.cordoned_brokers(lay.all_ids) == {drained}
        created = f"exec-cordon-new-{tmp_path.name[-8:]}"
        create_topics(sandbox.bootstrap, [NewTopic(created, 8, 2)])
        # a new topic reaches every broker's metadata a moment after it is created
        wait_for("the new topic's metadata", lambda: len(_replicas_or_none(admin, created)) == 8)
        assert not any(drained in r for r in replicas_of(admin, created).values())
        cancelled = rebalance("cancel", "--journal", str(journal), "--bootstrap",
                              sandbox.bootstrap)
        assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
        code = proc.wait(120)
    finally:
        if proc.poll() is None:  # a failed assertion: end the run as asked, so that its lease
            rebalance("cancel", "--journal", str(journal), "--bootstrap", sandbox.bootstrap)
            try:  # and cordon do not outlive the test
                proc.wait(120)
            finally:
                if proc.poll() is None:
                    proc.kill()
    assert code == 8, log.read_text()
    assert "restored cordoned.log.dirs on broker(s)" in log.read_text()
    wait_for("the cordon lifted", lambda: not admin.cordoned_brokers(lay.all_ids), 30)
    assert replicas_of(admin, topic) == {0: (lay.leader, drained)}


def _replicas_or_none(admin: KafkaClusterAdmin, topic: str) -> dict[int, tuple[int, ...]]:
    """The topic's replicas; none while its metadata has not reached the broker asked."""
    try:
        return replicas_of(admin, topic)
    except ClusterError:
        return {}
