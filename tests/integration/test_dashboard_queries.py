"""Every query of the Grafana dashboard (dashboards/kafka-rebalance.json) returns data from the
sandbox's Prometheus during a small run, and `status --html` draws that run.

The sandbox's Prometheus scrapes the brokers only; for the run, a scrape job for the executor's
own metrics port (`execute --metrics-port`) is added to its prometheus.yml and Prometheus is
reloaded (SIGHUP, as the sandbox does when a broker joins); the file is put back afterwards.
Template variables are filled as an operator of the sandbox would: the gate's 10s rate window
and every broker. Each query runs as a range query over the run, so a series that existed at
any time of it (the copied bytes of the move in flight) counts.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kafka_rebalance.report.dashboard import queries
from kafka_rebalance.sandbox import ready
from kafka_rebalance.sandbox.state import SandboxInfo
from tests.integration.executor_support import (
    ROOT,
    create_topic,
    execute_args,
    fill,
    has_data,
    layout,
    make_plan,
    range_query,
    rebalance,
    start_rebalance,
)
from tests.integration.kafka_topics import free_port

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("drop_exec_topics")]

DASHBOARD = ROOT / "dashboards" / "kafka-rebalance.json"
EXECUTOR_JOB = "kafka-rebalance-executor"


@pytest.fixture
def executor_scraped(sandbox: SandboxInfo) -> Iterator[int]:
    """A free port for the executor's metrics, scraped by the sandbox's Prometheus every
    second while the test runs; the sandbox's own scrape config is restored afterwards."""
    config_path = sandbox.dir / "prometheus.yml"
    original = config_path.read_text()
    port = free_port()
    config = yaml.safe_load(original)
    config["scrape_configs"].append({"job_name": EXECUTOR_JOB, "scrape_interval": "1s",
                                     "scrape_timeout": "1s",
                                     "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]})
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    os.kill(sandbox.prometheus_pid, signal.SIGHUP)
    try:
        yield port
    finally:
        config_path.write_text(original)
        os.kill(sandbox.prometheus_pid, signal.SIGHUP)


def test_every_dashboard_query_returns_data_during_a_run(
        sandbox: SandboxInfo, executor_scraped: int, tmp_path: Path) -> None:
    model = json.loads(DASHBOARD.read_text())
    checks = [(title, fill(expr)) for title, expr in queries(model)]
    assert len(checks) >= 15
    lay = layout(sandbox)
    topic = create_topic(sandbox, "exec-dash", 2, [lay.leader, lay.follower])
    plan_path = tmp_path / "plan.json"
    make_plan(sandbox, plan_path, [(topic, p, (lay.leader, lay.spare)) for p in range(2)])
    journal = tmp_path / "plan.json.journal"
    start = time.time()
    # a produce p99 threshold every broker that served produce requests breaches: the SLO
    # guard's panels get data (the run waits the brokers' quota window, so that copies run at
    # the cap for the guard's steps even when an earlier test just copied into the same broker)
    proc = start_rebalance(tmp_path / "execute.log", *execute_args(
        sandbox, plan_path, journal, "--metrics-port", str(executor_scraped),
        "--slo-produce-p99-ms", "0.001", "--slo-absolute", "--slo-interval", "2",
        calm_slo=False))
    try:
        ready.wait_for_targets(sandbox.prometheus_url, [executor_scraped], 60)
        assert proc.wait(300) == 0, (tmp_path / "execute.log").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    time.sleep(3)  # the last scrapes and rule windows catch up
    end = time.time()
    empty = [(title, expr) for title, expr in checks
             if not has_data(range_query(sandbox, expr, start - 5, end))]
    assert not empty, "dashboard queries without data:\n" + "\n".join(
        f"- {title}: {expr}" for title, expr in empty)

    # the same run as a page: the journal, the plan beside it and Prometheus' copy rates
    page = tmp_path / "status.html"
    shown = rebalance("status", str(plan_path), "--html", str(page), "--prometheus",
                      sandbox.prometheus_url)
    assert shown.returncode == 0, shown.stderr
    html = page.read_text()
    for chart in ("chart-run", "chart-rates", "chart-util-disk", "chart-flows"):
        assert f'<svg id="{chart}"' in html, chart
    assert "reassignment bytes in (Prometheus)" in html, "no measured copy rate on the page"
    assert "Prometheus did not answer" not in html
