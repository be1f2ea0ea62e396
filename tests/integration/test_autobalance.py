"""`rebalance auto --once` against the real sandbox: a broker that holds nothing joins a cluster
with data; outside the window nothing changes, inside it the replicas move to the new broker,
no throttle is left on any broker or topic, and the state directory holds the plan and its
completed journal.

Then, with the auto process as a child: a 4 MB rack fix at --max-mbps 1 is paced (the brokers'
throttle configs read back during the copy are the cap, the copy takes seconds, none are left
after), and SIGTERM mid-copy ends the process with the move cancelled or completed (replicas
the old or the new assignment, nothing else) and no throttle left.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from executor.journal import parse_lines, read_journal
from executor.records import RunOutcome
from executor.state import MoveState
from executor.throttle import (
    BROKER_THROTTLE_CONFIGS,
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    TOPIC_THROTTLE_CONFIGS,
)
from kafka_rebalance.autobalance.imbalance import imbalance_verdict
from kafka_rebalance.files.planfile import read_plan
from kafka_rebalance.sandbox import cluster
from kafka_rebalance.sandbox.state import BrokerInfo, SandboxInfo
from planner.goals import Goals
from planner.planfile import PlanFile
from tests.integration.executor_support import (
    CALM_SLO,
    ThrottleConfigs,
    create_topic,
    layout,
    move_in,
    replicas_of,
    start_rebalance,
    throttle_configs,
)
from tests.integration.kafka_topics import create_topics, wait_for
from topology.capacities import CAPACITY_KEYS, Capacities
from topology.kafka_admin import KafkaClusterAdmin
from topology.live import read_live_topology
from topology.model import TopicPartition
from topology.snapshot import topology_from_dict

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "auto-it"
PARTITIONS = 6
PARTITION_BYTES = 1_500_000  # ~0.75 s per replica copy at 2 MB/s
RECORD_BYTES = 10_000
TOLERANCE = "0.3"
EQUAL = Capacities(default={k: 1e15 for k in CAPACITY_KEYS})


def rebalance(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "import cli; cli.main()", *args],
                          capture_output=True, text=True, timeout=240, cwd=ROOT)


def create_spread_topic(info: SandboxInfo) -> str:
    """RF-2 partitions, one replica on each rack, over the four session brokers, with data."""
    a = sorted(b.id for b in info.brokers if b.rack == "a")[:2]
    b = sorted(b.id for b in info.brokers if b.rack == "b")[:2]
    pairs = [[a[0], b[0]], [b[1], a[1]], [a[1], b[0]], [b[1], a[0]]]
    topic = f"{PREFIX}-{uuid.uuid4().hex[:8]}"
    create_topics(info.bootstrap, [NewTopic(topic, PARTITIONS, replica_assignment=[
        pairs[i % len(pairs)] for i in range(PARTITIONS)])])
    producer = Producer({"bootstrap.servers": info.bootstrap, "linger.ms": 50,
                         "compression.type": "none", "acks": "all"})
    payload = os.urandom(RECORD_BYTES)
    for partition in range(PARTITIONS):
        for _ in range(PARTITION_BYTES // RECORD_BYTES):
            producer.produce(topic, value=payload, partition=partition)
            producer.poll(0)
    assert producer.flush(120) == 0
    return topic


@dataclass(frozen=True)
class Grown:
    info: SandboxInfo
    new: BrokerInfo
    topic: str


@pytest.fixture(scope="module")
def grown(sandbox: SandboxInfo) -> Iterator[Grown]:
    """The sandbox with a topic of data on the session brokers and one more, empty broker."""
    topic = create_spread_topic(sandbox)
    new = cluster.add_broker(sandbox.dir, "a")
    info = cluster.running(sandbox.dir)
    yield Grown(info, new, topic)
    admin = AdminClient({"bootstrap.servers": info.bootstrap})
    admin.delete_topics([topic])[topic].result(60)


def hhmm(at: datetime) -> str:
    return f"{at:%H:%M}"


def auto_args(info: SandboxInfo, state: Path, window: str) -> list[str]:
    return ["auto", "--once", "--bootstrap", info.bootstrap, "--prometheus",
            info.prometheus_url, "--max-mbps", "2", "--window", window, "--timezone", "UTC",
            "--state-dir", str(state), "--tolerance", TOLERANCE, "--time-limit", "20",
            "--poll-seconds", "0.5", *CALM_SLO]


def live(info: SandboxInfo, offline: frozenset[int] = frozenset()) -> tuple[
    dict[TopicPartition, tuple[int, ...]], dict[int, dict[str, str | None]],
    dict[str, dict[str, str | None]]
]:
    """Replicas of every partition and every throttle config, read back from the brokers (but
    the `offline` ones, which answer nothing)."""
    admin = KafkaClusterAdmin(info.bootstrap)
    try:
        parts = admin.partitions()
        replicas = {p.key: p.replicas for p in parts}
        brokers = admin.broker_configs([b.id for b in info.brokers if b.id not in offline],
                                       BROKER_THROTTLE_CONFIGS)
        topics = admin.topic_configs({p.key.topic for p in parts}, TOPIC_THROTTLE_CONFIGS)
    finally:
        admin.close()
    return replicas, brokers, topics


def no_throttles(brokers: dict[int, dict[str, str | None]],
                 topics: dict[str, dict[str, str | None]]) -> bool:
    return (all(v is None for c in brokers.values() for v in c.values())
            and all(not v for c in topics.values() for v in c.values()))


def test_outside_the_window_nothing_changes(grown: Grown, tmp_path: Path) -> None:
    info, new = grown.info, grown.new
    admin = KafkaClusterAdmin(info.bootstrap)
    try:
        topology = topology_from_dict(read_live_topology(admin, None, EQUAL).document, EQUAL,
                                      "sandbox")
    finally:
        admin.close()
    assert imbalance_verdict(topology, Goals(float(TOLERANCE))).due  # there is work to do
    before = live(info)
    now = datetime.now(UTC)
    window = f"daily {hhmm(now + timedelta(hours=3))}-{hhmm(now + timedelta(hours=4))}"
    state = tmp_path / "state"
    result = rebalance(*auto_args(info, state, window))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "sleep: outside the windows" in result.stdout, result.stdout
    assert live(info) == before
    assert all(new.id not in r for r in before[0].values())
    assert not list(state.glob("plan-*"))


def test_inside_the_window_replicas_move_to_the_new_broker(grown: Grown,
                                                          tmp_path: Path) -> None:
    info, new = grown.info, grown.new
    _, brokers_before, topics_before = live(info)
    assert no_throttles({new.id: brokers_before[new.id]}, {grown.topic: topics_before[grown.topic]})
    now = datetime.now(UTC)
    window = f"daily {hhmm(now - timedelta(minutes=30))}-{hhmm(now + timedelta(hours=2))}"
    state = tmp_path / "state"
    result = rebalance(*auto_args(info, state, window))
    log = result.stdout + result.stderr
    assert result.returncode == 0, log
    assert "rebalance: rebalance due" in result.stdout, log

    plans = sorted(state.glob("plan-*.json"))
    assert len(plans) == 1, log
    plan = read_plan(plans[0])
    journal = read_journal(plans[0].with_name(plans[0].name + ".journal"))
    assert journal.outcome is RunOutcome.COMPLETED, log
    assert all(journal.state_of(m.name) is MoveState.DONE for m in plan.moves)
    assert plan.budget.max_bytes is not None and plan.budget.max_bytes > 0

    replicas, brokers, topics = live(info)
    assert any(new.id in m.target for m in plan.moves), log
    for move in plan.moves:
        assert replicas[move.key] == move.target, move.name
    assert sum(new.id in r for r in replicas.values()) > 0
    # every throttle config is as it was (the run's own removed, any other left alone) ...
    assert brokers == brokers_before
    assert {t: topics[t] for t in topics_before} == topics_before
    # ... topics the run made itself (its lease, Kafka's transaction log) carry none
    assert not any(v for t in set(topics) - set(topics_before) for v in topics[t].values())
    # ... and none is set on the new broker or the test topic
    assert no_throttles({new.id: brokers[new.id]}, {grown.topic: topics[grown.topic]})


# --- a paced move, and SIGTERM mid-move ------------------------------------------------------
# Each test makes its own imbalance: one partition of BIG_BYTES with both replicas on rack a,
# a rack-rule violation that `auto` must fix by copying one replica to rack b. The tolerance is
# wide (0.9), so balance alone asks for nothing more on a cluster that test_inside_the_window
# left within 0.3 (or, run alone, on the session brokers).

BIG_BYTES = 4_000_000
WIDE_TOLERANCE = "0.9"


def window_now() -> str:
    now = datetime.now(UTC)
    return f"daily {hhmm(now - timedelta(minutes=30))}-{hhmm(now + timedelta(hours=2))}"


def paced_args(info: SandboxInfo, state: Path, max_mbps: str) -> list[str]:
    return ["auto", "--once", "--bootstrap", info.bootstrap, "--prometheus",
            info.prometheus_url, "--max-mbps", max_mbps, "--window", window_now(),
            "--timezone", "UTC", "--state-dir", str(state), "--tolerance", WIDE_TOLERANCE,
            "--time-limit", "10", "--poll-seconds", "0.5", *CALM_SLO]
# (No --quota-window: the run waits the window the brokers describe. When the plan holds another
# move first, a shorter wait let the rack fix start inside that window and copy its first
# seconds far above the cap.)


@dataclass(frozen=True)
class RackBroken:
    """A topic with one partition whose two replicas share rack a, and the state before."""

    info: SandboxInfo
    topic: str
    old: tuple[int, ...]
    ids: list[int]
    before: ThrottleConfigs


def rack_broken(sandbox: SandboxInfo) -> RackBroken:
    info = cluster.running(sandbox.dir)  # with the broker `grown` added, if it ran
    lay = layout(info)
    old = (lay.leader, lay.spare_a)
    topic = create_topic(info, "exec-auto", 1, list(old), BIG_BYTES)
    ids = sorted(b.id for b in info.brokers)
    admin = KafkaClusterAdmin(info.bootstrap)
    try:
        before = throttle_configs(admin, ids, topic)
    finally:
        admin.close()
    return RackBroken(info, topic, old, ids, before)


def only_plan(state: Path) -> tuple[PlanFile, Path]:
    plans = sorted(state.glob("plan-*.json"))
    assert len(plans) == 1, plans
    return read_plan(plans[0]), plans[0].with_name(plans[0].name + ".journal")


def state_times(journal: Path, move: str) -> dict[str, float]:
    """When `move` entered each state (clock seconds), from the journal's records."""
    records, _ = parse_lines(journal.read_bytes(), str(journal))
    return {str(r["state"]): float(r["at"]) for r in records
            if r.get("kind") == "state" and r.get("move") == move}


@pytest.mark.usefixtures("drop_exec_topics")
def test_a_paced_move_holds_the_cap_on_the_brokers_while_it_copies(
        sandbox: SandboxInfo, tmp_path: Path) -> None:
    broken = rack_broken(sandbox)
    cap = str(1_000_000)
    state, log = tmp_path / "state", tmp_path / "auto.log"
    proc = start_rebalance(log, *paced_args(broken.info, state, "1"))
    old_rates = broken.before[0]
    seen: list[ThrottleConfigs] = []  # every reading with a broker's rate changed by the run
    admin = KafkaClusterAdmin(broken.info.bootstrap)
    try:
        deadline = time.monotonic() + 120
        while proc.poll() is None:
            assert time.monotonic() < deadline, log.read_text()
            brokers, topic = throttle_configs(admin, broken.ids, broken.topic)
            if brokers != old_rates:
                seen.append((brokers, topic))
            time.sleep(0.1)
        after = throttle_configs(admin, broken.ids, broken.topic)
        replicas = replicas_of(admin, broken.topic)
    finally:
        admin.close()
    text = log.read_text()
    assert proc.returncode == 0, text
    assert "worth running: fixes 1 of 1 hard-goal violation" in text, text

    plan, journal = only_plan(state)
    move = next(m for m in plan.moves if m.topic == broken.topic)
    assert read_journal(journal).outcome is RunOutcome.COMPLETED, text
    assert replicas[0] == move.target != broken.old
    (added,) = move.added_brokers
    # during the moves: the cap, or a receiver's share of it for a move that adds k replicas
    # (a leader feeding k new followers sends at most the cap), wherever the run set a rate ...
    values = {v for brokers, _ in seen for b, c in brokers.items() for k, v in c.items()
              if v != old_rates[b][k]}
    shares = {str(int(cap) // len(m.added_brokers)) for m in plan.moves if m.added_brokers}
    assert cap in values and values <= shares, (values, shares, text)
    receiving = [b for b, _ in seen if b[added][FOLLOWER_RATE] == cap]
    sending = [b for b, _ in seen if all(b[s][LEADER_RATE] == cap for s in move.current)]
    assert len(receiving) >= 3 and len(sending) >= 3, (len(receiving), len(sending), text)
    assert any(f"0:{added}" in (t.get(FOLLOWER_REPLICAS) or "") for _, t in seen), seen
    # ... and the copy took its time: 4 MB unthrottled on loopback takes well under 0.5 s
    times = state_times(journal, move.name)
    copy_seconds = times[MoveState.VERIFYING.value] - times[MoveState.COPYING.value]
    assert copy_seconds >= 0.5 * BIG_BYTES / 1_000_000, (copy_seconds, text)
    # after: every throttle config as before the run
    assert after == broken.before, text


@pytest.mark.usefixtures("drop_exec_topics")
def test_sigterm_mid_move_exits_cancelled_or_completed_with_no_throttle_left(
        sandbox: SandboxInfo, tmp_path: Path) -> None:
    broken = rack_broken(sandbox)
    state, log = tmp_path / "state", tmp_path / "auto.log"
    proc = start_rebalance(log, *paced_args(broken.info, state, "0.5"))  # ~8 s of copying
    try:
        def copying() -> bool:
            if proc.poll() is not None:
                return True  # ended before copying: the assertion below shows the log
            plans = sorted(state.glob("plan-*.json"))
            return bool(plans) and move_in(plans[0].with_name(plans[0].name + ".journal"),
                                           f"{broken.topic}-0", MoveState.COPYING)

        wait_for("the move to copy", copying, 90)
        assert proc.poll() is None, log.read_text()
        time.sleep(1.0)  # well inside the copy
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    plan, journal = only_plan(state)
    move = next(m for m in plan.moves if m.topic == broken.topic)
    final = read_journal(journal).state_of(move.name)
    assert "interrupted: cancelling the run" in text, text
    assert final in (MoveState.CANCELLED, MoveState.DONE), (final, text)
    # exit 0 when the copy won the race, else 8: cancelled as asked, throttles restored
    assert proc.returncode == (0 if final is MoveState.DONE else 8), text

    admin = KafkaClusterAdmin(broken.info.bootstrap)
    try:
        replicas = replicas_of(admin, broken.topic)[0]
        in_flight = [tp for tp in admin.list_partition_reassignments()
                     if tp.topic == broken.topic]
        after = throttle_configs(admin, broken.ids, broken.topic)
    finally:
        admin.close()
    assert replicas == (broken.old if final is MoveState.CANCELLED else move.target), text
    assert not in_flight
    assert after == broken.before, text


@pytest.mark.usefixtures("drop_exec_topics")
def test_leaders_off_their_fair_share_are_levelled_by_reordering_alone(
        sandbox: SandboxInfo, tmp_path: Path) -> None:
    """`auto --leader-balance`: two empty topics put ten replicas on every session broker,
    each topic led by one broker of its pair, so two brokers lead ten partitions and two none.
    The leaders make a rebalance due; the cycle levels them by reordering the topics' replicas
    (no copy) and runs the plan; the brokers report every moved partition's new replica order
    with its preferred leader leading."""
    info = cluster.running(sandbox.dir)
    lay = layout(info)
    topics = [create_topic(info, "exec-auto-leaders", 10, pair, 0)
              for pair in ([lay.leader, lay.follower], [lay.spare_a, lay.spare])]
    state = tmp_path / "state"
    result = rebalance(*paced_args(info, state, "2"), "--leader-balance", "0.2")
    log = result.stdout + result.stderr
    assert result.returncode == 0, log
    assert "leaders: " in result.stdout and "off their fair share" in result.stdout, log
    (plan_path,) = sorted(state.glob("plan-*.json"))
    plan = read_plan(plan_path)
    mine = [m for m in plan.moves if m.topic in topics]
    assert mine and all(set(m.current) == set(m.target) for m in mine), log  # reordered only
    assert plan.leaders is not None
    assert plan.leaders.after.brokers_outside < plan.leaders.before.brokers_outside
    assert read_journal(plan_path.with_name(plan_path.name + ".journal")).outcome \
        is RunOutcome.COMPLETED, log
    admin = KafkaClusterAdmin(info.bootstrap)
    try:
        now = {p.key: p for p in admin.partitions()}
    finally:
        admin.close()
    for move in plan.moves:
        assert now[move.key].replicas == move.target, move.name
        assert now[move.key].leader == move.target[0], move.name


def test_a_broker_dead_past_its_grace_period_is_drained(grown: Grown, tmp_path: Path) -> None:
    """Self-healing: the grown broker holds replicas and is killed for good. Inside the grace
    period a cycle waits and changes nothing; past it the cycle drains it (no replica is left
    on it, the run completes and no throttle is left on a live broker)."""
    info, new = grown.info, grown.new
    replicas, _, _ = live(info)
    if not any(new.id in r for r in replicas.values()):  # run alone: give it replicas first
        test_inside_the_window_replicas_move_to_the_new_broker(grown, tmp_path / "grow")
    now = datetime.now(UTC)
    window = f"daily {hhmm(now - timedelta(minutes=30))}-{hhmm(now + timedelta(hours=2))}"
    state = tmp_path / "state"
    cluster.kill_broker(info.dir, new.id)
    try:
        admin = KafkaClusterAdmin(info.bootstrap)
        try:
            wait_for("the dead broker out of every ISR", lambda: all(
                new.id not in p.isr for p in admin.partitions()), 90)
        finally:
            admin.close()
        dead = frozenset({new.id})
        before = live(info, dead)[0]
        waiting = rebalance(*auto_args(info, state, window), "--drain-dead-after", "3600")
        assert waiting.returncode == 0, waiting.stdout + waiting.stderr
        assert f"waiting: offline: broker {new.id} for" in waiting.stdout, waiting.stdout
        assert live(info, dead)[0] == before and not list(state.glob("plan-*"))

        drained = rebalance(*auto_args(info, state, window), "--drain-dead-after", "0")
        log = drained.stdout + drained.stderr
        assert drained.returncode == 0, log
        plans = sorted(state.glob("plan-*.json"))
        assert len(plans) == 1, log
        journal = read_journal(plans[0].with_name(plans[0].name + ".journal"))
        assert journal.outcome is RunOutcome.COMPLETED, log
        replicas, brokers, topics = live(info, dead)
        assert not [tp for tp, r in replicas.items() if new.id in r], log
        assert no_throttles(brokers, topics), (brokers, topics)
    finally:
        cluster.start_broker(info.dir, new.id)
