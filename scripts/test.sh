#!/usr/bin/env bash
# The whole test suite on this machine: installs what it needs (scripts/install.sh), then
# ruff, mypy, and pytest over tests/ -- unit AND integration tests against a real local
# Kafka + Prometheus sandbox. A skipped integration test, or no test collected, is a failure.
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
echo "[test] pytest (unit + integration)"
start=$(date +%s)
rc=0
REBALANCE_REQUIRE_INTEGRATION=1 .venv/bin/pytest -q tests --basetemp "$TEST_TMP/pytest" \
    --timeout 900 --durations 15 || rc=$?
echo "[test] pytest finished in $(( $(date +%s) - start ))s with exit code $rc"
if [ "$rc" -eq 5 ]; then
    echo "[test] no tests were collected: failing" >&2
    exit 1
fi
exit "$rc"
