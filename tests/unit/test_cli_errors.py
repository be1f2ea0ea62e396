"""The one error handler (`cli.main`): every failure is one line on stderr with a documented
exit code; the traceback only with --debug or REBALANCE_DEBUG; notes come after the error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import cli
from kafka_rebalance.core.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
CAP = {"disk_bytes": 1000, "net_in_bytes_per_sec": 1000, "net_out_bytes_per_sec": 1000}


def snapshot(path: Path, **extra: Any) -> Path:
    doc = {"version": 1, "brokers": [{"id": 1, "rack": "a", "capacity": CAP},
                                     {"id": 2, "rack": "b", "capacity": CAP}],
           "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2], "size_bytes": 10}],
           **extra}
    path.write_text(json.dumps(doc))
    return path


def raising(exc: BaseException) -> Callable[..., Any]:
    def fail(*args: object, **kwargs: object) -> Any:
        raise exc
    return fail


UNEXPECTED = [
    RecursionError("maximum recursion depth exceeded"),
    OverflowError("int too large to convert to float"),
    UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"),
    UnicodeError("label too long"),
    KeyError("brokers"),
    ValueError("first line [/]x[bold]\nsecond line"),
    MemoryError(),
]


@pytest.mark.parametrize("exc", UNEXPECTED, ids=lambda e: type(e).__name__)
def test_an_unexpected_exception_is_one_line_and_exit_70(
        tmp_path: Path, rebalance_main: Any, monkeypatch: pytest.MonkeyPatch,
        exc: BaseException) -> None:
    monkeypatch.setattr(cli, "read_snapshot", raising(exc))
    path = snapshot(tmp_path / "snap.json")
    before = path.read_bytes()
    result = rebalance_main("show", str(path))
    assert result.code == cli.UNEXPECTED_EXIT_CODE == 70
    assert len(result.err_lines) == 1, result.err
    line = result.err_lines[0]
    assert line.startswith(f"error: unexpected {type(exc).__name__}"), line
    assert "rerun with --debug" in line and "Traceback" not in result.err
    assert path.read_bytes() == before


def test_the_message_is_printed_as_written(tmp_path: Path, rebalance_main: Any,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "read_snapshot", raising(ValueError("[/]x[bold] and [red]y")))
    result = rebalance_main("show", str(snapshot(tmp_path / "snap.json")))
    assert "ValueError: [/]x[bold] and [red]y (" in result.err_lines[0]


@pytest.mark.parametrize("how", ["flag", "env"])
def test_debug_adds_the_traceback(tmp_path: Path, rebalance_main: Any,
                                  monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    monkeypatch.setattr(cli, "read_snapshot", raising(OverflowError("too big")))
    args = ["show", str(snapshot(tmp_path / "snap.json"))]
    if how == "env":
        monkeypatch.setenv("REBALANCE_DEBUG", "1")
    result = rebalance_main(*(["--debug", *args] if how == "flag" else args))
    assert result.code == 70
    assert result.err.startswith("Traceback (most recent call last):")
    assert result.err_lines[-1] == ("error: unexpected OverflowError: too big (an internal "
                                    "error or an input the tool does not handle)")


def test_debug_shows_the_traceback_of_a_typed_error_too(tmp_path: Path,
                                                        rebalance_main: Any) -> None:
    result = rebalance_main("--debug", "show", str(tmp_path / "missing.json"))
    assert result.code == InputError.exit_code
    assert "Traceback" in result.err and result.err_lines[-1].startswith("error: cannot read")


def test_a_deeply_nested_snapshot_gives_no_traceback(tmp_path: Path,
                                                     rebalance_main: Any) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    result = rebalance_main("show", str(path))
    assert result.code != 0
    assert len(result.err_lines) == 1 and result.err_lines[0].startswith("error: "), result.err


def test_a_typed_error_with_markup_is_printed_as_written(tmp_path: Path,
                                                         rebalance_main: Any) -> None:
    missing = tmp_path / "[/]x[bold]"
    result = rebalance_main("show", str(missing))
    assert result.code == 2
    assert result.err_lines == [f"error: cannot read snapshot {missing}: No such file or "
                                "directory"]


def test_the_error_line_comes_before_the_notes(tmp_path: Path, rebalance_main: Any) -> None:
    """A refused plan: the error first, then the snapshot's notes (printed as written)."""
    path = snapshot(tmp_path / "snap.json", notes=["[bold]first note", "second [/] note"])
    result = rebalance_main("plan", "--snapshot", str(path), "--add-broker", "9",
                            "--out", str(tmp_path / "plan.json"))
    assert result.code == 2
    assert result.err_lines[0].startswith("error: --add-broker 9: no broker 9 in the cluster")
    assert result.err_lines[1:] == ["note: [bold]first note", "note: second [/] note"]
    assert not (tmp_path / "plan.json").exists()


def test_notes_of_a_run_that_goes_on_are_printed(tmp_path: Path, rebalance_main: Any) -> None:
    path = snapshot(tmp_path / "snap.json", notes=["[bold]first note"])
    result = rebalance_main("plan", "--snapshot", str(path), "--out",
                            str(tmp_path / "plan.json"), "--time-limit", "5")
    assert result.code == 0, result.err
    assert result.err_lines == ["note: [bold]first note"]


def test_help_documents_every_exit_code() -> None:
    result = subprocess.run([sys.executable, "-c", "import cli; cli.main()", "--help"],
                            capture_output=True, text=True, timeout=60, cwd=ROOT,
                            env={**os.environ, "COLUMNS": "100"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "Exit codes" in line)
    table = [line.split() for line in lines[start + 1:start + 12]]
    assert [row[0] for row in table] == ["0", "1", "2", "3", "4", "5", "6", "7", "8", "70",
                                         "130"]
    assert table[2][1:4] == ["bad", "input", "(a"] and table[9][1:] == ["unexpected",
                                                                      "internal", "error"]
    assert "--debug" in result.stdout


def test_the_console_script_gives_no_traceback(tmp_path: Path) -> None:
    """The real entry point, as a user runs it."""
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    result = subprocess.run([sys.executable, "-c", "import cli; cli.main()", "show", str(path)],
                            capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
