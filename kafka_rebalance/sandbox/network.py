"""The adapter that creates and removes a linked sandbox's network with `ip` and `tc`.

What to run comes from `kafka_rebalance.sandbox.links` (pure); this module checks it can run (root,
tools), reads what exists and runs the commands.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kafka_rebalance.core.errors import InputError, SandboxError
from kafka_rebalance.sandbox import links
from kafka_rebalance.sandbox.links import BrokerLink, LinkInfo

_TIMEOUT_S = 30.0


def require_link_support() -> None:
    """Shaped links need root and the `ip` and `tc` tools; an InputError before anything is
    created otherwise."""
    problems = []
    if os.geteuid() != 0:
        problems.append("it must run as root (it creates network namespaces, veths, a bridge)")
    missing = [tool for tool in ("ip", "tc") if shutil.which(tool) is None]
    if missing:
        problems.append(f"{' and '.join(repr(t) for t in missing)} not on PATH "
                        "(Debian: apt-get install iproute2)")
    if problems:
        raise InputError("--link-mbps cannot be used here: " + "; ".join(problems)
                         + "; leave it out for a sandbox on loopback")


def can_manage() -> bool:
    """True when this process could have created (and so can remove) a sandbox network."""
    return os.geteuid() == 0 and shutil.which("ip") is not None


def _run(command: Sequence[str]) -> str:
    try:
        done = subprocess.run(list(command), capture_output=True, text=True,
                              timeout=_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxError(f"`{' '.join(command)}` failed: {exc}") from None
    if done.returncode != 0:
        raise SandboxError(f"`{' '.join(command)}` failed: {done.stderr.strip()}")
    return done.stdout


def _json(command: Sequence[str]) -> list[dict[str, Any]]:
    text = _run(command).strip()
    found = json.loads(text) if text else []
    return found if isinstance(found, list) else []


def _taken() -> list[ipaddress.IPv4Network]:
    return links.taken_networks(_json(["ip", "-j", "addr"]), _json(["ip", "-j", "route"]))


def plan(sandbox_dir: Path, mbps: int, broker_ids: Sequence[int]) -> LinkInfo:
    """The sandbox's network, on a /24 that no address or route here overlaps."""
    return links.plan_link(sandbox_dir, mbps, broker_ids, _taken())


def subnet_free(link: LinkInfo) -> bool:
    """True while nothing else here took the planned subnet (checked again right before use:
    fetching the jars may have taken minutes)."""
    subnet = ipaddress.IPv4Network(link.subnet)
    return not any(subnet.overlaps(net) for net in _taken())


def create_bridge(link: LinkInfo) -> None:
    for command in links.bridge_commands(link):
        _run(command)


def create_broker_link(link: LinkInfo, broker: BrokerLink) -> None:
    for command in links.broker_commands(link, broker):
        _run(command)


def existing(tag: str, link: LinkInfo | None) -> links.Leftovers:
    """What of the network of the sandbox with this tag exists now."""
    names = [str(entry.get("ifname")) for entry in _json(["ip", "-j", "link"])]
    namespaces = [str(entry.get("name")) for entry in _json(["ip", "-j", "netns", "list"])]
    return links.leftovers(tag, link, names, namespaces)


def remove(tag: str, link: LinkInfo | None) -> list[str]:
    """Delete the sandbox's veths, namespaces and bridge (recorded or named by its scheme);
    return what was deleted. A SandboxError names whatever could not be."""
    found = existing(tag, link)
    errors = []
    for command in links.removal_commands(found):
        try:
            _run(command)
        except SandboxError as exc:
            errors.append(str(exc))
    left = existing(tag, link)
    if left:
        raise SandboxError(f"could not remove {', '.join(left.names())} of the sandbox's "
                           f"network: {'; '.join(errors) or 'still there'}")
    return found.names()


def create(link: LinkInfo) -> None:
    """Create the bridge and every broker's namespace and shaped veth pair."""
    if not subnet_free(link):
        raise SandboxError(f"{link.subnet} was taken on this machine while the sandbox "
                           "started; run `rebalance sandbox up` again")
    create_bridge(link)
    for broker in link.brokers:
        create_broker_link(link, broker)


def create_broker(link: LinkInfo, broker_id: int) -> None:
    """Create one broker's namespace and shaped veth pair (its entry is in link already)."""
    broker = link.link(broker_id)
    if broker is None:
        raise SandboxError(f"broker {broker_id} has no link in this sandbox")
    create_broker_link(link, broker)
