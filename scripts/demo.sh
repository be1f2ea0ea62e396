#!/usr/bin/env bash
# Installs what it needs, then runs the main job on the bundled example.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/install.sh
.venv/bin/rebalance show examples/cluster.json --capacities examples/capacities.yaml
