"""The SLO guard on the real sandbox: with a produce p99 threshold every broker that served
produce requests breaches, so while the move copies the guard lowers the rate on its sender,
step by step down to the floor; the brokers report the lowered rate, the journal and the
executor's metrics record each decision, the copy slows down, and every throttle config is as
before the run afterwards."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from executor.journal import parse_lines
from executor.throttle import LEADER_RATE
from kafka_rebalance.sandbox.state import SandboxInfo
from tests.integration.executor_support import (
    create_topic,
    execute_args,
    layout,
    make_plan,
    scrape,
    start_rebalance,
    throttle_configs,
)
from tests.integration.kafka_topics import free_port
from topology.kafka_admin import KafkaClusterAdmin

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("drop_exec_topics")]

CAP = 1_000_000
# 6 s at the cap. Kafka lets a copy's first second through at the cap plus a fetch (1 MiB) and
# then holds it to the lowered rates in whole fetches, one per quota window (3 s on the tests'
# sandboxes): a copy of 3 MB was three fetches and ended in 3.6 s whatever the guard did.
SIZE = 6_000_000
# Every broker that served a produce request has a p99 above a microsecond: a breach, judged
# by the threshold alone (against its own normal a broker would not breach).
BREACH = ("--slo-produce-p99-ms", "0.001", "--slo-absolute", "--slo-fetch-p99-ms", "0",
          "--slo-flush-p95-ms", "0", "--slo-under-replicated", "1000000", "--slo-interval", "1")


def test_a_breach_lowers_the_senders_rate_while_it_copies(sandbox: SandboxInfo,
                                                          tmp_path: Path) -> None:
    lay = layout(sandbox)
    topic = create_topic(sandbox, "exec-slo", 1, [lay.leader, lay.follower], SIZE)
    plan = tmp_path / "plan.json"
    (move,) = make_plan(sandbox, plan, [(topic, 0, (lay.leader, lay.spare))])
    journal, log, port = tmp_path / "plan.json.journal", tmp_path / "run.log", free_port()
    ids = sorted(b.id for b in sandbox.brokers)
    admin = KafkaClusterAdmin(sandbox.bootstrap)
    leader_rates: list[int] = []
    levels_exported: set[str] = set()
    try:
        before = throttle_configs(admin, ids, topic)
        proc = start_rebalance(log, *execute_args(
            sandbox, plan, journal, *BREACH, "--metrics-port", str(port), calm_slo=False))
        deadline = time.monotonic() + 240
        while proc.poll() is None:
            assert time.monotonic() < deadline, log.read_text()
            rate = throttle_configs(admin, ids, topic)[0][lay.leader].get(LEADER_RATE)
            if rate is not None:
                leader_rates.append(int(rate))
            levels_exported |= set(re.findall(
                rf'rebalance_slo_guard_level_bytes_per_second\{{broker="{lay.leader}"\}} (\S+)',
                scrape(port)))
            time.sleep(0.2)
        after = throttle_configs(admin, ids, topic)
    finally:
        admin.close()
    text = log.read_text()
    assert proc.returncode == 0, text

    # read back from the broker: the cap first, then the guard's halvings
    assert leader_rates[0] == CAP, leader_rates
    assert {CAP // 2, CAP // 4} <= set(leader_rates), sorted(set(leader_rates))
    assert min(leader_rates) >= CAP // 8, leader_rates  # never under the floor
    assert f"SLO guard: broker {lay.leader} lowered 1.00 MB/s -> 500 kB/s" in text, text
    assert levels_exported and min(float(v) for v in levels_exported) < CAP, levels_exported

    records, _ = parse_lines(journal.read_bytes(), str(journal))
    guards = [r for r in records if r.get("kind") == "guard"]
    assert guards and guards[0]["levels"].get(str(lay.leader)) == CAP // 2, guards
    assert "produce p99" in " ".join(guards[0]["changes"])
    # the copy ran slower than at the cap
    times = {str(r["state"]): float(r["at"]) for r in records
             if r.get("kind") == "state" and r.get("move") == move.name}
    assert times["verifying"] - times["copying"] >= 1.5 * SIZE / CAP, (times, text)
    assert after == before, text  # every throttle config back as it was
