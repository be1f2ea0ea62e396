#!/usr/bin/env bash
# Idempotent set-up of a fresh machine (Debian 12, Python 3.11, JDK 17, Maven 3.8, root):
# the Python venv with the project, Prometheus and Chromium (Debian packages) and the Kafka
# sandbox jars.
# Every step is skipped when its result is already there.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

KAFKA_VERSION="4.3.1"
JAR_CACHE="${REBALANCE_JAR_CACHE:-$HOME/.cache/kafka-rebalance/jars}/$KAFKA_VERSION"

log() { printf '[install] %s\n' "$*"; }

# 1. Python venv and the project (editable) with its dev extra.
PYTHON="${PYTHON:-$(command -v python3.11 || command -v python3)}"
if [ ! -x .venv/bin/python ]; then
    log "creating .venv with $PYTHON"
    "$PYTHON" -m venv .venv
fi
if ! .venv/bin/python -c 'import cli, typer, confluent_kafka' >/dev/null 2>&1 \
        || [ pyproject.toml -nt .venv/.installed ]; then
    log "installing the project and dev tools into .venv"
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e ".[dev]"
    touch .venv/.installed
else
    log ".venv is up to date"
fi

# 2. Prometheus from Debian, only when missing.
if ! command -v prometheus >/dev/null 2>&1; then
    log "installing prometheus (apt)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends prometheus >/dev/null
    # The package starts a system service on :9090; the sandbox runs its own instance.
    if command -v systemctl >/dev/null 2>&1; then
        systemctl disable --now prometheus >/dev/null 2>&1 || true
    fi
else
    log "prometheus present: $(command -v prometheus)"
fi

# 2b. Chromium and its WebDriver from Debian, only when missing: the browser test opens the
# HTML reports in it (selenium is given /usr/bin/chromedriver, so nothing else is downloaded).
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
    log "installing chromium and chromium-driver (apt)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
else
    log "chromium present: /usr/bin/chromium, /usr/bin/chromedriver"
fi

# 3. Kafka jars + JMX exporter agent from Maven Central into the jar cache.
for tool in java mvn; do
    command -v "$tool" >/dev/null 2>&1 || { echo "install: $tool is not on PATH" >&2; exit 1; }
done
if .venv/bin/python -c "import sys; from kafka_rebalance.sandbox.jars import jar_dir, jars_present; sys.exit(not jars_present(jar_dir()))"; then
    log "kafka jars cached in $JAR_CACHE"
else
    log "fetching kafka $KAFKA_VERSION jars with maven into $JAR_CACHE"
    .venv/bin/python -m kafka_rebalance.sandbox.jars --fetch
fi
log "done"
