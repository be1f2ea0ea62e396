#!/usr/bin/env bash
# The whole test suite on this machine: installs what it needs (scripts/install.sh), then the
# integration tests against a real local Kafka + Prometheus sandbox and, beside them, ruff, mypy
# and the unit tests; then the few that must run alone. A lint or type error, a skipped
# integration test, or no test collected, is a failure.
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
# The compute lane (below) runs in the background in its own process group.
compute_pid=""
stop_compute_lane() {
    if [ -n "$compute_pid" ] && kill -0 "$compute_pid" 2>/dev/null; then
        kill -- "-$compute_pid" 2>/dev/null || true
        wait "$compute_pid" 2>/dev/null || true
    fi
}
trap 'stop_compute_lane; cleanup' EXIT

# Two lanes at once. The sandbox lane: the integration tests that use a Kafka sandbox, one at a
# time (they share one sandbox, or start their own, and never two at once). They mostly wait
# (on copies held at a cap, on Prometheus windows), so beside them the compute lane runs the
# lint (ruff), types (mypy), then the unit tests and the Spark standalone-cluster test (no
# Kafka), on every core but at a lower priority, so the sandbox and the executors under test get
# the CPU whenever they ask for it.
# Last, alone, the few unit tests whose wall-clock budget decides what they assert (serial).
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

SPARK_CLUSTER_TEST=tests/integration/test_spark_cluster.py
COMPUTE_LOG="$TEST_TMP/compute-lane.log"

echo "[test] compute lane started (ruff, mypy, unit tests and the Spark cluster test; log below)"
set -m  # the lane gets its own process group, so a failed run stops all of it
(
    renice -n 10 -p "$BASHPID" >/dev/null
    echo "[test] ruff"
    .venv/bin/ruff check .
    echo "[test] mypy"
    .venv/bin/mypy
    REBALANCE_REQUIRE_INTEGRATION=1 run_pytest unit tests/unit "$SPARK_CLUSTER_TEST" \
        -m "not serial" -n "${REBALANCE_TEST_WORKERS:-auto}"
) > "$COMPUTE_LOG" 2>&1 &
compute_pid=$!
set +m

echo "[test] pytest: sandbox lane (real Kafka and Prometheus)"
sandbox_rc=0
REBALANCE_REQUIRE_INTEGRATION=1 run_pytest integration tests/integration \
    --ignore "$SPARK_CLUSTER_TEST" || sandbox_rc=$?
compute_rc=0
wait "$compute_pid" || compute_rc=$?
compute_pid=""
echo "[test] compute lane output:"
cat "$COMPUTE_LOG"
if [ "$sandbox_rc" -ne 0 ] || [ "$compute_rc" -ne 0 ]; then
    echo "[test] failed: sandbox lane exit $sandbox_rc, compute lane exit $compute_rc" >&2
    exit 1
fi
# What a solver proves or repeats within its wall-clock budget needs the machine to itself.
echo "[test] pytest: unit tests that run alone"
run_pytest unit-serial tests/unit -m serial
