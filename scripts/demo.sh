#!/usr/bin/env bash
# Installs what it needs, then runs the main job: a plan on the bundled example, then the whole
# loop on a local sandbox cluster (fill it, add brokers, plan, execute under a throttle, status,
# the HTML report), in a few minutes. Every artefact lands in out/; the sandbox is stopped and
# its data deleted at the end, whatever happens.
#
#   bash scripts/demo.sh            # the whole loop
#   bash scripts/demo.sh --offline  # the plan on the example only: no Kafka, no JDK needed
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OFFLINE=0
[[ "${1:-}" == "--offline" ]] && OFFLINE=1

bash scripts/install.sh
REBALANCE=(.venv/bin/rebalance)
mkdir -p out
step() { printf '\n=== %s\n' "$*"; }

step "1. Plan offline: add brokers 13, 14, 15 to the example cluster (examples/cluster.json)"
"${REBALANCE[@]}" plan --snapshot examples/cluster.json --capacities examples/capacities.yaml \
    --add-broker 13,14,15 --out out/plan.json --html out/plan.html --force
if [[ "$OFFLINE" == 1 ]]; then
    printf '\nWrote out/plan.json and out/plan.html (open it in a browser).\n'
    exit 0
fi

SANDBOX="$ROOT/out/sandbox"
BASE_PORT="${DEMO_BASE_PORT:-39090}"
stop_sandbox() {
    step "8. Stop the sandbox and delete its data"
    "${REBALANCE[@]}" sandbox down --purge --dir "$SANDBOX" || true
}
step "2. Start a local cluster: 4 Kafka brokers on 2 racks (KRaft) and Prometheus scraping them"
"${REBALANCE[@]}" sandbox up --brokers 4 --racks 2 --dir "$SANDBOX" --base-port "$BASE_PORT" \
    --force >/dev/null
trap stop_sandbox EXIT
INFO="$("${REBALANCE[@]}" sandbox status --dir "$SANDBOX" --json)"
BOOTSTRAP="$(printf '%s' "$INFO" | .venv/bin/python -c 'import json,sys; print(json.load(sys.stdin)["bootstrap"])')"
PROMETHEUS="$(printf '%s' "$INFO" | .venv/bin/python -c 'import json,sys; print(json.load(sys.stdin)["prometheus_url"])')"
echo "bootstrap $BOOTSTRAP, prometheus $PROMETHEUS"

step "3. Fill it (two topics, 120 MB), then add one broker on each rack: they hold nothing"
"${REBALANCE[@]}" sandbox produce orders --mb 80 --partitions 8 --replication-factor 2 \
    --dir "$SANDBOX"
"${REBALANCE[@]}" sandbox produce clicks --mb 40 --partitions 4 --replication-factor 2 \
    --dir "$SANDBOX"
"${REBALANCE[@]}" sandbox add-broker --rack a --dir "$SANDBOX"
"${REBALANCE[@]}" sandbox add-broker --rack b --dir "$SANDBOX"

step "4. Snapshot the live cluster and plan filling the new brokers 5 and 6"
"${REBALANCE[@]}" snapshot --bootstrap "$BOOTSTRAP" --prometheus "$PROMETHEUS" \
    --capacities examples/sandbox-capacities.yaml --out out/live-snapshot.json --force
"${REBALANCE[@]}" plan --snapshot out/live-snapshot.json --add-broker 5,6 --max-mbps 10 \
    --out out/live-plan.json --force

step "5. Execute it under a 10 MB/s replication throttle, moves side by side"
rm -f out/live-plan.json.journal
"${REBALANCE[@]}" execute out/live-plan.json --bootstrap "$BOOTSTRAP" \
    --prometheus "$PROMETHEUS" --max-mbps 10 --concurrency auto \
    --capacities examples/sandbox-capacities.yaml

step "6. The run's status, from its journal (works while a run is going too)"
"${REBALANCE[@]}" status out/live-plan.json --html out/run.html --prometheus "$PROMETHEUS"

step "7. Where everything is"
cat <<EOF
  out/plan.json, out/plan.html        the offline plan on the example and its report
  out/live-snapshot.json              the sandbox cluster as snapshot read it
  out/live-plan.json                  the plan that ran (review it: rebalance diff out/live-plan.json)
  out/live-plan.json.journal          the run's journal (rebalance status out/live-plan.json)
  out/run.html                        the run's report: moves over time, rates against the cap
EOF
