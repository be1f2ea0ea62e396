"""Shaped links of a sandbox: names and addresses, tc and ip command lines, what `down` deletes,
the state round trip, and `--link-mbps` refused before anything is created."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

import pytest

from kafka_rebalance.core.errors import InputError, SandboxError
from kafka_rebalance.sandbox import cluster, config, links, network
from kafka_rebalance.sandbox.links import BrokerLink
from kafka_rebalance.sandbox.state import BrokerInfo, SandboxInfo, read_state, write_state
from tests.unit.conftest import Rebalance

NET = ipaddress.IPv4Network


def linked_info(sandbox_dir: Path) -> SandboxInfo:
    link = links.plan_link(sandbox_dir, 40, [1, 2], taken=[])
    brokers = (BrokerInfo(1, "a", 29092, 29401, 11), BrokerInfo(2, "b", 29093, 29402, 12))
    return SandboxInfo(dir=sandbox_dir, base_port=29090, cluster_id="abc", jar_dir=Path("/jars"),
                       controller_port=29091, controller_pid=10, prometheus_port=29090,
                       prometheus_pid=13, brokers=brokers, internal_rf=2, link=link)


def test_names_derive_from_the_dir_and_fit_linux_interface_names() -> None:
    tag = links.link_tag(Path("/srv/sandboxes/one"))
    assert tag == links.link_tag(Path("/srv/sandboxes/one"))
    assert tag != links.link_tag(Path("/srv/sandboxes/two"))
    assert len(tag) == 6 and int(tag, 16) >= 0
    host, inside = links.veth_names(tag, links.LINK_MAX_BROKER_ID)
    assert (host, inside) == (f"kr{tag}h244", f"kr{tag}n244")
    assert max(len(host), len(inside), len(links.bridge_name(tag))) <= 15
    assert links.netns_name(tag, 3) == f"kr{tag}-b3"


def test_the_subnet_avoids_every_address_and_route_in_use() -> None:
    tag = "0a0b0c"  # starts at 10.10.11.0/24 (0x0a0b0c % 65536 = 0x0b0c)
    assert links.choose_subnet(tag, []) == NET("10.11.12.0/24")
    assert links.choose_subnet(tag, [NET("10.11.12.0/24")]) == NET("10.11.13.0/24")
    # A wider network in use (a /16 route) pushes it past the whole /16.
    assert links.choose_subnet(tag, [NET("10.11.0.0/16")]) == NET("10.12.0.0/24")
    assert links.choose_subnet("00ffff", []) == NET("10.255.255.0/24")
    assert links.choose_subnet("00ffff", [NET("10.255.255.0/24")]) == NET("10.0.0.0/24")
    with pytest.raises(SandboxError, match=r"no free 10\.x\.y\.0/24"):
        links.choose_subnet(tag, [NET("10.0.0.0/8")])


def test_taken_networks_read_ip_json() -> None:
    addresses = [
        {"ifname": "lo", "addr_info": [{"family": "inet", "local": "127.0.0.1", "prefixlen": 8},
                                       {"family": "inet6", "local": "::1", "prefixlen": 128}]},
        {"ifname": "eth0", "addr_info": [{"family": "inet", "local": "10.1.2.7",
                                          "prefixlen": 24}]},
        {"ifname": "ifb0"},
    ]
    routes = [{"dst": "default", "gateway": "10.1.2.1"}, {"dst": "10.9.0.0/16"},
              {"dst": "10.8.1.1"}]
    assert links.taken_networks(addresses, routes) == [
        NET("127.0.0.0/8"), NET("10.1.2.0/24"), NET("10.9.0.0/16"), NET("10.8.1.1/32")]


def test_plan_gives_each_broker_a_namespace_address_and_veth_pair(tmp_path: Path) -> None:
    link = links.plan_link(tmp_path, 40, [1, 2], taken=[])
    tag = links.link_tag(tmp_path)
    subnet = NET(link.subnet)
    assert (link.mbps, link.tag, link.bridge) == (40, tag, f"krb{tag}")
    assert link.bridge_address == str(subnet[1])
    assert link.brokers == (
        BrokerLink(1, f"kr{tag}-b1", f"kr{tag}h1", f"kr{tag}n1", str(subnet[11])),
        BrokerLink(2, f"kr{tag}-b2", f"kr{tag}h2", f"kr{tag}n2", str(subnet[12])),
    )
    grown = link.with_broker(5)
    assert grown.address(5) == str(subnet[15]) and link.link(5) is None
    assert grown.with_broker(5) == grown
    with pytest.raises(SandboxError, match="does not fit"):
        link.with_broker(links.LINK_MAX_BROKER_ID + 1)


@pytest.mark.parametrize("mbps", [0, -5, links.MAX_LINK_MBPS + 1])
def test_link_rate_out_of_range_is_bad_input(tmp_path: Path, mbps: int) -> None:
    with pytest.raises(InputError, match="--link-mbps must be between 1 and"):
        links.plan_link(tmp_path, mbps, [1], taken=[])


def test_too_many_brokers_for_a_24_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"broker ids 1\.\.244"):
        links.plan_link(tmp_path, 40, list(range(1, 246)), taken=[])


def test_token_buckets_keep_a_burst_and_a_bounded_queue() -> None:
    assert links.tbf_args(40) == ["tbf", "rate", "40mbit", "burst", "20000", "latency", "50ms"]
    assert links.tbf_args(1) == ["tbf", "rate", "1mbit", "burst", "16000", "latency", "50ms"]
    assert links.tbf_args(1000)[4] == "500000"


def test_commands_shape_both_directions_of_each_veth(tmp_path: Path) -> None:
    link = links.plan_link(tmp_path, 40, [1], taken=[NET("10.0.0.0/9")])
    (broker,) = link.brokers
    bridge = links.bridge_commands(link)
    assert bridge[1] == ["ip", "addr", "add", f"{link.bridge_address}/24", "dev", link.bridge]
    commands = links.broker_commands(link, broker)
    shaped = [c for c in commands if "tbf" in c]
    tbf = links.tbf_args(40)
    assert shaped == [
        ["tc", "qdisc", "add", "dev", broker.host_veth, "root", *tbf],  # into the broker
        ["tc", "-n", broker.netns, "qdisc", "add", "dev", broker.ns_veth, "root", *tbf],  # out
    ]
    assert commands[0] == ["ip", "netns", "add", broker.netns]
    assert ["ip", "link", "set", broker.host_veth, "master", link.bridge] in commands
    assert not any("route" in c for c in commands)  # no way out of the /24
    assert links.exec_prefix(link, 1) == ["ip", "netns", "exec", broker.netns]
    assert links.exec_prefix(None, 1) == []
    with pytest.raises(SandboxError, match="broker 7 has no link"):
        links.exec_prefix(link, 7)


def test_leftovers_are_the_recorded_names_and_the_dir_scheme(tmp_path: Path) -> None:
    link = links.plan_link(tmp_path, 40, [1, 2], taken=[])
    tag = link.tag
    present_links = ["lo", "eth0", f"kr{tag}h1", f"kr{tag}h9", f"krb{tag}", "kr000000h1",
                     "krb000000"]
    present_ns = [f"kr{tag}-b2", f"kr{tag}-b9", "kr000000-b1", "other"]
    found = links.leftovers(tag, link, present_links, present_ns)
    assert found.host_veths == (f"kr{tag}h1", f"kr{tag}h9")  # h9: made, never recorded
    assert found.netns == (f"kr{tag}-b2", f"kr{tag}-b9")
    assert found.bridges == (f"krb{tag}",)
    # Without the state file, the scheme alone finds the same.
    assert links.leftovers(tag, None, present_links, present_ns) == found
    assert links.removal_commands(found) == [
        ["ip", "link", "del", f"kr{tag}h1"], ["ip", "link", "del", f"kr{tag}h9"],
        ["ip", "netns", "del", f"kr{tag}-b2"], ["ip", "netns", "del", f"kr{tag}-b9"],
        ["ip", "link", "del", f"krb{tag}"],
    ]
    assert not links.leftovers(tag, link, ["lo"], [])


def test_linked_state_round_trips_and_addresses_follow_the_link(tmp_path: Path) -> None:
    info = linked_info(tmp_path)
    write_state(info)
    assert read_state(tmp_path) == info
    assert json.loads((tmp_path / "state.json").read_text())["link"]["mbps"] == 40
    assert info.link is not None
    a1, a2 = info.link.address(1), info.link.address(2)
    assert info.bootstrap == f"{a1}:29092,{a2}:29093"
    assert info.prometheus_url == "http://127.0.0.1:29090"  # the executor's URL stays
    assert info.controller_host == info.link.bridge_address
    summary = info.summary()
    assert summary["controller"] == f"{info.link.bridge_address}:29091"
    assert summary["link"]["brokers"][0]["address"] == a1


def test_loopback_state_has_no_link_key(tmp_path: Path) -> None:
    info = linked_info(tmp_path)
    plain = SandboxInfo(**{**vars(info), "link": None})
    write_state(plain)
    assert "link" not in json.loads((tmp_path / "state.json").read_text())
    assert "link" not in plain.summary()
    assert read_state(tmp_path) == plain
    assert plain.bootstrap == "127.0.0.1:29092,127.0.0.1:29093"


def test_configs_listen_on_the_namespace_and_bridge_addresses() -> None:
    ports = config.PortPlan(29090)
    data = (Path("/d"),)
    assert config.broker_properties(1, "a", ports, data, 3) == config.broker_properties(
        1, "a", ports, data, 3, "127.0.0.1", "127.0.0.1")
    text = config.broker_properties(1, "a", ports, data, 3, "10.5.6.11", "10.5.6.1")
    assert "listeners=PLAINTEXT://10.5.6.11:29092\n" in text
    assert "advertised.listeners=PLAINTEXT://10.5.6.11:29092\n" in text
    assert "controller.quorum.voters=3000@10.5.6.1:29091\n" in text
    controller = config.controller_properties(ports, data, "10.5.6.1")
    assert "listeners=CONTROLLER://10.5.6.1:29091\n" in controller
    scrape = config.prometheus_config([config.ScrapeTarget(1, "a", 29401, "10.5.6.11"),
                                       config.ScrapeTarget(2, "b", 29402)])
    statics = scrape["scrape_configs"][0]["static_configs"]  # type: ignore[index]
    assert [s["targets"] for s in statics] == [["10.5.6.11:29401"], ["127.0.0.1:29402"]]


def test_links_need_root_and_the_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(network.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(network.shutil, "which", lambda name: None if name == "tc" else "/x")
    with pytest.raises(InputError, match=r"must run as root.*'tc' not on PATH"):
        network.require_link_support()


def test_up_with_links_refused_before_anything_is_created(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rebalance: Rebalance) -> None:
    monkeypatch.setattr(network.os, "geteuid", lambda: 1000)
    target = tmp_path / "sb"
    code, message = rebalance("sandbox", "up", "--link-mbps", "40", "--dir", str(target))
    assert code == 2 and "must run as root" in message
    assert not target.exists()
    code, _ = rebalance("sandbox", "up", "--link-mbps", "0", "--dir", str(target))
    assert code == 2 and not target.exists()
    with pytest.raises(InputError, match="must run as root"):
        cluster.up(target, link_mbps=40)
    assert not target.exists()


def test_capacities_follow_the_link_rate() -> None:
    assert "net_in_bytes_per_sec: 50MB/s\n" in config.capacities_yaml()
    assert "net_out_bytes_per_sec: 5MB/s\n" in config.capacities_yaml(40)
    assert "net_in_bytes_per_sec: 0.125MB/s\n" in config.capacities_yaml(1)
    assert "net_in_bytes_per_sec: 12499.875MB/s\n" in config.capacities_yaml(99_999)


def test_up_on_a_running_loopback_sandbox_says_the_rate_is_not_applied(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rebalance: Rebalance) -> None:
    running = SandboxInfo(**{**vars(linked_info(tmp_path)), "link": None})
    monkeypatch.setattr(cluster, "up", lambda *a, **k: cluster.UpResult(running, True))
    code, output = rebalance("sandbox", "up", "--link-mbps", "40", "--dir", str(tmp_path))
    assert code == 0
    assert "already runs on loopback: --link-mbps 40 is not applied" in output
    assert "links:" not in output
