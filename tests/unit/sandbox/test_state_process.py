"""Sandbox state file round trip and process helpers (real, tiny child processes)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from kafka_rebalance.core.errors import SandboxError
from kafka_rebalance.sandbox import process
from kafka_rebalance.sandbox.state import BrokerInfo, SandboxInfo, read_state, write_state


def make_info(tmp_path: Path) -> SandboxInfo:
    brokers = (BrokerInfo(1, "a", 29092, 29401, 11), BrokerInfo(2, "b", 29093, 29402, 12))
    return SandboxInfo(dir=tmp_path, base_port=29090, cluster_id="abc", jar_dir=Path("/jars"),
                       controller_port=29091, controller_pid=10, prometheus_port=29090,
                       prometheus_pid=13, brokers=brokers, internal_rf=2)


def test_state_round_trips_and_derives_addresses(tmp_path: Path) -> None:
    info = make_info(tmp_path)
    write_state(info)
    assert read_state(tmp_path) == info
    assert info.bootstrap == "127.0.0.1:29092,127.0.0.1:29093"
    assert info.prometheus_url == "http://127.0.0.1:29090"
    assert info.pids() == {"broker-1": 11, "broker-2": 12, "controller": 10, "prometheus": 13}
    grown = info.with_broker(BrokerInfo(3, "a", 29094, 29403, 14))
    assert [b.id for b in grown.brokers] == [1, 2, 3] and len(info.brokers) == 2


def test_missing_state_is_none_and_garbage_is_an_error(tmp_path: Path) -> None:
    assert read_state(tmp_path) is None
    (tmp_path / "state.json").write_text('{"dir": "/x"}')
    with pytest.raises(SandboxError, match="not a sandbox state file"):
        read_state(tmp_path)


def test_port_in_use_sees_a_listener() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert process.port_in_use(port)
        assert process.port_open(port)
    assert not process.port_in_use(port)


def test_stop_terminates_the_process_group(tmp_path: Path) -> None:
    marker = f"{tmp_path}/"
    # A shell whose own child must die with it (same process group).
    pid = process.spawn(["sh", "-c", "sleep 60 & wait", f"{marker}x"], tmp_path / "log",
                        tmp_path)
    assert process.is_ours(pid, marker)
    assert not process.is_ours(pid, "/somewhere/else/")
    assert process.stop([pid], marker, grace_s=5) == []
    assert not process.is_ours(pid, marker)
    assert not process._group_alive(pid)
    live_members = [p for p in Path("/proc").iterdir()
                    if p.name.isdigit() and _pgid_and_state(p) not in ((pid, "Z"), (-1, ""))
                    and _pgid_and_state(p)[0] == pid]
    assert live_members == []


def _pgid_and_state(proc_dir: Path) -> tuple[int, str]:
    """(process group, state) of a /proc entry; zombies (Z) have exited already."""
    try:
        fields = (proc_dir / "stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[2]), fields[0]
    except (OSError, IndexError, ValueError):
        return -1, ""


def test_exit_description_names_the_signal_or_code(tmp_path: Path) -> None:
    killed = process.spawn(["sh", "-c", "kill -9 $$"], tmp_path / "a", tmp_path)
    failed = process.spawn(["sh", "-c", "exit 3"], tmp_path / "b", tmp_path)
    for _ in range(100):
        if not (process.is_ours(killed, "sh") or process.is_ours(failed, "sh")):
            break
        time.sleep(0.1)
    assert process.exit_description(killed) == "killed by SIGKILL"
    assert process.exit_description(failed) == "exit code 3"
