#!/usr/bin/env bash
# Installs what it needs, then runs the main job on the bundled example.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/install.sh
# The main job: plan adding the three new brokers (13, 14, 15) of the example cluster and show
# the dry-run review. The plan file lands in out/plan.json (`rebalance diff out/plan.json`).
mkdir -p out
.venv/bin/rebalance plan --snapshot examples/cluster.json --capacities examples/capacities.yaml \
    --add-broker 13 --add-broker 14 --add-broker 15 --out out/plan.json
