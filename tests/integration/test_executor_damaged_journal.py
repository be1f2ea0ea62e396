"""Damaged journals on the real cluster: a finished run's journal cut mid-line after the cluster
was put back is refused by `resume` (its moves marked done are not on the cluster), nothing
moves and the cluster's run lease is free for the next run; a journal cut inside its header is
refused and keeps every byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
from topology.kafka_admin import KafkaClusterAdmin

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("drop_exec_topics")]


def conn(info: SandboxInfo) -> list[str]:
    return ["--bootstrap", info.bootstrap, "--prometheus", info.prometheus_url]


def cut_after(data: bytes, *marks: tuple[str | None, str]) -> bytes:
    """A journal up to the record where the last of `marks` (move, state; any move for None)
    is first reached, and half of the next line. Records are read, not searched as bytes: a
    move's copy may end, and the next start, before the move itself is done (the hand-over),
    so the second "copying" record need not follow the first "done"."""
    found: dict[tuple[str | None, str], int] = {}
    end = 0
    for line in data.splitlines(keepends=True):
        end += len(line)
        record = json.loads(line)
        for move, state in marks:
            if record.get("state") == state and move in (None, record.get("move")):
                found.setdefault((move, state), end)
        if len(found) == len(marks):
            following = data.index(b"\n", end)
            return data[:end + (following - end) // 2]
    raise AssertionError(f"the journal never reaches {marks}")


def first_done(data: bytes) -> str:
    """The move whose "done" record comes first."""
    for line in data.splitlines():
        record = json.loads(line)
        if record.get("state") == "done":
            return str(record["move"])
    raise AssertionError("no move of the journal is done")


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
    full = journal.read_bytes()
    journal.write_bytes(cut_after(full, (None, "done")))

    resumed = rebalance("resume", "--journal", str(journal), *conn(sandbox))
    assert resumed.returncode == 6, resumed.stdout + resumed.stderr
    assert "marks done are not in place" in resumed.stderr, resumed.stderr
    assert replicas_of(admin, topic) == {0: (lay.leader, lay.follower),
                                         1: (lay.leader, lay.follower)}
    assert throttle_configs(admin, lay.all_ids, topic) == before
    # cut while one move is in flight, the other done: the same refusal, and the lease
    # it took is given back
    in_flight = tmp_path / "in-flight.journal"
    first = first_done(full)  # either move may end first when the second took the first over
    other = ({f"{topic}-0", f"{topic}-1"} - {first}).pop()
    in_flight.write_bytes(cut_after(full, (first, "done"), (other, "copying")))
    refused_in_flight = rebalance("resume", "--journal", str(in_flight), *conn(sandbox))
    assert refused_in_flight.returncode == 6, refused_in_flight.stdout + refused_in_flight.stderr
    assert "marks done are not in place" in refused_in_flight.stderr
    # each refusal gave back the cluster's run lease it took: the next run is not refused
    again = tmp_path / "again.json"
    make_plan(sandbox, again, [(topic, 0, (lay.leader, lay.spare))])
    after = rebalance(*execute_args(sandbox, again, tmp_path / "again.journal",
                                    "--quota-window", "0", max_mbps="5"))
    assert after.returncode == 0, after.stdout + after.stderr
    assert replicas_of(admin, topic)[0] == (lay.leader, lay.spare)
    back_again = tmp_path / "back-again.json"
    make_plan(sandbox, back_again, [(topic, 0, (lay.leader, lay.follower))])
    put_back_again = rebalance(*execute_args(sandbox, back_again, tmp_path / "back2.journal",
                                             "--quota-window", "0", max_mbps="5"))
    assert put_back_again.returncode == 0, put_back_again.stdout + put_back_again.stderr

    header_cut = tmp_path / "header.journal"
    header_cut.write_bytes(journal.read_bytes()[:40])
    refused = rebalance("resume", "--journal", str(header_cut), *conn(sandbox))
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert header_cut.read_bytes() == journal.read_bytes()[:40]  # a refusal never writes
    assert replicas_of(admin, topic) == {0: (lay.leader, lay.follower),
                                         1: (lay.leader, lay.follower)}
