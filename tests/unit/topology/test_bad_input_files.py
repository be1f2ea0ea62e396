"""Malformed snapshot and capacities files through `rebalance show`: exit code 2 and a message
naming what to fix, never a stack trace."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Rebalance = Callable[..., tuple[int, str]]
CAP = {"disk_bytes": 1000, "net_in_bytes_per_sec": 100, "net_out_bytes_per_sec": 100}


def snapshot_doc() -> dict[str, Any]:
    return {
        "version": 1,
        "brokers": [{"id": 1, "rack": "a", "capacity": dict(CAP)},
                    {"id": 2, "rack": "b", "capacity": dict(CAP)}],
        "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2], "size_bytes": 100,
                        "bytes_in_per_sec": 10, "bytes_out_per_sec": 5}],
    }


def _set_capacity(key: str, value: object) -> Callable[[dict[str, Any]], None]:
    return lambda doc: doc["brokers"][0]["capacity"].__setitem__(key, value)


def _set_partition(key: str, value: object) -> Callable[[dict[str, Any]], None]:
    return lambda doc: doc["partitions"][0].__setitem__(key, value)


SNAPSHOT_CASES = {
    "infinite capacity": (_set_capacity("disk_bytes", float("inf")), "must be a finite number"),
    "NaN capacity": (_set_capacity("net_in_bytes_per_sec", float("nan")),
                     "must be a finite number"),
    "capacity beyond float": (_set_capacity("disk_bytes", 10**400), "implausibly large"),
    "NaN size": (_set_partition("size_bytes", float("nan")), "'size_bytes' must be a finite"),
    "infinite size": (_set_partition("size_bytes", float("inf")), "'size_bytes' must be a finite"),
    "NaN rate": (_set_partition("bytes_in_per_sec", float("nan")), "'bytes_in_per_sec' must be"),
    "infinite rate": (_set_partition("bytes_out_per_sec", float("inf")),
                      "'bytes_out_per_sec' must be a finite"),
    "notes as a string": (lambda doc: doc.__setitem__("notes", "hello"),
                          "'notes' must be a list of strings"),
}


@pytest.mark.parametrize("mutate, message", SNAPSHOT_CASES.values(), ids=SNAPSHOT_CASES.keys())
def test_bad_snapshot_values_are_input_errors(tmp_path: Path, rebalance: Rebalance,
                                              mutate: Callable[[dict[str, Any]], None],
                                              message: str) -> None:
    doc = snapshot_doc()
    mutate(doc)
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(doc))  # json writes NaN/Infinity, as some exporters do
    code, error = rebalance("show", str(path))
    assert code == 2
    assert message in error and str(path) in error


@pytest.mark.parametrize("content, message", [
    (bytes(range(256)), "not a JSON text file"),
    (b'{"version": 1, "brokers": ' + b"9" * 5000 + b"}", "not valid JSON"),
], ids=["binary", "integer too long"])
def test_unreadable_snapshot_is_an_input_error(tmp_path: Path, rebalance: Rebalance,
                                               content: bytes, message: str) -> None:
    path = tmp_path / "snap.json"
    path.write_bytes(content)
    code, error = rebalance("show", str(path))
    assert (code, message in error) == (2, True), error


def test_binary_snapshot_gives_one_line_without_traceback(tmp_path: Path) -> None:
    path = tmp_path / "snap.json"
    path.write_bytes(bytes(range(256)))
    result = subprocess.run([sys.executable, "-c", "import cli; cli.main()", "show", str(path)],
                            capture_output=True, text=True, timeout=60,
                            cwd=Path(__file__).resolve().parents[3])
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


LINES = ("disk_bytes: 2TB", "net_in_bytes_per_sec: 1MB/s", "net_out_bytes_per_sec: 1MB/s")


def _default(*lines: str) -> str:
    return "default:\n" + "".join(f"  {line}\n" for line in lines)


CAPACITY_CASES = {
    "binary": (bytes(range(256)), "not a YAML text file"),
    "key given twice": (_default(*LINES, "disk_bytes: 3TB").encode(),
                        "'disk_bytes' is given twice"),
    "broker given twice": ((_default(*LINES) + "brokers:\n  1: {disk_bytes: 1TB}\n"
                            "  1: {disk_bytes: 2TB}\n").encode(), "1 is given twice"),
    "rate for a size": (_default("disk_bytes: 2TB/s", *LINES[1:]).encode(), "drop the '/s'"),
    "bits": (_default(LINES[0], "net_in_bytes_per_sec: 1Gbps", LINES[2]).encode(),
             "looks like bits"),
    "negative with unit": (_default("disk_bytes: -2TB", *LINES[1:]).encode(),
                           "must be positive"),
    "NaN": (_default("disk_bytes: .nan", *LINES[1:]).encode(), "not a finite number"),
    "infinity": (_default(LINES[0], "net_in_bytes_per_sec: .inf", LINES[2]).encode(),
                 "not a finite number"),
    "overflowing string": (_default("disk_bytes: 1e400TB", *LINES[1:]).encode(),
                           "not a finite number"),
    "unknown rack": ((_default(*LINES) + "racks:\n  c: {disk_bytes: 1TB}\n").encode(),
                     "unknown rack 'c'"),
}


@pytest.mark.parametrize("content, message", CAPACITY_CASES.values(), ids=CAPACITY_CASES.keys())
def test_bad_capacities_are_input_errors(tmp_path: Path, rebalance: Rebalance, content: bytes,
                                         message: str) -> None:
    doc = snapshot_doc()
    for broker in doc["brokers"]:
        del broker["capacity"]
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(doc))
    caps = tmp_path / "caps.yaml"
    caps.write_bytes(content)
    code, error = rebalance("show", str(snap), "--capacities", str(caps))
    assert code == 2
    assert message in error


def test_yaml_merge_keys_are_not_duplicates(tmp_path: Path, rebalance: Rebalance) -> None:
    doc = snapshot_doc()
    for broker in doc["brokers"]:
        del broker["capacity"]
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(doc))
    caps = tmp_path / "caps.yaml"
    caps.write_text("default: &base {disk_bytes: 2TB, net_in_bytes_per_sec: 1MB/s, "
                    "net_out_bytes_per_sec: 1MB/s}\nracks:\n  a:\n    <<: *base\n"
                    "    disk_bytes: 3TB\n")
    code, output = rebalance("show", str(snap), "--capacities", str(caps))
    assert code == 0, output


def test_a_byte_order_mark_before_a_snapshot_is_passed_over(tmp_path: Path) -> None:
    """Some Windows editors save UTF-8 with a byte order mark: the document is the same."""
    from topology.snapshot import read_snapshot

    source = Path(__file__).resolve().parents[3] / "examples" / "cluster.json"
    marked = tmp_path / "bom.json"
    marked.write_bytes(b"\xef\xbb\xbf" + source.read_bytes())
    assert read_snapshot(marked) == read_snapshot(source)
