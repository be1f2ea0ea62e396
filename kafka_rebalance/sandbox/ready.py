"""Readiness probes of the sandbox: brokers registered in metadata, Prometheus targets up.

Each probe polls until a deadline and fails with a SandboxError saying what is still missing.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Collection

from kafka_rebalance.core.errors import SandboxError

POLL_S = 0.5


def registered_brokers(bootstrap: str, timeout_s: float = 2.0) -> dict[int, str | None]:
    """Broker id -> rack as the cluster metadata reports them right now ({} when unreachable)."""
    from confluent_kafka.admin import AdminClient  # here, not at import: `rebalance` starts fast

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0,
                         "socket.connection.setup.timeout.ms": 2000})
    try:
        description = admin.describe_cluster(request_timeout=timeout_s).result(timeout=timeout_s)
    except Exception:  # not ready yet: any client error means "poll again"
        return {}
    return {int(node.id): node.rack for node in description.nodes}


def prometheus_targets(prometheus_url: str) -> dict[str, str]:
    """Scrape URL -> health ("up", "down", "unknown") of Prometheus' active targets."""
    try:
        with urllib.request.urlopen(f"{prometheus_url}/api/v1/targets?state=active",
                                    timeout=2) as response:
            body = json.load(response)
    except (urllib.error.URLError, OSError, ValueError):
        return {}
    targets = body.get("data", {}).get("activeTargets", [])
    return {str(t.get("scrapeUrl")): str(t.get("health")) for t in targets}


def wait_until(
    condition: Callable[[], bool], timeout_s: float, what: Callable[[], str],
    check_alive: Callable[[], None] | None = None,
) -> None:
    """Poll condition until true; on timeout raise with the description of what is missing."""
    deadline = time.monotonic() + timeout_s
    while True:
        if check_alive is not None:
            check_alive()
        if condition():
            return
        if time.monotonic() > deadline:
            raise SandboxError(f"sandbox not ready after {timeout_s:.0f}s: {what()}")
        time.sleep(POLL_S)


def wait_for_brokers(
    bootstrap: str, expected: dict[int, str], timeout_s: float,
    check_alive: Callable[[], None] | None = None,
) -> None:
    """Wait until every expected broker id is registered with its rack."""
    seen: dict[int, str | None] = {}

    def ready() -> bool:
        nonlocal seen
        seen = registered_brokers(bootstrap)
        return all(seen.get(bid) == rack for bid, rack in expected.items())

    def missing() -> str:
        absent = sorted(set(expected) - set(seen))
        return f"brokers {absent} not registered (metadata shows {sorted(seen)})"

    wait_until(ready, timeout_s, missing, check_alive)


def wait_for_targets(
    prometheus_url: str, metrics_ports: Collection[int], timeout_s: float,
    check_alive: Callable[[], None] | None = None,
) -> None:
    """Wait until Prometheus scrapes every exporter port on 127.0.0.1 with health "up"."""
    wait_for_scrapes(prometheus_url, [f"127.0.0.1:{port}" for port in metrics_ports],
                     timeout_s, check_alive)


def wait_for_scrapes(
    prometheus_url: str, addresses: Collection[str], timeout_s: float,
    check_alive: Callable[[], None] | None = None,
) -> None:
    """Wait until Prometheus scrapes every exporter at "HOST:PORT" with health "up"."""
    health: dict[str, str] = {}
    wanted = {f"http://{address}/metrics" for address in addresses}

    def ready() -> bool:
        nonlocal health
        health = prometheus_targets(prometheus_url)
        return all(health.get(url) == "up" for url in wanted)

    def missing() -> str:
        down = sorted(url for url in wanted if health.get(url) != "up")
        return f"Prometheus targets not up: {down}"

    wait_until(ready, timeout_s, missing, check_alive)
