"""Flag combinations refused before any connection or JVM start: exit code and message."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kafka_rebalance.files.planfile import write_plan
from planner.goals import Budget, Goals
from planner.planfile import SolverInfo, make_plan_file
from planner.result import Move, SolverStatus
from topology.snapshot import topology_from_dict

Rebalance = Callable[..., tuple[int, str]]
CONN = ["--bootstrap", "127.0.0.1:1", "--prometheus", "http://127.0.0.1:1"]


def plan_file(tmp_path: Path) -> Path:
    cap = {"disk_bytes": 1000, "net_in_bytes_per_sec": 1000, "net_out_bytes_per_sec": 1000}
    topology = topology_from_dict({
        "version": 1, "brokers": [{"id": i, "rack": None, "capacity": cap} for i in (1, 2, 3)],
        "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2], "size_bytes": 10}]})
    plan = make_plan_file(topology, (Move("t", 0, (1, 2), (1, 3), 10),), Goals(), Budget(),
                          SolverInfo(SolverStatus.OPTIMAL, 10), "2026-01-01T00:00:00+00:00")
    path = tmp_path / "plan.json"
    write_plan(path, plan)
    return path


def test_execute_refuses_an_existing_journal_before_connecting(tmp_path: Path,
                                                               rebalance: Rebalance) -> None:
    journal = tmp_path / "old.journal"
    journal.write_text(json.dumps({"kind": "run"}) + "\n")
    code, error = rebalance("execute", str(plan_file(tmp_path)), *CONN, "--max-mbps", "5",
                            "--journal", str(journal))
    assert (code, "already exists: resume or cancel that run" in error) == (6, True), error


def test_execute_refuses_a_journal_in_a_missing_directory(tmp_path: Path,
                                                          rebalance: Rebalance) -> None:
    journal = tmp_path / "no-such-dir" / "run.journal"
    code, error = rebalance("execute", str(plan_file(tmp_path)), *CONN, "--max-mbps", "5",
                            "--journal", str(journal))
    assert (code, f"the directory {journal.parent} does not exist" in error) == (2, True), error


def test_binary_command_config_is_an_input_error(tmp_path: Path, rebalance: Rebalance) -> None:
    config = tmp_path / "client.properties"
    config.write_bytes(bytes(range(256)))
    code, error = rebalance("execute", str(plan_file(tmp_path)), *CONN, "--max-mbps", "5",
                            "--journal", str(tmp_path / "run.journal"),
                            "--command-config", str(config))
    assert (code, "is not a text file (not UTF-8)" in error) == (2, True), error


@pytest.mark.parametrize("time_limit", ["0", "nan"])
def test_auto_checks_the_time_limit_at_start(tmp_path: Path, rebalance: Rebalance,
                                             time_limit: str) -> None:
    code, error = rebalance("auto", "--once", *CONN, "--max-mbps", "5", "--window",
                            "daily 00:00-24:00", "--state-dir", str(tmp_path / "state"),
                            "--time-limit", time_limit)
    assert (code, "--time-limit must be a positive number" in error) == (2, True), error


def test_history_export_window_shorter_than_step(tmp_path: Path, rebalance: Rebalance) -> None:
    code, error = rebalance("history", "export", "--prometheus", "http://127.0.0.1:1",
                            "--out", str(tmp_path / "history"), "--since", "1d", "--step", "2d")
    assert (code, "--since 1d is shorter than --step 2d" in error) == (2, True), error


@pytest.mark.parametrize("flags, message", [
    (["--master", "nonsense://x"], "--master 'nonsense://x': give local[*]"),
    (["--master", "local[two]"], "--master 'local[two]'"),
    (["--driver-memory", "lots"], "--driver-memory 'lots': give a size"),
    (["--out", "{history}"], "would overwrite or sit inside the history dataset"),
    (["--out", "{history}/weights.json"], "would overwrite or sit inside the history dataset"),
    (["--out", "{tmp}"], "would overwrite or sit inside the history dataset"),
], ids=["unknown master", "bad local master", "bad memory", "out is the history",
        "out inside the history", "out contains the history"])
def test_weights_flags_are_checked_before_spark(tmp_path: Path, rebalance: Rebalance,
                                                flags: list[str], message: str) -> None:
    history = tmp_path / "history"
    history.mkdir()
    (history / "part-0.parquet").write_bytes(b"PAR1")
    args = [f.replace("{history}", str(history)).replace("{tmp}", str(tmp_path)) for f in flags]
    if "--out" not in args:
        args += ["--out", str(tmp_path / "weights.json")]
    code, error = rebalance("weights", "--history", str(history), *args)
    assert (code, message in error) == (2, True), error
    assert (history / "part-0.parquet").read_bytes() == b"PAR1"


def test_weights_never_deletes_a_directory_given_as_out(tmp_path: Path,
                                                        rebalance: Rebalance) -> None:
    """--out naming a directory of other files (a home or project directory by mistake) is
    refused before Spark starts; the directory and its files stay."""
    history = tmp_path / "history"
    history.mkdir()
    (history / "part-0.parquet").write_bytes(b"PAR1")
    mine = tmp_path / "project"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    code, error = rebalance("weights", "--history", str(history), "--out", str(mine))
    assert (code, "is a directory with other files in it" in error) == (2, True), error
    assert (mine / "notes.txt").read_text() == "keep me"


def test_an_earlier_spark_output_directory_may_be_replaced(tmp_path: Path) -> None:
    from spark_jobs.weights_io import replaceable_output

    out = tmp_path / "weights.parquet"
    assert replaceable_output(out)  # absent
    out.mkdir()
    (out / "part-00000-abc.snappy.parquet").write_bytes(b"x")
    (out / "_SUCCESS").write_bytes(b"")
    (out / ".part-00000-abc.snappy.parquet.crc").write_bytes(b"")
    assert replaceable_output(out)
    (out / "README").write_text("mine")
    assert not replaceable_output(out)


def test_sandbox_up_refuses_an_unknown_metric_naming_before_touching_the_dir(
        tmp_path: Path, rebalance: Rebalance) -> None:
    target = tmp_path / "sbx"
    code, error = rebalance("sandbox", "up", "--dir", str(target), "--metric-names", "bogus")
    assert (code, "expected one of sandbox, strimzi" in error) == (2, True), error
    assert not target.exists()


def test_plan_refuses_a_request_tolerance_out_of_range_and_writes_nothing(
        tmp_path: Path, rebalance: Rebalance) -> None:
    out = tmp_path / "plan.json"
    code, error = rebalance("plan", "--snapshot", "examples/cluster.json", "--request-balance",
                            "1.5", "--out", str(out))
    assert (code, "--request-balance must be between 0 and 1" in error) == (2, True), error
    assert not out.exists()


@pytest.mark.parametrize(("args", "first"), [
    (["plan", "--horizon", "0x10", "--snapshot", "x.json", "--out", "p.json"],
     "error: Invalid value for '--horizon'"),
    (["plann"], "error: No such command 'plann'. Did you mean 'plan'?"),
    (["--bogus"], "error: No such option: --bogus"),
    (["sandbox", "up", "--brokers", "0"], "error: Invalid value for '--brokers'"),
])
def test_a_bad_flag_or_command_says_the_error_first(rebalance_main: Any, args: list[str],
                                                    first: str) -> None:
    """As every other error: the cause on the first line (Click led with its usage line and
    said the error three lines down), then where the help is; exit 2."""
    result = rebalance_main(*args)
    assert result.code == 2
    assert result.err_lines[0].startswith(first), result.err
    assert result.err_lines[1].startswith("Try 'rebalance"), result.err
