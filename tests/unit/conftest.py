"""Shared fixtures of the unit tests that drive the `rebalance` CLI."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from typer.testing import CliRunner

import cli
from topology.errors import RebalanceError

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
