"""Integration fixtures: a real Kafka (KRaft) + Prometheus sandbox shared by the whole session.

`sandbox` reuses a running sandbox when `REBALANCE_SANDBOX_DIR` points at one (and leaves it
running); otherwise it starts one in a temp dir on free ports and always stops it at the end.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_rebalance.sandbox import cluster
from kafka_rebalance.sandbox.state import SandboxInfo, read_state
from tests.integration import executor_support, kafka_topics
from topology.kafka_admin import KafkaClusterAdmin

SESSION_BROKERS = 4
SESSION_RACKS = 2
# Room for brokers the tests add with kafka_rebalance.sandbox.cluster.add_broker.
SPARE_BROKER_IDS = 8


def _external_sandbox() -> SandboxInfo | None:
    env = os.environ.get("REBALANCE_SANDBOX_DIR")
    if not env:
        return None
    info = read_state(Path(env).resolve())
    if info is None or not all(cluster.process_alive(info).values()):
        return None
    return info


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxInfo]:
    """A running 4-broker, 2-rack sandbox (racks a, b) with Prometheus scraping every broker."""
    external = _external_sandbox()
    if external is not None:
        yield external
        return
    sandbox_dir = tmp_path_factory.mktemp("sandbox")
    base = cluster.free_base_port(31090, SESSION_BROKERS + SPARE_BROKER_IDS)
    try:
        result = cluster.up(sandbox_dir, brokers=SESSION_BROKERS, racks=SESSION_RACKS,
                            base_port=base,
                            quota_window_samples=executor_support.QUOTA_WINDOW_SAMPLES)
        yield result.info
    finally:
        cluster.down(sandbox_dir)


@pytest.fixture(scope="module", autouse=True)
def _delete_created_topics() -> Iterator[None]:
    """Topics made with kafka_topics.create_topic are deleted when their module ends."""
    yield
    kafka_topics.delete_created_topics()


@pytest.fixture
def admin(sandbox: SandboxInfo) -> Iterator[KafkaClusterAdmin]:
    """The adapter on the sandbox, for one test."""
    client = KafkaClusterAdmin(sandbox.bootstrap)
    yield client
    client.close()


@pytest.fixture
def drop_exec_topics(sandbox: SandboxInfo) -> Iterator[None]:
    """The executor tests' topics (exec-*) are deleted after each test."""
    yield
    executor_support.drop_test_topics(sandbox)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Iterator[None]:
    """With REBALANCE_REQUIRE_INTEGRATION=1 (scripts/test.sh, CI) a skipped integration test
    fails: CI must exercise the real services, not skip them."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()  # type: ignore[attr-defined]
    required = os.environ.get("REBALANCE_REQUIRE_INTEGRATION") == "1"
    if (required and report.skipped and not hasattr(report, "wasxfail")
            and item.get_closest_marker("integration") is not None):
        report.outcome = "failed"
        report.longrepr = f"integration test skipped while required: {report.longrepr}"
