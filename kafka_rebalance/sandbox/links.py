"""Shaped links of a sandbox (`sandbox up --link-mbps N`), as pure values and command lines.

Each broker sits in a network namespace of its own, joined by a veth pair to a bridge in the
root namespace. A token bucket (tbf) on each end of the pair shapes one direction: on the host
end what goes into the broker, on the namespace end what comes out of it. Both are egress
qdiscs, so no ifb device or ingress policing is needed. Every name and address derives from a
short hash of the sandbox dir, so a `down` that lost its state file still finds them.
No I/O here: `kafka_rebalance.sandbox.network` runs these commands.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from kafka_rebalance.core.errors import InputError, SandboxError

LOOPBACK = "127.0.0.1"
NAME_PREFIX = "kr"
MAX_LINK_MBPS = 100_000
FIRST_BROKER_HOST = 10
"""Broker `id` has the address .(10 + id) of the sandbox's /24; .1 is the bridge."""
SUBNET_PREFIX = 24
LINK_MAX_BROKER_ID = 2 ** (32 - SUBNET_PREFIX) - 2 - FIRST_BROKER_HOST
MIN_BURST_BYTES = 16_000
BURST_S = 0.004
"""Bucket size: 4 ms of the rate, at least 16 kB (ten full frames), so a segmentation-offload
burst passes whole; above that the rate, not the bucket, sets the throughput."""
QUEUE_LATENCY_MS = 50
"""Queue bound of each tbf: at most 50 ms of data waits. Measured on veths, one TCP stream
gets 38.3 of 40 Mbit/s as payload (tbf counts the Ethernet/IP/TCP headers too) with any burst
from 4 kB to 64 kB and a bound of 20 or 50 ms, and 948 of 1000 Mbit/s; under Kafka
replication a 20 ms bound dropped ~6% of the packets into the leader for the same rate, 50 ms
none."""


@dataclass(frozen=True)
class BrokerLink:
    """One broker's namespace and veth pair (host end on the bridge) with its address."""

    broker_id: int
    netns: str
    host_veth: str
    ns_veth: str
    address: str


@dataclass(frozen=True)
class LinkInfo:
    """The shaped network of a linked sandbox: every name it creates, recorded in state.json
    before it is created (the qdiscs live on the veths and go with them)."""

    mbps: int
    tag: str
    bridge: str
    subnet: str
    brokers: tuple[BrokerLink, ...] = ()

    @property
    def bridge_address(self) -> str:
        return str(ipaddress.IPv4Network(self.subnet)[1])

    def address(self, broker_id: int) -> str:
        """The recorded address of a broker (a SandboxError for one without a link)."""
        for link in self.brokers:
            if link.broker_id == broker_id:
                return link.address
        raise SandboxError(f"broker {broker_id} has no link in this sandbox")

    def link(self, broker_id: int) -> BrokerLink | None:
        return next((b for b in self.brokers if b.broker_id == broker_id), None)

    def with_broker(self, broker_id: int) -> LinkInfo:
        """This network with one more broker's link (the same if it has one already)."""
        if self.link(broker_id) is not None:
            return self
        return replace(self, brokers=(*self.brokers, broker_link(self, broker_id)))


def check_link_mbps(mbps: int) -> None:
    if not 1 <= mbps <= MAX_LINK_MBPS:
        raise InputError(f"--link-mbps must be between 1 and {MAX_LINK_MBPS}, got {mbps}")


def link_tag(sandbox_dir: Path) -> str:
    """Six hex digits naming the sandbox's network (from its resolved dir)."""
    return hashlib.sha256(str(sandbox_dir).encode()).hexdigest()[:6]


def bridge_name(tag: str) -> str:
    return f"{NAME_PREFIX}b{tag}"


def netns_name(tag: str, broker_id: int) -> str:
    return f"{NAME_PREFIX}{tag}-b{broker_id}"


def veth_names(tag: str, broker_id: int) -> tuple[str, str]:
    """(host end, namespace end): at most 12 characters, under Linux's 15."""
    return f"{NAME_PREFIX}{tag}h{broker_id}", f"{NAME_PREFIX}{tag}n{broker_id}"


def choose_subnet(tag: str, taken: Iterable[ipaddress.IPv4Network]) -> ipaddress.IPv4Network:
    """The first 10.a.b.0/24 from the tag's own start that overlaps no address or route on
    this machine (another sandbox's bridge included)."""
    used = list(taken)
    start = int(tag, 16) % 65536
    for step in range(65536):
        n = (start + step) % 65536
        candidate = ipaddress.IPv4Network(f"10.{n >> 8}.{n & 255}.0/{SUBNET_PREFIX}")
        if not any(candidate.overlaps(net) for net in used):
            return candidate
    raise SandboxError("no free 10.x.y.0/24 for the sandbox's bridge: every one is in use")


def plan_link(sandbox_dir: Path, mbps: int, broker_ids: Sequence[int],
              taken: Iterable[ipaddress.IPv4Network]) -> LinkInfo:
    """The network of a linked sandbox in sandbox_dir with these brokers."""
    check_link_mbps(mbps)
    if any(not 1 <= broker_id <= LINK_MAX_BROKER_ID for broker_id in broker_ids):
        raise InputError(f"a linked sandbox holds broker ids 1..{LINK_MAX_BROKER_ID} (one /24); "
                         f"got {max(broker_ids)}")
    tag = link_tag(sandbox_dir)
    subnet = choose_subnet(tag, taken)
    link = LinkInfo(mbps=mbps, tag=tag, bridge=bridge_name(tag), subnet=str(subnet))
    for broker_id in broker_ids:
        link = link.with_broker(broker_id)
    return link


def broker_link(link: LinkInfo, broker_id: int) -> BrokerLink:
    if not 1 <= broker_id <= LINK_MAX_BROKER_ID:
        raise SandboxError(f"broker id {broker_id} does not fit a linked sandbox's /24 "
                           f"(ids 1..{LINK_MAX_BROKER_ID})")
    host_veth, ns_veth = veth_names(link.tag, broker_id)
    address = ipaddress.IPv4Network(link.subnet)[FIRST_BROKER_HOST + broker_id]
    return BrokerLink(broker_id=broker_id, netns=netns_name(link.tag, broker_id),
                      host_veth=host_veth, ns_veth=ns_veth, address=str(address))


def tbf_args(mbps: int) -> list[str]:
    """`tc` arguments of a token bucket at mbps Mbit/s (10^6 bit/s, as tc's "mbit")."""
    rate_bytes = mbps * 1_000_000 // 8
    burst = max(MIN_BURST_BYTES, int(rate_bytes * BURST_S))
    return ["tbf", "rate", f"{mbps}mbit", "burst", str(burst),
            "latency", f"{QUEUE_LATENCY_MS}ms"]


def bridge_commands(link: LinkInfo) -> list[list[str]]:
    """Create the bridge with the sandbox's first address and bring it up."""
    prefix = ipaddress.IPv4Network(link.subnet).prefixlen
    return [
        ["ip", "link", "add", link.bridge, "type", "bridge"],
        ["ip", "addr", "add", f"{link.bridge_address}/{prefix}", "dev", link.bridge],
        ["ip", "link", "set", link.bridge, "up"],
    ]


def broker_commands(link: LinkInfo, broker: BrokerLink) -> list[list[str]]:
    """Namespace, veth pair and both shapers of one broker. The namespace gets no default
    route: peers, the controller and root-namespace clients all sit on the /24."""
    prefix = ipaddress.IPv4Network(link.subnet).prefixlen
    ns = broker.netns
    return [
        ["ip", "netns", "add", ns],
        ["ip", "link", "add", broker.host_veth, "type", "veth", "peer", "name",
         broker.ns_veth, "netns", ns],
        ["ip", "link", "set", broker.host_veth, "master", link.bridge],
        ["tc", "qdisc", "add", "dev", broker.host_veth, "root", *tbf_args(link.mbps)],
        ["ip", "link", "set", broker.host_veth, "up"],
        ["ip", "-n", ns, "link", "set", "lo", "up"],
        ["ip", "-n", ns, "addr", "add", f"{broker.address}/{prefix}", "dev", broker.ns_veth],
        ["tc", "-n", ns, "qdisc", "add", "dev", broker.ns_veth, "root",
         *tbf_args(link.mbps)],
        ["ip", "-n", ns, "link", "set", broker.ns_veth, "up"],
    ]


def exec_prefix(link: LinkInfo | None, broker_id: int) -> list[str]:
    """What runs a broker's command inside its namespace (`ip netns exec` execs, so the pid
    and the command line are the broker's own); nothing on loopback."""
    if link is None:
        return []
    found = link.link(broker_id)
    if found is None:
        raise SandboxError(f"broker {broker_id} has no link in this sandbox")
    return ["ip", "netns", "exec", found.netns]


@dataclass(frozen=True)
class Leftovers:
    """Links and namespaces of one sandbox's network that exist now (to delete)."""

    host_veths: tuple[str, ...]
    netns: tuple[str, ...]
    bridges: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.host_veths or self.netns or self.bridges)

    def names(self) -> list[str]:
        return [*self.host_veths, *self.netns, *self.bridges]


def leftovers(tag: str, link: LinkInfo | None, links: Iterable[str],
              namespaces: Iterable[str]) -> Leftovers:
    """What of the sandbox's network still exists: the recorded names, and any other name of
    the tag's scheme (created by a run that died before recording it), sorted."""
    recorded_veths = {b.host_veth for b in link.brokers} if link else set()
    recorded_ns = {b.netns for b in link.brokers} if link else set()
    bridges = {bridge_name(tag)} | ({link.bridge} if link else set())
    host_prefix, ns_prefix = f"{NAME_PREFIX}{tag}h", f"{NAME_PREFIX}{tag}-b"
    link_names = set(links)
    return Leftovers(
        host_veths=tuple(sorted(n for n in link_names
                                if n in recorded_veths or n.startswith(host_prefix))),
        netns=tuple(sorted(n for n in set(namespaces)
                           if n in recorded_ns or n.startswith(ns_prefix))),
        bridges=tuple(sorted(link_names & bridges)),
    )


def removal_commands(found: Leftovers) -> list[list[str]]:
    """Delete what is left: veths first (deleting one end deletes the pair and its qdiscs at
    once, where a namespace's devices go asynchronously), then namespaces, then bridges."""
    return ([["ip", "link", "del", name] for name in found.host_veths]
            + [["ip", "netns", "del", name] for name in found.netns]
            + [["ip", "link", "del", name] for name in found.bridges])


def taken_networks(addresses: Sequence[Mapping[str, Any]],
                   routes: Sequence[Mapping[str, Any]]) -> list[ipaddress.IPv4Network]:
    """IPv4 networks in use, from `ip -j addr` and `ip -j route` (the default route is not a
    network a bridge would collide with)."""
    found = []
    for interface in addresses:
        for entry in interface.get("addr_info", []):
            if entry.get("family") == "inet":
                found.append(ipaddress.IPv4Network(
                    f"{entry['local']}/{entry['prefixlen']}", strict=False))
    for route in routes:
        dst = str(route.get("dst", "default"))
        if dst != "default":
            found.append(ipaddress.IPv4Network(dst if "/" in dst else f"{dst}/32", strict=False))
    return found


def link_to_dict(link: LinkInfo) -> dict[str, Any]:
    return {"mbps": link.mbps, "tag": link.tag, "bridge": link.bridge, "subnet": link.subnet,
            "brokers": [asdict(b) for b in link.brokers]}


def link_from_dict(data: Mapping[str, Any]) -> LinkInfo:
    return LinkInfo(mbps=int(data["mbps"]), tag=str(data["tag"]), bridge=str(data["bridge"]),
                    subnet=str(data["subnet"]),
                    brokers=tuple(BrokerLink(**b) for b in data["brokers"]))
