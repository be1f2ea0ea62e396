"""A linked sandbox (`sandbox up --link-mbps`): brokers in namespaces of their own behind shaped
links. One small sandbox of this module's own, started once; the last test kills it as a crash
would and checks that `down` leaves no namespace, veth or bridge behind."""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import NewTopic

from kafka_rebalance.sandbox import cluster, links, ready
from kafka_rebalance.sandbox.produce import ProduceRequest, produce
from kafka_rebalance.sandbox.state import SandboxInfo, read_state
from tests.integration.executor_support import QUOTA_WINDOW_SAMPLES
from tests.integration.kafka_topics import create_topics
from tests.integration.prometheus_query import prom_query

pytestmark = pytest.mark.integration

REBALANCE = str(Path(sys.executable).parent / "rebalance")
LINK_MBPS = 40
LINK_BYTES_PER_S = LINK_MBPS * 1_000_000 / 8
PRODUCERS = 2
MB_PER_PRODUCER = 16


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([REBALANCE, *args], capture_output=True, text=True, timeout=240,
                          check=False)


def network_names(tag: str) -> list[str]:
    """Every namespace and root-namespace link whose name is of the sandbox's scheme."""
    namespaces = json.loads(subprocess.run(["ip", "-j", "netns", "list"], capture_output=True,
                                           text=True, check=True).stdout or "[]")
    interfaces = json.loads(subprocess.run(["ip", "-j", "link"], capture_output=True,
                                           text=True, check=True).stdout)
    names = [n["name"] for n in namespaces] + [i["ifname"] for i in interfaces]
    return sorted(n for n in names if n.startswith((f"kr{tag}", f"krb{tag}")))


def qdisc(*args: str) -> str:
    return subprocess.run(["tc", *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def linked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxInfo]:
    """3 brokers on 3 racks, each behind a 40 Mbit/s link."""
    if os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("tc") is None:
        pytest.skip("shaped links need root, `ip` and `tc`")
    sandbox_dir = tmp_path_factory.mktemp("linked")
    base = cluster.free_base_port(21090, 4)  # below the ephemeral ports
    try:
        started = time.monotonic()
        info = cluster.up(sandbox_dir, brokers=3, racks=3, base_port=base,
                          link_mbps=LINK_MBPS, quota_window_samples=QUOTA_WINDOW_SAMPLES).info
        print(f"linked sandbox up in {time.monotonic() - started:.1f}s")
        yield info
    finally:
        cluster.down(sandbox_dir)


def test_brokers_answer_in_their_own_namespaces(linked: SandboxInfo) -> None:
    link = linked.link
    assert link is not None and link.mbps == LINK_MBPS
    subnet = ipaddress.IPv4Network(link.subnet)
    assert subnet.is_private and not subnet.overlaps(ipaddress.IPv4Network("127.0.0.0/8"))
    hosts = {b.id: linked.broker_host(b.id) for b in linked.brokers}
    assert hosts == {i: str(subnet[10 + i]) for i in (1, 2, 3)}
    assert linked.bootstrap == ",".join(f"{hosts[b.id]}:{b.port}" for b in linked.brokers)
    assert ready.registered_brokers(linked.bootstrap, 10) == {1: "a", 2: "b", 3: "c"}
    root_ns = os.readlink("/proc/self/ns/net")
    broker_ns = {os.readlink(f"/proc/{b.pid}/ns/net") for b in linked.brokers}
    assert len(broker_ns) == 3 and root_ns not in broker_ns
    for broker in linked.brokers:
        with socket.create_connection((hosts[broker.id], broker.port), timeout=5):
            pass
        with pytest.raises(OSError):  # nothing of the broker listens on loopback
            socket.create_connection(("127.0.0.1", broker.port), timeout=1).close()
    for b in link.brokers:  # both ends shaped to the link rate
        assert f"rate {LINK_MBPS}Mbit" in qdisc("qdisc", "show", "dev", b.host_veth)
        assert f"rate {LINK_MBPS}Mbit" in qdisc("-n", b.netns, "qdisc", "show", "dev", b.ns_veth)


def test_prometheus_scrapes_every_broker_at_its_address(linked: SandboxInfo) -> None:
    up = prom_query(linked.prometheus_url, 'up{job="kafka"}')
    seen = {s["metric"]["broker_id"]: (s["metric"]["instance"], s["value"][1]) for s in up}
    assert seen == {str(b.id): (f"{linked.broker_host(b.id)}:{b.metrics_port}", "1")
                    for b in linked.brokers}


def test_status_shows_the_link_rate(linked: SandboxInfo) -> None:
    text = run_cli("sandbox", "status", "--dir", str(linked.dir))
    assert text.returncode == 0, text.stderr
    assert "40 Mbit/s each way per broker" in text.stdout
    document = json.loads(run_cli("sandbox", "status", "--dir", str(linked.dir),
                                  "--json").stdout)
    assert document["link"]["mbps"] == LINK_MBPS
    assert document["bootstrap"] == linked.bootstrap
    capacities = (linked.dir / "capacities.yaml").read_text()
    assert "net_in_bytes_per_sec: 5MB/s\n" in capacities  # the link's rate, as the planner sees it


def test_acks_all_produce_runs_at_the_link_rate(linked: SandboxInfo) -> None:
    """Leader 1, follower 2: every byte crosses broker 1's link in, then out. A broker reads
    one request of a connection at a time and an acks=all request waits for the follower's
    fetch, so one producer alternates between the two directions (about half the rate);
    two producers keep the link busy."""
    topic = "linked-rate"
    create_topics(linked.bootstrap, [NewTopic(topic, 1, replica_assignment=[[1, 2]])])
    results: list[int] = []
    errors: list[BaseException] = []

    def one_producer() -> None:
        try:
            results.append(produce(linked, ProduceRequest(topic, MB_PER_PRODUCER)).bytes_sent)
        except BaseException as exc:  # reported by the test, in its own thread
            errors.append(exc)

    threads = [threading.Thread(target=one_producer) for _ in range(PRODUCERS)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=180)
    seconds = time.monotonic() - started
    assert not errors, errors
    rate = sum(results) / seconds
    print(f"acks=all produce: {sum(results) / 1e6:.0f} MB in {seconds:.1f}s = "
          f"{rate / 1e6:.2f} MB/s on a {LINK_BYTES_PER_S / 1e6:.2f} MB/s link")
    assert sum(results) == PRODUCERS * MB_PER_PRODUCER * 1_000_000
    # On loopback the same produce runs at tens of MB/s: an upper bound near the link rate
    # shows the shaping; the lower bound shows the link, not something else, is the limit.
    assert 0.5 * LINK_BYTES_PER_S <= rate <= 1.3 * LINK_BYTES_PER_S


def test_added_broker_gets_its_own_shaped_namespace(linked: SandboxInfo) -> None:
    added = cluster.add_broker(linked.dir, "a")
    info = read_state(linked.dir)
    assert info is not None and info.link is not None
    own = info.link.link(added.id)
    assert own is not None and own.address == info.broker_host(added.id)
    assert f"rate {LINK_MBPS}Mbit" in qdisc("qdisc", "show", "dev", own.host_veth)
    assert f"rate {LINK_MBPS}Mbit" in qdisc("-n", own.netns, "qdisc", "show", "dev", own.ns_veth)
    assert ready.registered_brokers(info.bootstrap, 10)[added.id] == "a"
    assert os.readlink(f"/proc/{added.pid}/ns/net") not in {
        os.readlink(f"/proc/{b.pid}/ns/net") for b in info.brokers if b.id != added.id}


def test_down_after_a_crash_leaves_no_network(linked: SandboxInfo) -> None:
    info = read_state(linked.dir)
    assert info is not None and info.link is not None
    tag = info.link.tag
    assert tag == links.link_tag(linked.dir.resolve())
    assert len(network_names(tag)) == 2 * len(info.brokers) + 1  # veths, namespaces, bridge
    for pid in info.pids().values():  # a crash: nothing gets to clean up
        os.kill(pid, signal.SIGKILL)
    stopped = run_cli("sandbox", "down", "--dir", str(linked.dir))
    assert stopped.returncode == 0, stopped.stderr
    assert network_names(tag) == []
    assert cluster.sandbox_pids(linked.dir) == []
    assert read_state(linked.dir) is None
