"""Capacities file: overrides resolve default < rack < broker; bad files say what to fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kafka_rebalance.core.errors import InputError
from topology.capacities import parse_capacities, read_capacities
from topology.model import Broker, Capacity, Topology
from topology.units import parse_bytes


def test_units() -> None:
    assert parse_bytes("4TB", "x") == 4e12
    assert parse_bytes("250 MB/s", "x") == 250e6
    assert parse_bytes("1.5GiB", "x") == 1.5 * 2**30
    assert parse_bytes(12, "x") == 12.0
    with pytest.raises(InputError, match="cannot read 'lots'"):
        parse_bytes("lots", "x")
    with pytest.raises(InputError, match="expected a number"):
        parse_bytes(True, "x")


def test_precedence_and_partial_overrides() -> None:
    caps = parse_capacities({
        "default": {"disk_bytes": "10GB", "net_in_bytes_per_sec": "1MB/s",
                    "net_out_bytes_per_sec": "1MB/s"},
        "racks": {"a": {"disk_bytes": "20GB", "net_in_bytes_per_sec": "2MB/s"}},
        "brokers": {"5": {"disk_bytes": "50GB"}},
    })
    assert caps.for_broker(1, "b") == Capacity(10e9, 1e6, 1e6)
    assert caps.for_broker(2, "a") == Capacity(20e9, 2e6, 1e6)
    assert caps.for_broker(5, "a") == Capacity(50e9, 2e6, 1e6)


BAD: list[tuple[Any, str]] = [
    ([], "expected a mapping"),
    ({"defaults": {}}, "unknown section 'defaults'"),
    ({"default": {"disk": 1}}, "unknown key 'disk'"),
    ({"default": {"disk_bytes": -1}}, "must be positive"),
    ({"default": {"disk_bytes": "many"}}, "cannot read 'many'"),
    ({"brokers": {"x": {"disk_bytes": 1}}}, "broker ids must be integers"),
    ({"racks": [1]}, "must be mappings"),
    ({"default": {"net_in_bytes_per_sec": "250MB"}}, "is an amount of bytes, but this is a "
                                                     "rate: write 250MB/s"),
    ({"default": {"disk_bytes": "4TB/s"}}, "is a rate, but this is an amount of bytes"),
    ({"default": {"disk_bytes": 2}}, "2 is implausibly small \\(under 1 MB\\); check its unit "
                                     "\\(a bare number is bytes\\)"),
    ({"default": {"requests_per_sec": 0.5}}, "0.5 is implausibly small \\(under 1/s\\); "
                                             "check its unit$"),
    ({"brokers": {3: {"net_out_bytes_per_sec": "900B/s"}}}, "under 1 kB/s"),
]


@pytest.mark.parametrize(("raw", "message"), BAD)
def test_bad_capacities(raw: Any, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_capacities(raw)


def test_missing_capacity_names_the_broker() -> None:
    caps = parse_capacities({"default": {"disk_bytes": "1TB"}})
    with pytest.raises(InputError, match="broker 4 \\(rack r\\) has no capacity for net_in"):
        caps.for_broker(4, "r")


def test_unknown_broker_in_capacities_is_rejected() -> None:
    caps = parse_capacities({"brokers": {9: {"disk_bytes": "1TB"}}})
    t = Topology((Broker(1, "a", Capacity(1, 1, 1)),), ())
    with pytest.raises(InputError, match="unknown broker 9"):
        caps.apply(t)


def test_yaml_errors_are_one_line(tmp_path: Path) -> None:
    path = tmp_path / "caps.yaml"
    path.write_text("default: [unclosed\n")
    with pytest.raises(InputError, match="not valid YAML"):
        read_capacities(path)
    with pytest.raises(InputError, match="cannot read capacities file"):
        read_capacities(tmp_path / "missing.yaml")


@pytest.mark.parametrize(("raw", "kind"), [
    ({"version": 1, "brokers": [], "partitions": []}, "a snapshot file"),
    ({"version": 1, "partitions": [], "moves": []}, "a plan file"),
])
def test_a_snapshot_or_plan_given_as_capacities_is_named(raw: Any, kind: str) -> None:
    with pytest.raises(InputError, match=f"caps.json is {kind}, not a capacities file"):
        parse_capacities(raw, "caps.json")
