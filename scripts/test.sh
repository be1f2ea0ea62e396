#!/usr/bin/env bash
# The whole test suite on this machine: installs what it needs (scripts/install.sh), then
# ruff, mypy, then pytest: the integration tests against a real local Kafka + Prometheus
# sandbox, then the unit tests. A skipped integration test, or no test collected, is a failure.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/install.sh

# Every sandbox the tests start lives under this dir; whatever happens, none survives the run.
TEST_TMP="${REBALANCE_TEST_TMP:-$(mktemp -d -t kafka-rebalance-tests.XXXXXX)}"
mkdir -p "$TEST_TMP"
cleanup() {
    .venv/bin/python - "$TEST_TMP" <<'PY' || true
import sys
from pathlib import Path
from kafka_rebalance.sandbox.cluster import down
left = down(Path(sys.argv[1]))
if left:
    print(f"[test] stopped leftover sandbox processes: {left}", file=sys.stderr)
PY
}
trap cleanup EXIT

echo "[test] ruff"
.venv/bin/ruff check .
echo "[test] mypy"
.venv/bin/mypy
# Integration tests first and alone: they share one real sandbox and measure rates on it, so
# nothing else may load the machine meanwhile. Then the unit tests, on every core (pytest-xdist),
# and last the few that must have the machine to themselves (marked serial).
run_pytest() {
    local what="$1"; shift
    local start rc=0
    start=$(date +%s)
    .venv/bin/pytest -q --basetemp "$TEST_TMP/pytest-$what" --timeout 900 --durations 40 "$@" \
        || rc=$?
    echo "[test] $what tests finished in $(( $(date +%s) - start ))s with exit code $rc"
    if [ "$rc" -eq 5 ]; then
        echo "[test] no $what tests were collected: failing" >&2
        return 1
    fi
    return "$rc"
}

echo "[test] pytest: integration tests (real Kafka, Prometheus and Spark)"
REBALANCE_REQUIRE_INTEGRATION=1 run_pytest integration tests/integration
echo "[test] pytest: unit tests"
run_pytest unit tests/unit -m "not serial" -n "${REBALANCE_TEST_WORKERS:-auto}"
# What a solver proves or repeats within its wall-clock budget needs the machine to itself.
echo "[test] pytest: unit tests that run alone"
run_pytest unit-serial tests/unit -m serial
