"""Inputs an operator can give by mistake that used to end in an internal error (exit 70), a
hang, a leaked password or deleted data: each is now refused with what to fix."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from kafka_rebalance.autobalance.statedir import StateDir, state_lock
from kafka_rebalance.autobalance.windows import resolve_zone
from kafka_rebalance.core.errors import ExecutionError, InputError
from kafka_rebalance.files.weights import read_weights
from kafka_rebalance.usecases.run import check_new_journal
from spark_jobs.weights_io import check_output_path
from topology.capacities import read_capacities
from topology.documents import read_text
from topology.history import parse_duration
from topology.prom_source import PrometheusMetrics, checked_url
from topology.units import parse_bytes


def test_a_list_as_a_capacities_key_names_its_line(tmp_path: Path) -> None:
    caps = tmp_path / "caps.yaml"
    caps.write_text("brokers:\n  [1, 2]:\n    disk_bytes: 3TB\n")
    with pytest.raises(InputError, match="line 2: a key must be a name or a broker id"):
        read_capacities(caps)


def test_an_alias_bomb_as_a_size_is_refused_without_expanding_it(tmp_path: Path) -> None:
    levels = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    levels += [f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]"
               for p, c in zip("abcdefgh", "bcdefghi", strict=True)]
    caps = tmp_path / "bomb.yaml"
    caps.write_text("\n".join(levels) + "\ndefault: {disk_bytes: *i}\n")
    with pytest.raises(InputError) as caught:
        read_capacities(caps)
    assert len(str(caught.value)) < 2000
    with pytest.raises(InputError, match="expected a number of bytes, got a list"):
        parse_bytes([[1] * 3] * 3, "disk_bytes")


def test_a_pipe_or_device_is_refused_before_it_is_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening it for reading would wait for a writer forever
    with pytest.raises(InputError, match="not a regular file"):
        read_text(fifo, "snapshot")
    with pytest.raises(InputError, match="not a regular file"):
        read_text(Path("/dev/zero"), "capacities file", kind="YAML")
    big = tmp_path / "big.json"
    big.write_text("[" + " " * 100 + "]")
    with pytest.raises(InputError, match="more than a snapshot file holds"):
        read_text(big, "snapshot", limit=50)


@pytest.mark.parametrize(("url", "message"), [
    ("http://[::1", "not a valid URL"), ("http://h:port", "not a valid URL"),
    ("http://:9090", "names no host"), ("prometheus:9090", "must start with http")])
def test_a_malformed_prometheus_url_is_refused(url: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        checked_url(url)


def test_a_password_in_the_prometheus_url_is_never_shown() -> None:
    url, shown = checked_url("http://admin:s3cret@127.0.0.1:1/")
    assert url == "http://admin:s3cret@127.0.0.1:1" and shown == "http://127.0.0.1:1"
    metrics = PrometheusMetrics("http://admin:s3cret@127.0.0.1:1", timeout_s=1)
    with pytest.raises(Exception) as caught:
        metrics.query("up")
    assert "s3cret" not in str(caught.value) and "127.0.0.1:1" in str(caught.value)


def test_a_zone_directory_and_a_posix_tz_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InputError, match="not an IANA timezone name"):
        resolve_zone("Europe")
    with pytest.raises(InputError, match="not an IANA timezone name"):
        resolve_zone("x" * 5000)
    monkeypatch.setenv("TZ", "CET-1CEST,M3.5.0,M10.5.0/3")
    posix = "TZ='CET-1CEST,M3.5.0,M10.5.0/3' is not an IANA"
    with pytest.raises(InputError, match=re.escape(posix)):
        resolve_zone(None)
    monkeypatch.setenv("TZ", "Europe/Berlin")
    assert str(resolve_zone(None)) == "Europe/Berlin"


def test_a_journal_path_that_is_no_journal_is_named_for_what_it_is(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text("{}")
    with pytest.raises(InputError, match="is a directory; give the journal file's path"):
        check_new_journal(tmp_path, plan)
    with pytest.raises(InputError, match="is the plan file itself"):
        check_new_journal(plan, plan)
    other = tmp_path / "notes.txt"
    other.write_text("my notes")
    with pytest.raises(InputError, match="exists and is not a run journal"):
        check_new_journal(other, plan)
    journal = tmp_path / "plan.json.journal"
    journal.write_text(json.dumps({"kind": "run", "version": 1}) + "\n")
    with pytest.raises(ExecutionError, match="already exists: resume or cancel that run"):
        check_new_journal(journal, plan)
    check_new_journal(tmp_path / "new.journal", plan)  # a new path passes
    assert not list(tmp_path.glob(".rebalance-probe-*"))  # the probe leaves nothing behind


def test_a_journal_of_another_plan_is_named_so() -> None:
    """Two plans given one --journal: the second is told the journal holds another plan's
    run (it said 'a run of this path that ended', which reads as this plan's)."""
    import tempfile

    from executor.journal import JournalFile, end_record, header_record
    from executor.plan import ExecutionPlan
    from executor.records import RunOutcome
    from planner.result import Move

    first = ExecutionPlan.of([Move("t", 0, (1, 2), (1, 3), 10)])
    second = ExecutionPlan.of([Move("t", 1, (1, 2), (1, 4), 10)])
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "shared.journal"
        journal = JournalFile.create(path, header_record(first, {}))
        journal.append(end_record(RunOutcome.COMPLETED, 1.0))
        journal.close()
        with pytest.raises(ExecutionError, match=r"holds a run of another plan that ended "
                                                 r"\(completed\); it is never overwritten"):
            check_new_journal(path, None, second)
        with pytest.raises(ExecutionError, match="holds a run of this plan that ended"):
            check_new_journal(path, None, first)


def test_a_journal_in_a_directory_no_file_can_be_created_in_is_refused_first() -> None:
    """Before the cluster is contacted (as root too, whom permission bits do not stop)."""
    with pytest.raises(InputError, match="cannot create a file in /proc"):
        check_new_journal(Path("/proc/run.journal"))


def test_a_lock_file_the_state_dir_cannot_hold_is_refused(tmp_path: Path) -> None:
    (tmp_path / "auto.lock").mkdir()
    with pytest.raises(InputError, match="cannot open its lock file"), \
            state_lock(StateDir(tmp_path)):
        pass


def test_weights_never_go_over_or_into_the_history() -> None:
    for history, out in (("hist", "hist"), ("file:///tmp/h", "/tmp/h"),
                         ("hdfs:///k/history", "hdfs:///k/history/w.parquet"),
                         ("s3a://b/h/", "s3a://b/h")):
        with pytest.raises(InputError, match="would overwrite or sit inside"):
            check_output_path(history, out)
    assert check_output_path("hdfs:///k/history", "hdfs:///k/weights.parquet") is None
    assert check_output_path("/tmp/h", "file:///tmp/w.json") == Path("/tmp/w.json")


def test_durations_and_partition_numbers_beyond_reason_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="longer than 100 years"):
        parse_duration("1e305", "--step")
    weights = tmp_path / "w.json"
    weights.write_text('{"topic": "t", "partition": ' + "1" + "0" * 400 + ', '
                       '"bytes_in_per_sec": 1, "bytes_out_per_sec": 1, "size_bytes": 1, '
                       '"size_growth_bytes_per_day": 0}\n')
    with pytest.raises(InputError, match="row 1 has a number too large in 'partition'"):
        read_weights(weights)
    weights.write_text('{"topic": "t", "partition": 3e9, "bytes_in_per_sec": 1, '
                       '"bytes_out_per_sec": 1, "size_bytes": 1, '
                       '"size_growth_bytes_per_day": 0}\n')
    with pytest.raises(InputError, match="partitions are integers from 0 to 2147483647"):
        read_weights(weights)


def test_a_journal_of_an_ended_run_says_so_instead_of_resume_or_cancel(tmp_path: Path) -> None:
    from executor.journal import end_record, header_record
    from executor.plan import ExecutionPlan
    from executor.records import RunOutcome
    from planner.result import Move

    plan = ExecutionPlan.of([Move("t", 0, (1, 2), (1, 3), 5_000_000)])
    journal = tmp_path / "plan.json.journal"
    journal.write_text(json.dumps(header_record(plan, {"max_bytes_per_sec": 2_000_000}))
                       + "\n" + json.dumps(end_record(RunOutcome.COMPLETED, 2.0)) + "\n")
    with pytest.raises(ExecutionError, match=r"ended \(completed\).*another --journal path"):
        check_new_journal(journal, tmp_path / "plan.json")


@pytest.mark.parametrize("flag", ["--out", "--html"])
def test_an_output_in_a_directory_no_file_can_be_made_in_is_refused_before_planning(
        flag: str, tmp_path: Path) -> None:
    """/proc answers os.access's question yes for root, yet refuses every new file: found by a
    probe before any work, not after the solve (the plan written and then exit 70)."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "plan.json"
    paths = {"--out": out, "--html": tmp_path / "page.html"} | {flag: Path("/proc/plan.x")}
    result = subprocess.run(
        [sys.executable, "-c", "import cli; cli.main()", "plan",
         "--snapshot", str(root / "examples/cluster.json"),
         "--capacities", str(root / "examples/capacities.yaml"), "--add-broker", "13",
         "--out", str(paths["--out"]), "--html", str(paths["--html"])],
        cwd=root, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"error: {flag} /proc/plan.x: the directory /proc is not "
                                    "writable"), result.stderr
    assert list(tmp_path.iterdir()) == []
