#!/usr/bin/env bash
# Install Yelp's kafka-utils (PyPI) into its own venv for the planner benchmark's peer.
#
#   bash benchmarks/peers/kafka_utils/setup.sh [VENV]     # default: .peers/kafka-utils
#
# kafka-utils pins kafka-python below 1.5, which the project's own venv cannot hold beside
# the kafka-python it uses, so the peer gets a venv of its own. The benchmark runs this
# directory's driver.py with that venv's python (planner_bench --kafka-utils VENV/bin/python).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$(realpath -m "${1:-$here/../../../.peers/kafka-utils}")"
version="4.1.0"
python="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet "kafka-utils==$version"
"$venv/bin/python" "$here/driver.py" --check
echo "kafka-utils $version in $venv; run the benchmark with --kafka-utils $venv/bin/python"
