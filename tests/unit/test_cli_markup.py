"""Names and messages from users and clusters reach rich escaped: a rack, topic, path or reason
that looks like markup prints as written, never crashes (MarkupError) or restyles the output."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console, RenderableType

from executor.journal import RunState
from executor.milestones import RunTimeline
from executor.plan import ExecutionPlan
from executor.progress import ProgressState
from executor.records import RunOutcome
from executor.runner import RunReport
from executor.state import MoveState
from executor.status import MoveStatus, RunStatus, StatusView
from executor.throttle import ThrottlePlan, ThrottlePriors
from kafka_rebalance.commands import render
from kafka_rebalance.commands.sandbox_cmd import _brokers_table
from kafka_rebalance.report.run_progress import (
    preview_table,
    render_progress,
    report_lines,
)
from kafka_rebalance.report.run_status import status_table
from kafka_rebalance.sandbox.state import BrokerInfo, SandboxInfo

Rebalance = Callable[..., tuple[int, str]]
CAP = {"disk_bytes": 1000, "net_in_bytes_per_sec": 1000, "net_out_bytes_per_sec": 1000}
NASTY = ["[/]x[bold]", "[bold]a", "[red]c[/red]"]


def plain_console() -> Console:
    return Console(width=300, file=io.StringIO(), color_system=None)


def rendered(renderable: RenderableType) -> str:
    console = plain_console()
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


def nasty_snapshot(path: Path) -> Path:
    """Three racks named like markup (topic names are Kafka's: no brackets); broker 4 on the
    first rack is empty."""
    doc = {"version": 1,
           "brokers": [{"id": i, "rack": NASTY[(i - 1) % 3], "capacity": CAP}
                       for i in (1, 2, 3, 4)],
           "partitions": [{"topic": f"topic-{n % 3}", "partition": n,
                           "replicas": [1, 2, 3], "size_bytes": 100, "bytes_in_per_sec": 10}
                          for n in range(6)]}
    path.write_text(json.dumps(doc))
    return path


def test_show_prints_racks_as_written(tmp_path: Path, rebalance_main: Any) -> None:
    path = nasty_snapshot(tmp_path / "[bold]snap.json")
    result = rebalance_main("show", str(path))
    assert result.code == 0, result.err
    for rack in NASTY:
        assert rack in result.out
    assert str(path) in result.out


def test_plan_and_diff_print_racks_and_paths_as_written(tmp_path: Path,
                                                                rebalance_main: Any) -> None:
    snap = nasty_snapshot(tmp_path / "snap.json")
    out = tmp_path / "[/]plan[bold].json"
    result = rebalance_main("plan", "--snapshot", str(snap), "--out", str(out),
                            "--time-limit", "5")
    assert result.code == 0, result.err
    moved = len(json.loads(out.read_text())["moves"])
    assert moved, "the snapshot must need moves"
    for text in [*NASTY, f"Wrote {moved} move(s) to {out}"]:
        assert text in result.out, text
    again = rebalance_main("diff", str(out), "--snapshot", str(snap))
    assert again.code == 0, again.err
    assert all(text in again.out for text in NASTY)


def test_status_and_report_print_names_and_reasons_as_written() -> None:
    name, reason = "[/]t[bold]-0", "broker [red]3 died"
    status = RunStatus("[bold]plan", RunOutcome.STOPPED, "stopped: [/]", 2,
                       {MoveState.FAILED: 1}, 0, 10,
                       (MoveStatus(1, name, MoveState.FAILED, 10, reason, True),), (name,))
    view = StatusView("[/]run.journal", "[bold]plan", False, RunState(ExecutionPlan(()), {}),
                      status, RunTimeline(None, None, None, {}), None, None, 0.0)
    text = rendered(status_table(view))
    for expected in (name, reason, "[bold]plan", "stopped: [/]", "[/]run.journal"):
        assert expected in text, expected
    report = RunReport(RunOutcome.STOPPED, {name: MoveState.FAILED}, {name: reason}, (name,),
                       "window [/]ends")
    lines = report_lines(report)
    assert f"  {name}: failed ({reason})" in lines
    console = plain_console()
    for line in lines:
        render.say(line, console)
    assert console.file.getvalue().splitlines() == lines  # type: ignore[attr-defined]


def test_preview_and_progress_print_names_as_written() -> None:
    plan = ThrottlePlan("[/]t-0", ThrottlePriors({}, "[/]t", {}), {1: {"leader.rate": 5}},
                        ("0:[bold]1",), ("0:[/]2",), ("note [red]x",))
    text = rendered(preview_table([plan], 1))
    for expected in ("[/]t-0", "0:[bold]1", "0:[/]2", "note [red]x"):
        assert expected in text, expected
    state = ProgressState(1, 10, 5, current="[/]t[bold]-0", gate="hold: [red]broker 2")
    text = rendered(render_progress(state))
    assert "[/]t[bold]-0" in text and "hold: [red]broker 2" in text


def test_sandbox_table_prints_racks_as_written() -> None:
    info = SandboxInfo(dir=Path("/tmp/[bold]sb"), base_port=1, cluster_id="c",
                       jar_dir=Path("/j"), controller_port=2, controller_pid=3,
                       prometheus_port=4, prometheus_pid=5,
                       brokers=(BrokerInfo(1, "[/]x[bold]", 6, 7, 8),), internal_rf=1)
    text = rendered(_brokers_table(info))
    assert "[/]x[bold]" in text and "/tmp/[bold]sb" in text


@pytest.mark.parametrize("message", NASTY)
def test_notes_print_as_written(message: str, capsys: pytest.CaptureFixture[str]) -> None:
    render.note(message)
    render.say(message, render.err_console)
    assert capsys.readouterr().err.splitlines() == [f"note: {message}", message]


def test_control_characters_in_a_rack_are_shown_not_obeyed(tmp_path: Path,
                                                          rebalance_main: Any) -> None:
    """A rack from a cluster or a file may hold ESC, a bell, a newline or a tab: they are
    written out as escapes in the tables, the plan review, the messages and the HTML report,
    never sent to the terminal (a colour change, a row split in two)."""
    racks = ["r\x1b[31mred\x07", "two\nlines", "tab\there"]
    doc = json.loads(nasty_snapshot(tmp_path / "snap.json").read_text())
    for broker in doc["brokers"]:
        broker["rack"] = racks[(broker["id"] - 1) % 3]
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(doc))
    shown = rebalance_main("show", str(snap))
    planned = rebalance_main("plan", "--snapshot", str(snap), "--out", str(tmp_path / "p.json"),
                             "--time-limit", "5", "--html", str(tmp_path / "p.html"))
    for result in (shown, planned):
        assert result.code == 0, result.err
        assert not any(c in result.out + result.err for c in "\x1b\x07\t")
        assert "r\\x1b[31mred\\x07" in result.out and "tab\\x09here" in result.out
        assert "two\\x0alines" in result.out
    page = (tmp_path / "p.html").read_text()
    assert not any(c in page for c in "\x1b\x07")


def test_escapes_in_a_plan_or_journal_are_shown_not_obeyed(tmp_path: Path,
                                                            rebalance_main: Any) -> None:
    """A plan's warnings, target reasons and racks, and a journal's end reason, are text a
    file says: an edited file with ESC (clear the screen) or a right-to-left override in them
    is printed with those written out."""
    from executor.journal import JournalFile, end_record, header_record, state_record
    from executor.plan import ExecutionPlan
    from executor.records import RunOutcome
    from planner.result import Move

    snap = tmp_path / "snap.json"
    doc = {"version": 1,
           "brokers": [{"id": i, "rack": "abc"[(i - 1) % 3], "capacity": CAP}
                       for i in (1, 2, 3, 4)],
           "partitions": [{"topic": f"topic-{n % 3}", "partition": n, "replicas": [1, 2, 3],
                           "size_bytes": 100, "bytes_in_per_sec": 10} for n in range(6)]}
    snap.write_text(json.dumps(doc))
    out = tmp_path / "plan.json"
    made = rebalance_main("plan", "--snapshot", str(snap), "--out", str(out), "--time-limit", "5")
    assert made.code == 0, made.err
    plan = json.loads(out.read_text())
    plan["warnings"] = ["\x1b[2Jwarned"]
    plan["before"]["brokers"][0]["rack"] = "r\u202eack"
    if plan.get("targets"):
        plan["targets"]["reasons"] = ["\x1b]0;title\x07why"]
    out.write_text(json.dumps(plan))
    shown = rebalance_main("diff", str(out))
    assert shown.code == 0, shown.err
    for raw in ("\x1b", "\u202e", "\x07"):
        assert raw not in shown.out + shown.err
    assert "\\x1b[2Jwarned" in shown.out + shown.err

    journal = JournalFile.create(tmp_path / "run.journal", header_record(
        ExecutionPlan.of([Move("t", 0, (1, 2), (1, 3), 100)]), {"max_bytes_per_sec": 1e6}))
    journal.append(state_record("t-0", MoveState.THROTTLING, 1.0))
    journal.append(end_record(RunOutcome.STOPPED, 2.0, "\x1b[2J\x1b[Hgone \u202eevil"))
    status = rebalance_main("status", "--journal", str(tmp_path / "run.journal"))
    assert "\x1b" not in status.out + status.err and "\u202e" not in status.out + status.err
    assert "\\x1b[2J\\x1b[Hgone \\u202eevil" in status.out + status.err, status.out
