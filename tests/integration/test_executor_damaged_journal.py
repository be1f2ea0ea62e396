"""Damaged journals on the real cluster: a finished run's journal cut mid-line after the cluster
was put back is refused by `resume` (its moves marked done are not on the cluster) and nothing
moves; a journal cut inside its header is refused and keeps every byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.state import SandboxInfo
from tests.integration.executor_support import (
    create_topic,
    execute_args,
    layout,
    make_plan,
    rebalance,
    replicas_of,
    throttle_configs,
)
from topology.kafka_admin import KafkaClusterAdmin

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("drop_exec_topics")]


def conn(info: SandboxInfo) -> list[str]:
    return ["--bootstrap", info.bootstrap, "--prometheus", info.prometheus_url]


def cut_after_first_done(journal: Path) -> bytes:
    """The journal up to its first move's `done` record and half of the next line."""
    data = journal.read_bytes()
    done = data.index(b'"done"')
    end = data.index(b"\n", done) + 1
    following = data.index(b"\n", end)
    return data[:end + (following - end) // 2]


def test_a_cut_journal_of_a_put_back_run_is_refused_and_nothing_moves(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    lay = layout(sandbox)
    topic = create_topic(sandbox, "exec-cut", 2, [lay.leader, lay.follower], 1_000_000)
    before = throttle_configs(admin, lay.all_ids, topic)
    plan, back = tmp_path / "plan.json", tmp_path / "back.json"
    make_plan(sandbox, plan, [(topic, p, (lay.leader, lay.spare)) for p in range(2)])
    journal = tmp_path / "plan.journal"
    run = rebalance(*execute_args(sandbox, plan, journal, "--quota-window", "0", max_mbps="5"))
    assert run.returncode == 0, run.stdout + run.stderr
    make_plan(sandbox, back, [(topic, p, (lay.leader, lay.follower)) for p in range(2)])
    put_back = rebalance(*execute_args(sandbox, back, tmp_path / "back.journal",
                                       "--quota-window", "0", max_mbps="5"))
    assert put_back.returncode == 0, put_back.stdout + put_back.stderr
    journal.write_bytes(cut_after_first_done(journal))

    resumed = rebalance("resume", "--journal", str(journal), *conn(sandbox))
    assert resumed.returncode == 6, resumed.stdout + resumed.stderr
    assert "marks done are not in place" in resumed.stderr, resumed.stderr
    assert replicas_of(admin, topic) == {0: (lay.leader, lay.follower),
                                         1: (lay.leader, lay.follower)}
    assert throttle_configs(admin, lay.all_ids, topic) == before

    header_cut = tmp_path / "header.journal"
    header_cut.write_bytes(journal.read_bytes()[:40])
    refused = rebalance("resume", "--journal", str(header_cut), *conn(sandbox))
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert header_cut.read_bytes() == journal.read_bytes()[:40]  # a refusal never writes
    assert replicas_of(admin, topic) == {0: (lay.leader, lay.follower),
                                         1: (lay.leader, lay.follower)}
