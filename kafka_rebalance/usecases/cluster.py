"""The real cluster behind the use cases: the executor's ports, the run lease, the live topology.

Client libraries (Kafka, Prometheus) are imported inside the functions that open them, so that
`rebalance` starts fast for the commands that never contact a cluster.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from executor.clock import SystemClock
from executor.config import Ports
from kafka_rebalance.core.errors import LeaseLost, RebalanceError
from topology.capacities import CAPACITY_KEYS, Capacities, read_capacities
from topology.model import Topology

if TYPE_CHECKING:
    from executor.lease import LeaseHold
    from executor.readings import GateQueries


@dataclass(frozen=True, kw_only=True)
class ClusterAccess:
    """How a use case reaches the cluster: Kafka, Prometheus (partition rates for a plan, the
    gates' readings for a run; a run that is only cancelled or cleared needs none), client
    security settings and optional capacities."""

    bootstrap: str
    prometheus: str | None = None
    command_config: Path | None = None
    capacities: Path | None = None


class NoMetrics:
    """A MetricsSource for commands that never read metrics (clear-throttles)."""

    def query(self, promql: str) -> list[tuple[dict[str, str], float]]:
        from kafka_rebalance.core.errors import MetricsError

        raise MetricsError("no --prometheus given")


@contextmanager
def real_ports(bootstrap: str, prometheus: str | None,
               command_config: Path | None) -> Iterator[Ports]:
    """The real adapters (client libraries imported here, on use); the admin is closed after."""
    from kafka_rebalance.core.ports import MetricsSource
    from topology.kafka_admin import KafkaClusterAdmin
    from topology.prom_source import PrometheusMetrics
    from topology.security import load_security

    metrics: MetricsSource = PrometheusMetrics(prometheus) if prometheus else NoMetrics()
    admin = KafkaClusterAdmin(bootstrap, load_security(command_config, os.environ))
    try:
        yield Ports(admin, metrics, SystemClock())
    finally:
        admin.close()


@contextmanager
def cluster_lease(bootstrap: str, command_config: Path | None, run_id: str, journal: Path,
                  take_over: str | None, note: Callable[[str], None]) -> Iterator[LeaseHold]:
    """Hold the cluster's run lease (executor.lease) while the body runs: a second run from
    anywhere is refused before it changes anything. A lease that cannot be released is told
    to `note` (the run's own outcome matters more)."""
    from executor.lease import LeaseHold, LeaseKeeper
    from topology.kafka_lease import KafkaLeaseStore
    from topology.security import load_security

    store = KafkaLeaseStore(bootstrap, load_security(command_config, os.environ))
    keeper = LeaseKeeper(store)
    host = socket.gethostname()
    keeper.acquire(run_id, f"{host} pid {os.getpid()}, journal {journal}", take_over, host)
    prior = keeper.prior
    hold = LeaseHold(inherited=prior is not None and prior.held and prior.run_id == run_id,
                     lost=lambda: keeper.lost)
    try:
        yield hold
    finally:
        try:
            if hold.release and not keeper.lost:
                keeper.release()
            else:
                keeper.abandon()
        except LeaseLost as lost:
            note(f"{lost}; its lease is left to the process that holds it")
        except RebalanceError as exc:
            note(f"the run lease of {run_id} could not be released ({exc}); another run needs "
                 f"--take-over-lease {run_id} once this one is over")


# Without --capacities every broker counts as equal and unbounded: the validator then compares
# brokers with each other only (the plan's capacity goals were checked when it was made).
EQUAL_CAPACITIES = Capacities(default={k: 1e15 for k in CAPACITY_KEYS})


def live_topology(ports: Ports, bootstrap: str, capacities: Path | None,
                  fallback: Capacities | None = None) -> Topology:
    """The cluster as it is now (sizes, racks, rates) for the planner's validator, with the
    capacities file's capacities, else `fallback` (the plan's own), else equal brokers."""
    from topology.live import read_live_topology
    from topology.snapshot import topology_from_dict

    if capacities:
        caps = read_capacities(capacities)
    elif fallback is not None:  # the plan's brokers that this cluster has (preflight tells
        live = {b.id for b in ports.admin.brokers()}  # a plan of another cluster apart)
        caps = replace(fallback, brokers={b: v for b, v in fallback.brokers.items()
                                          if b in live})
    else:
        caps = EQUAL_CAPACITIES
    doc = read_live_topology(ports.admin, ports.metrics, caps).document
    return topology_from_dict(doc, caps, f"cluster at {bootstrap}")


def read_live(bootstrap: str, prometheus: str | None, command_config: Path | None,
              caps: Capacities | None) -> Topology:
    """The live cluster to plan for, read through the Kafka adapter (imported here: client
    libraries); the admin is closed after."""
    from topology.kafka_admin import KafkaClusterAdmin
    from topology.live import read_live_topology
    from topology.prom_source import PrometheusMetrics
    from topology.security import load_security
    from topology.snapshot import topology_from_dict

    security = load_security(command_config, os.environ)
    metrics = PrometheusMetrics(prometheus) if prometheus else None
    admin = KafkaClusterAdmin(bootstrap, security)
    try:
        doc = read_live_topology(admin, metrics, caps).document
    finally:
        admin.close()
    return topology_from_dict(doc, caps, f"cluster at {bootstrap}")


def with_scrape_window(queries: GateQueries, prometheus: str | None) -> GateQueries:
    """`queries` with the rate window derived from the Prometheus targets' scrape interval."""
    from executor.readings import window_for_scrape_interval
    from kafka_rebalance.core.errors import InputError
    from topology.prom_source import PrometheusMetrics

    if prometheus is None:
        raise InputError("the gates' rate window comes from Prometheus' scrape interval: "
                         "pass --prometheus, or --rate-window")

    interval = PrometheusMetrics(prometheus).scrape_interval_seconds()
    return replace(queries, window=window_for_scrape_interval(interval))
