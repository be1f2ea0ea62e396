"""The ports of a sandbox: which are free on loopback, and a base port whose whole plan is.

Every port derives from one base port (`kafka_rebalance.sandbox.config.PortPlan`); a linked sandbox
uses the same plan (its brokers' ports are then in their own namespaces, and are checked all the
same).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kafka_rebalance.core.errors import SandboxError
from kafka_rebalance.sandbox import config, process
from kafka_rebalance.sandbox.state import SandboxInfo


def check_ports(ports: Sequence[tuple[str, int]]) -> None:
    """A SandboxError naming the first (role, port) that something on 127.0.0.1 holds."""
    for role, port in ports:
        if process.port_in_use(port):
            raise SandboxError(f"port {port} ({role}) is already in use on 127.0.0.1; "
                               "stop what uses it or choose another --base-port")


def ports_free(base_port: int, broker_ids: int) -> bool:
    """True when every port of a sandbox on base_port with broker ids 1..broker_ids is free."""
    plan = config.PortPlan(base_port)
    ports = [plan.prometheus, plan.controller]
    for broker_id in range(1, min(broker_ids, config.MAX_BROKER_ID) + 1):
        ports += [plan.broker(broker_id), plan.metrics(broker_id)]
    return not any(process.port_in_use(port) for port in ports)


def _ephemeral_low() -> int:
    """Lowest port the kernel hands out to outgoing connections (listeners there can clash)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def ephemeral_overlap(info: SandboxInfo) -> str:
    """What to say when the sandbox's ports reach the kernel's ephemeral range ('' when they
    do not): a client socket may take one of them, and a broker killed and started again can
    find its port held for a minute (a socket connected to itself in TIME-WAIT)."""
    low = _ephemeral_low()
    highest = max(port for _, port in port_roles(info))
    if highest < low:
        return ""
    below = max(1024, low - (highest - info.prometheus_port) - 1)
    return (f"the sandbox's ports ({info.prometheus_port}..{highest}) reach the kernel's "
            f"ephemeral range (from {low}): a client socket may take one, and a broker killed "
            "and started again may find its port held for a minute; a --base-port of "
            f"{below} or less keeps them out of it")


def free_base_port(start: int, broker_ids: int) -> int:
    """First base port from start, in steps of 1000, whose whole port plan is free and stays
    below the ephemeral port range (where a client socket could take a port mid-start)."""
    span = config.PortPlan(start).metrics(min(broker_ids, config.MAX_BROKER_ID)) - start
    for base in range(start, _ephemeral_low() - span, 1000):
        if ports_free(base, broker_ids):
            return base
    raise SandboxError(f"no free port range for a sandbox from {start} up to the ephemeral "
                       "ports; stop other sandboxes or pass --base-port")


def port_roles(info: SandboxInfo) -> list[tuple[str, int]]:
    """Every port of the sandbox with the role that listens on it."""
    roles = [("prometheus", info.prometheus_port), ("controller", info.controller_port)]
    for b in info.brokers:
        roles += [(f"broker {b.id}", b.port), (f"broker {b.id} exporter", b.metrics_port)]
    return roles
