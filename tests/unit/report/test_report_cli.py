"""`--html PATH` on `plan`, `diff` and `status`: the page is written after the terminal output,
its path is checked before any work, and an unreachable Prometheus only leaves a note."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from executor.records import Record
from kafka_rebalance.files.planfile import write_plan
from kafka_rebalance.report.files import is_report_file
from planner.planfile import PlanFile

Rebalance = Callable[..., tuple[int, str]]
CAP = {"disk_bytes": 1000, "net_in_bytes_per_sec": 1000, "net_out_bytes_per_sec": 1000}


def write_snapshot(path: Path) -> Path:
    """Brokers 1, 3 on rack a and 2, 4 on rack b; broker 4 holds nothing yet."""
    doc = {"version": 1,
           "brokers": [{"id": i, "rack": "a" if i % 2 else "b", "capacity": CAP}
                       for i in (1, 2, 3, 4)],
           "partitions": [{"topic": "t", "partition": n, "replicas": r, "size_bytes": 100,
                           "bytes_in_per_sec": 10, "bytes_out_per_sec": 10}
                          for n, r in {0: [1, 2], 1: [3, 2], 2: [2, 1], 3: [2, 3]}.items()]}
    path.write_text(json.dumps(doc))
    return path


def write_journal(path: Path, records: list[Record]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_diff_writes_a_page_and_replaces_only_its_own(rebalance: Rebalance, tmp_path: Path,
                                                      small_plan: PlanFile) -> None:
    plan = tmp_path / "plan.json"
    write_plan(plan, small_plan)
    page = tmp_path / "review.html"
    code, out = rebalance("diff", str(plan), "--html", str(page))
    assert code == 0, out
    html = page.read_text()
    assert is_report_file(page) and '<svg id="chart-flows"' in html
    assert "Plan review: plan.json" in html and "Balance (goal" in html  # the review's tables
    assert rebalance("diff", str(plan), "--html", str(page))[0] == 0  # its own: replaced
    mine = tmp_path / "notes.html"
    mine.write_text("mine")
    code, message = rebalance("diff", str(plan), "--html", str(mine))
    assert code == 2 and "not a report written by rebalance" in message
    assert mine.read_text() == "mine"
    code, message = rebalance("diff", str(plan), "--html", str(plan))
    assert code == 2 and "would overwrite an input" in message
    assert plan.read_text().startswith("{")


def test_plan_checks_the_page_path_first_and_writes_it_last(rebalance: Rebalance,
                                                            tmp_path: Path) -> None:
    snapshot = write_snapshot(tmp_path / "cluster.json")
    plan, page = tmp_path / "plan.json", tmp_path / "plan.html"
    code, message = rebalance("plan", "--snapshot", str(snapshot), "--out", str(plan),
                              "--add-broker", "4", "--time-limit", "5", "--html", str(plan))
    assert code == 2 and "--html" in message and not plan.exists()
    code, out = rebalance("plan", "--snapshot", str(snapshot), "--out", str(plan),
                          "--add-broker", "4", "--time-limit", "5", "--html", str(page))
    assert code == 0, out
    assert plan.exists() and is_report_file(page)
    assert '<svg id="chart-util-disk"' in page.read_text()


def test_status_draws_the_run_and_its_plan(rebalance: Rebalance, tmp_path: Path,
                                           small_plan: PlanFile,
                                           finished_run: list[Record]) -> None:
    plan = tmp_path / "plan.json"
    write_plan(plan, small_plan)
    journal = write_journal(tmp_path / "plan.json.journal", finished_run)
    page = tmp_path / "run.html"
    code, out = rebalance("status", "--journal", str(journal), "--html", str(page),
                          "--prometheus", "http://127.0.0.1:9")  # nothing listens there
    assert code == 0, out
    html = page.read_text()
    for section in ('<section id="run">', '<section id="plan">', '<svg id="chart-rates"'):
        assert section in html, section
    assert "Prometheus did not answer" in html  # noted on the page, not a failure
    assert "reassignment bytes in (Prometheus)" not in html


def test_status_without_its_plan_draws_the_run_only(rebalance: Rebalance, tmp_path: Path,
                                                    finished_run: list[Record]) -> None:
    journal = write_journal(tmp_path / "run.journal", finished_run)
    page = tmp_path / "run.html"
    code, out = rebalance("status", "--journal", str(journal), "--html", str(page))
    assert code == 0, out
    html = page.read_text()
    assert '<section id="run">' in html and '<section id="plan">' not in html
    assert "No plan file beside the journal" in html


def test_status_refuses_a_plan_of_other_moves(rebalance: Rebalance, tmp_path: Path,
                                              zoned_plan: PlanFile,
                                              finished_run: list[Record]) -> None:
    other = tmp_path / "other.json"
    write_plan(other, zoned_plan)
    journal = write_journal(tmp_path / "run.journal", finished_run)
    page = tmp_path / "run.html"
    code, out = rebalance("status", str(other), "--journal", str(journal), "--html", str(page))
    assert code == 2, out
    assert "is the journal of another plan" in out
    assert not page.exists()


def test_status_flags_are_checked_first(rebalance: Rebalance, tmp_path: Path,
                                        finished_run: list[Record]) -> None:
    journal = write_journal(tmp_path / "run.journal", finished_run)
    code, message = rebalance("status", "--journal", str(journal), "--prometheus",
                              "http://127.0.0.1:9")
    assert code == 2 and "--prometheus applies to --html" in message
    code, message = rebalance("status", "--journal", str(journal), "--html", str(journal))
    assert code == 2 and "would overwrite an input" in message
    assert journal.read_text().count("\n") == len(finished_run)
