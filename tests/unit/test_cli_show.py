"""`rebalance show` through the real console entry: output, exit codes, no stack traces."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

import cli
from kafka_rebalance.core.errors import InputError


def run_cli(*args: str, columns: int | None = None) -> subprocess.CompletedProcess[str]:
    env = None if columns is None else {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run(
        [sys.executable, "-c", "import cli; cli.main()", *args],
        capture_output=True, text=True, timeout=60,
        cwd=Path(__file__).resolve().parents[2], env=env,
    )


def snapshot(tmp_path: Path, **broker_overrides: object) -> Path:
    cap = {"disk_bytes": 1000, "net_in_bytes_per_sec": 100, "net_out_bytes_per_sec": 100}
    doc = {
        "version": 1,
        "brokers": [{"id": 1, "rack": "a", "capacity": cap}, {"id": 2, "rack": "b", "capacity": cap,
                                                             **broker_overrides}],
        "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2], "size_bytes": 100,
                        "bytes_in_per_sec": 10, "bytes_out_per_sec": 5}],
    }
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(doc))
    return path


def test_show_prints_brokers_and_spread(tmp_path: Path) -> None:
    result = run_cli("show", str(snapshot(tmp_path)))
    assert result.returncode == 0, result.stderr
    assert "Balance" in result.stdout
    assert "max/avg" in result.stdout
    assert "10.0%" in result.stdout  # disk 100 / 1000 on both brokers


def test_bad_snapshot_is_one_line_and_exit_code(tmp_path: Path) -> None:
    result = run_cli("show", str(snapshot(tmp_path, id=1)))
    assert result.returncode == InputError.exit_code
    assert "broker 1 is listed more than once" in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args", [["show"], ["show", "x", "--bogus"]])
def test_usage_errors_exit_2(args: list[str]) -> None:
    result = run_cli(*args)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


def test_help_lists_every_command_with_its_summary() -> None:
    result = run_cli("--help", columns=250)  # wide: one row per command, nothing wrapped
    assert result.returncode == 0, result.stderr
    rows = dict(re.findall(r"^│ ([a-z][\w-]*) {2,}(\S.*?)\s*│$", result.stdout, re.MULTILINE))
    root = typer.main.get_command(cli.app)
    assert isinstance(root, cli.RebalanceGroup)
    assert sorted(rows) == sorted(root.commands)
    assert all(rows.values())
    assert cli.show.__doc__ is not None
    assert rows["show"] == cli.show.__doc__.splitlines()[0]
