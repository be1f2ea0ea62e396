"""The one bootstrap-list parser: what it accepts, what it refuses and what the refusal says."""

from __future__ import annotations

import socket

import pytest

from kafka_rebalance.core.errors import ClusterError, InputError
from topology.bootstrap import (
    BootstrapServer,
    bootstrap_string,
    parse_bootstrap,
    refused_everywhere,
)
from topology.kafka_admin import KafkaClusterAdmin
from topology.kafka_lease import KafkaLeaseStore


@pytest.mark.parametrize(("text", "servers"), [
    ("localhost:9092", [("localhost", 9092)]),
    (" broker-1.example.com:9093 , 10.0.0.7:1 ", [("broker-1.example.com", 9093),
                                                  ("10.0.0.7", 1)]),
    ("[::1]:65535", [("::1", 65535)]),
    ("kafka_0:29092,[fe80::1%eth0]:9092", [("kafka_0", 29092), ("fe80::1%eth0", 9092)]),
])
def test_good_lists_parse_into_hosts_and_ports(text: str,
                                               servers: list[tuple[str, int]]) -> None:
    parsed = parse_bootstrap(text)
    assert [(s.host, s.port) for s in parsed] == servers


def test_the_client_string_keeps_ipv6_in_brackets() -> None:
    servers = parse_bootstrap(" a:1,[::1]:2 ")
    assert bootstrap_string(servers) == "a:1,[::1]:2"
    assert str(BootstrapServer("::1", 9092)) == "[::1]:9092"


@pytest.mark.parametrize(("text", "message"), [
    ("127.0.0.1:99999", "'127.0.0.1:99999': the port 99999 is not in 1..65535"),
    ("127.0.0.1:0", "the port 0 is not in 1..65535"),
    ("localhost", "'localhost' has no port: write localhost:PORT"),
    ("localhost:", "'localhost:' has no port after ':'"),
    (":9092", "':9092' has no host"),
    ("host:90a", "the port '90a' is not a number from 1 to 65535"),
    ("host:+90", "the port '+90' is not a number"),
    ("host:\uff11\uff12", "is not a number"),  # fullwidth digits, which isdigit() accepts
    ("::1:9092", "an IPv6 address goes in brackets, as in [::1]:9092"),
    ("[::1]9092", "has no port: write [::1]:PORT"),
    ("[::1:9092", "opens '[' without closing it"),
    ("[nothost]:9092", "'nothost' in brackets is not an IPv6 address"),
    ("PLAINTEXT://b:9092", "has a scheme: give HOST:PORT alone"),
    ("a:1,,b:2", "an empty entry (a stray comma)"),
    ("bad host:1", "'bad host' is not a host name or IPv4 address"),
    ("", "no bootstrap servers given"),
    ("  ", "no bootstrap servers given"),
])
def test_bad_lists_are_input_errors_that_say_what_to_fix(text: str, message: str) -> None:
    with pytest.raises(InputError) as refused:
        parse_bootstrap(text)
    assert message in str(refused.value)
    assert InputError.exit_code == 2


def test_every_bad_entry_is_named_with_the_expected_form() -> None:
    with pytest.raises(InputError) as refused:
        parse_bootstrap("a:1,b:70000,c")
    text = str(refused.value)
    assert text.startswith("--bootstrap: 2 problems: 'b:70000'")
    assert "'c' has no port" in text and "'a:1'" not in text
    assert text.endswith("give HOST:PORT[,HOST:PORT...], e.g. localhost:9092 or [::1]:9092")


def test_the_kafka_adapters_refuse_a_bad_list_before_opening_a_client() -> None:
    with pytest.raises(InputError, match="port 99999"):
        KafkaClusterAdmin("127.0.0.1:99999")
    with pytest.raises(InputError, match="port 99999"):
        KafkaLeaseStore("127.0.0.1:99999")


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_list_where_nothing_listens_is_refused_everywhere() -> None:
    first, second = _closed_port(), _closed_port()
    why = refused_everywhere(parse_bootstrap(f"127.0.0.1:{first},127.0.0.1:{second}"))
    assert why is not None
    assert f"127.0.0.1:{first}: Connection refused" in why
    assert f"127.0.0.1:{second}: Connection refused" in why


def test_one_listening_server_is_enough() -> None:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        assert refused_everywhere(parse_bootstrap(
            f"127.0.0.1:{_closed_port()},127.0.0.1:{port}")) is None


def test_the_admin_and_the_lease_say_nothing_listens_without_waiting_out_a_timeout() -> None:
    """The refusal names the cause librdkafka would only time out on (after 15 s and more)."""
    address = f"127.0.0.1:{_closed_port()}"
    admin = KafkaClusterAdmin(address, timeout_s=60)
    with pytest.raises(ClusterError, match=f"cannot reach Kafka at {address}: {address}: "
                                           "Connection refused"):
        admin.brokers()
    admin.close()
    with pytest.raises(ClusterError, match=f"run lease: {address}: Connection refused"):
        KafkaLeaseStore(address, timeout_s=60).claim(lambda latest, age: b"never written")


def test_a_call_that_times_out_names_the_bootstrap_servers_that_are_down() -> None:
    """One server of the list listens (and never answers as Kafka would), one refuses: the
    timeout names the one that is down, not only the whole list."""
    down = _closed_port()
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        up = listening.getsockname()[1]
        admin = KafkaClusterAdmin(f"127.0.0.1:{down},127.0.0.1:{up}", timeout_s=1)
        with pytest.raises(ClusterError) as caught:
            admin.brokers()
        admin.close()
    assert (f"127.0.0.1:{down}: Connection refused (the other 1 of the bootstrap list accept "
            "connections)") in str(caught.value)
