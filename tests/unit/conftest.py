"""Shared fixtures of the unit tests that drive the `rebalance` CLI."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

# pytest-xdist's workers inherit COLUMNS=80 from their launcher; the tests read the output as a
# pipe without COLUMNS gets it (the full width), on one process or several. Tests of other
# widths set COLUMNS themselves. Before `import cli`: its consoles read the width when made.
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)

import pytest
from typer.testing import CliRunner

import cli
from kafka_rebalance.core.errors import RebalanceError

Rebalance = Callable[..., tuple[int, str]]


@pytest.fixture
def rebalance() -> Rebalance:
    """Run `rebalance ARGS...` in-process; (exit code, error message or output) as `cli.main`
    reports them. Any exception that is not a RebalanceError propagates: it would be a stack
    trace for the user."""
    runner = CliRunner()

    def run(*args: str) -> tuple[int, str]:
        result = runner.invoke(cli.app, list(args))
        exc = result.exception
        if isinstance(exc, RebalanceError):
            return exc.exit_code, str(exc)
        if exc is not None and not isinstance(exc, SystemExit):
            raise exc
        return result.exit_code, result.output

    return run


@dataclass(frozen=True)
class MainResult:
    """What a user sees from `rebalance ARGS...` run through `cli.main` (the one handler)."""

    code: int
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.strip()]


RebalanceMain = Callable[..., MainResult]


@pytest.fixture
def rebalance_main(monkeypatch: pytest.MonkeyPatch,
                   capsys: pytest.CaptureFixture[str]) -> RebalanceMain:
    """Run `rebalance ARGS...` through `cli.main` in-process: exit code, stdout and stderr
    exactly as the console script prints them (the error line, notes, tracebacks)."""
    monkeypatch.delenv("REBALANCE_DEBUG", raising=False)
    monkeypatch.setattr(cli.OPTIONS, "debug", False)

    def run(*args: str) -> MainResult:
        capsys.readouterr()
        monkeypatch.setattr(sys, "argv", ["rebalance", *args])
        with pytest.raises(SystemExit) as exit_info:
            cli.main()
        captured = capsys.readouterr()
        code = exit_info.value.code
        return MainResult(code if isinstance(code, int) else 1, captured.out, captured.err)

    return run
