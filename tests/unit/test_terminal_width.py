"""The review and --help in a real terminal of 80 and of 120 columns: every line fits, no
name or flag is cut ("…"), and the narrow layout keeps what an operator needs to decide.

Each command runs in a pseudo-terminal whose size is set the way a terminal emulator sets it
(TIOCSWINSZ), with COLUMNS unset, so the width comes from the terminal as it does for a person.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from rich.cells import cell_len

from kafka_rebalance.files.planfile import write_plan
from planner.goals import Budget, Goals
from planner.planfile import SolverInfo, make_plan_file
from planner.result import Move, SolverStatus
from topology.model import Broker, Capacity, Partition, Topology

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
MB = 1_000_000
# topic names as they are in the field: long, dotted, versioned
TOPICS = ("payments.settlement-events.v3", "user-activity-clickstream-eu-west")


def in_terminal(columns: int, *args: str) -> str:
    """What `rebalance ARGS` prints to a terminal of `columns` x 200."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 200, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["TERM"] = "xterm"
    proc = subprocess.Popen([sys.executable, "-c", "import cli; cli.main()", *args],
                            stdin=terminal, stdout=terminal, stderr=terminal, env=env,
                            cwd=Path(__file__).parents[2])
    os.close(terminal)
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(controller)
    assert proc.wait(60) == 0, b"".join(chunks).decode(errors="replace")
    return ANSI.sub("", b"".join(chunks).decode()).replace("\r", "")


@pytest.fixture(scope="module")
def plan_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cap = Capacity(4000 * MB, 100 * MB, 100 * MB)
    racks = ("us-east-1a", "us-east-1b", "us-east-1c")
    brokers = tuple(Broker(i, racks[(i - 1) % 3], cap) for i in range(1, 10))
    parts = tuple(Partition(TOPICS[i % 2], i, (1 + i % 3, 4 + (i + 1) % 3, 7 + (i + 2) % 3),
                            (100 + 10 * i) * MB, 1e5, 2e5) for i in range(12))

    def moved(p: Partition) -> Move:  # the last replica to another broker of its rack
        last = p.replicas[-1]
        spare = next(b.id for b in brokers if b.rack == brokers[last - 1].rack
                     and b.id not in p.replicas)
        return Move(p.topic, p.partition, p.replicas, (*p.replicas[:-1], spare), p.size_bytes)
    moves = tuple(moved(p) for p in parts[:6])
    plan = make_plan_file(Topology(brokers, parts), moves, Goals(add_brokers=frozenset({9})),
                          Budget(), SolverInfo(SolverStatus.FEASIBLE, 500 * MB, 0.1, 2.0),
                          "2026-01-01T00:00:00+00:00", ("a warning",))
    path = tmp_path_factory.mktemp("width") / "plan.json"
    write_plan(path, plan)
    return path


def widest(text: str) -> int:
    return max(cell_len(line) for line in text.splitlines())


@pytest.mark.parametrize("columns", [80, 120])
def test_the_review_fits_the_terminal_and_names_every_partition_whole(
        plan_path: Path, columns: int) -> None:
    text = in_terminal(columns, "diff", str(plan_path), "--show-moves", "6")
    assert widest(text) <= columns, text
    assert "…" not in text, text
    rows = [line for line in text.splitlines() if "│" in line]
    for index in range(6):
        name = f"{TOPICS[index % 2]}-{index}"
        assert any(name in row for row in rows), (name, text)
    # one line per broker and per move: a row never wraps
    assert sum(1 for row in rows if "us-east-1" in row) == 9, text
    assert "ETA" in text and "copied" in text


def test_the_narrow_review_shortens_rather_than_wraps(plan_path: Path) -> None:
    narrow = in_terminal(80, "diff", str(plan_path), "--show-moves", "6")
    wide = in_terminal(160, "diff", str(plan_path), "--show-moves", "6")
    assert "utilization in %" in narrow and "ETA, one at a time" in narrow
    assert "[1, 5, 9] -> " not in narrow
    assert "[1, 5, 9] -> " in wide and "start-up +" in wide  # the full layout


@pytest.mark.parametrize("columns", [80, 120, 160])
@pytest.mark.parametrize("command", ["execute", "resume", "auto", "plan", "status"])
def test_help_fits_the_terminal_and_cuts_no_flag(columns: int, command: str) -> None:
    text = in_terminal(columns, command, "--help")
    assert widest(text) <= columns, text
    assert "…" not in text, text
    if command == "execute":
        for flag in ("--allow-under-replicated", "--allow-quota-burst", "--slo-absolute",
                     "--gate-produce-p99-ms", "--strict-balance"):
            assert flag in text, (flag, text)


@pytest.mark.parametrize("columns", [80, 120])
def test_show_fits_the_terminal(columns: int) -> None:
    root = Path(__file__).parents[2] / "examples"
    text = in_terminal(columns, "show", str(root / "cluster.json"), "--capacities",
                       str(root / "capacities.yaml"))
    assert widest(text) <= columns, text
    assert "…" not in text and "rack-c" in text, text


@pytest.mark.parametrize("columns", [80, 120])
def test_the_run_summary_names_a_249_character_partition_whole_and_keeps_its_state(
        columns: int) -> None:
    """Kafka allows topic names of 249 characters: the summary's table folds them onto more
    lines instead of cutting them (`LLL…-0` and `LLL…-1` looked the same) or another
    column (the state, the rate)."""
    from rich.console import Console

    from executor.journal import header_record, replay, state_record
    from executor.plan import ExecutionPlan
    from executor.state import MoveState
    from kafka_rebalance.report.run_status import moves_table
    from planner.result import Move

    name = "t" * 240 + ".a_b-c"
    plan = ExecutionPlan.of([Move(name, n, (1, 2), (1, 3), 10_000_000) for n in (0, 1)])
    records = [header_record(plan, {"max_bytes_per_sec": 20_000_000})]
    at = 1000.0
    for move in (f"{name}-0", f"{name}-1"):
        for state in (MoveState.THROTTLING, MoveState.SUBMITTED, MoveState.COPYING,
                      MoveState.VERIFYING, MoveState.UNTHROTTLING, MoveState.ELECTING,
                      MoveState.COOLING_DOWN, MoveState.DONE):
            at += 1
            records.append(state_record(move, state, at))
    run = replay(records)
    console = Console(width=columns, record=True)
    console.print(moves_table(run, run.timeline, at))
    lines = console.export_text().splitlines()
    assert all(len(line) <= columns for line in lines)
    assert "…" not in console.export_text()
    start = next(line.index("partition") for line in lines if "partition" in line)
    column = "".join(line[start:].split(" ")[0] for line in lines
                     if len(line) > start and line[start] != " ")
    assert f"{name}-0{name}-1" in column, column
    assert sum("done" in line for line in lines) == 2
    assert sum("10.0 MB/s (50%)" in line for line in lines) == 2
