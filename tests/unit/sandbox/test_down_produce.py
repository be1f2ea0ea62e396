"""`sandbox down` on a dir without a sandbox, `down --purge`, `produce`'s argument checks and the
next commands `up` prints. No process is started: the state files name pids that are not ours."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from kafka_rebalance.commands.sandbox_cmd import next_commands
from kafka_rebalance.core.errors import InputError, SandboxError
from kafka_rebalance.sandbox import cluster, teardown
from kafka_rebalance.sandbox.produce import (
    MB,
    ProduceRequest,
    _layout,
    check_request,
    message_sizes,
    needed_disk_bytes,
)
from kafka_rebalance.sandbox.state import (
    MARKER_FILE,
    BrokerInfo,
    SandboxInfo,
    check_up_dir,
    is_sandbox_dir,
    write_marker,
    write_state,
)
from tests.unit.conftest import Rebalance
from topology.units import size_text


def _info(sandbox_dir: Path, racks: tuple[str, ...] = ("a", "b", "a", "b")) -> SandboxInfo:
    brokers = tuple(BrokerInfo(i, rack, 29091 + i, 29400 + i, 0)
                    for i, rack in enumerate(racks, start=1))
    return SandboxInfo(dir=sandbox_dir, base_port=29090, cluster_id="c", jar_dir=Path("/jars"),
                       controller_port=29091, controller_pid=0, prometheus_port=29090,
                       prometheus_pid=0, brokers=brokers, internal_rf=3)


def _stopped_sandbox(sandbox_dir: Path, created_dir: bool = False) -> dict[str, int]:
    """A sandbox dir as `up` leaves it (processes gone): every entry it writes, with sizes."""
    sandbox_dir.mkdir(exist_ok=True)
    write_marker(sandbox_dir, created_dir)
    files = {"broker-1/data/orders-0/00000.log": 3000, "broker-2/server.properties": 10,
             "controller/data/meta.log": 500, "prometheus-data/chunks/000001": 7000,
             "logs/broker-1.log": 40, "prometheus.yml": 5, "exporter.yml": 6,
             "log4j2.properties": 7, "capacities.yaml": 8}
    for name, size in files.items():
        path = sandbox_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * size)
    return files


# --- down ------------------------------------------------------------------------------------


def test_down_on_a_dir_without_a_sandbox_exits_7_and_says_where_it_looked(
        tmp_path: Path, rebalance: Rebalance) -> None:
    nosuch = tmp_path / "nosuch"
    code, message = rebalance("sandbox", "down", "--dir", str(nosuch))
    assert code == 7
    assert f"no sandbox in {nosuch}" in message
    assert "--dir, else $REBALANCE_SANDBOX_DIR, else ./.sandbox" in message
    assert not nosuch.exists()
    # An existing dir of other files is no sandbox either, with or without --purge.
    (tmp_path / "notes.txt").write_text("mine")
    code, _ = rebalance("sandbox", "down", "--purge", "--dir", str(tmp_path))
    assert code == 7
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_the_python_down_stays_quiet_on_an_unknown_dir(tmp_path: Path) -> None:
    assert cluster.down(tmp_path / "nosuch") == []
    with pytest.raises(SandboxError, match="no sandbox in"):
        teardown.take_down(tmp_path / "nosuch")


def test_down_on_a_stopped_sandbox_succeeds_and_keeps_the_data(
        tmp_path: Path, rebalance: Rebalance) -> None:
    sandbox_dir = tmp_path / "sb"
    _stopped_sandbox(sandbox_dir)
    write_state(_info(sandbox_dir))
    code, output = rebalance("sandbox", "down", "--dir", str(sandbox_dir))
    assert code == 0, output
    assert "nothing running in" in output
    assert not (sandbox_dir / "state.json").exists()
    assert (sandbox_dir / "broker-1/data/orders-0/00000.log").exists()
    assert is_sandbox_dir(sandbox_dir)  # the marker stays: `down` again, `up` again, `--purge`
    code, _ = rebalance("sandbox", "down", "--dir", str(sandbox_dir))
    assert code == 0


def test_purge_deletes_only_what_the_sandbox_wrote(tmp_path: Path, rebalance: Rebalance) -> None:
    sandbox_dir = tmp_path / "sb"
    files = _stopped_sandbox(sandbox_dir)
    write_state(_info(sandbox_dir))
    (sandbox_dir / "notes.txt").write_text("mine")
    (sandbox_dir / "broker-notes.txt").write_text("mine too")
    (sandbox_dir / "broker-x").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.bin").write_bytes(b"k" * 100)
    (sandbox_dir / "broker-9").symlink_to(outside, target_is_directory=True)
    written = sum(files.values()) + (sandbox_dir / MARKER_FILE).stat().st_size
    code, output = rebalance("sandbox", "down", "--purge", "--dir", str(sandbox_dir))
    assert code == 0, output
    left = sorted(p.name for p in sandbox_dir.iterdir())
    assert left == ["broker-9", "broker-notes.txt", "broker-x", "notes.txt"]
    assert (outside / "keep.bin").read_bytes() == b"k" * 100  # a symlink is never followed
    # state.json is deleted by down
    assert f"deleted {size_text(written, compact=True)} of sandbox data" in output
    assert "broker-1/, broker-2/, capacities.yaml" in output


def test_purge_removes_a_dir_up_created_and_refuses_while_processes_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sandbox_dir = tmp_path / "sb"
    _stopped_sandbox(sandbox_dir, created_dir=True)
    monkeypatch.setattr(cluster, "sandbox_pids", lambda d: [4242])
    with pytest.raises(SandboxError, match=r"still run .* nothing was deleted"):
        teardown.purge(sandbox_dir)
    assert (sandbox_dir / "prometheus-data/chunks/000001").exists()
    monkeypatch.undo()
    result = teardown.purge(sandbox_dir)
    assert result.dir_removed and not sandbox_dir.exists()
    assert result.removed[-1] == MARKER_FILE
    assert result.freed_bytes > 10_000


def test_up_accepts_a_stopped_sandbox_dir_but_not_a_foreign_one(tmp_path: Path) -> None:
    sandbox_dir = tmp_path / "sb"
    _stopped_sandbox(sandbox_dir)
    check_up_dir(sandbox_dir, force=False)  # no state.json, but the marker says it is ours
    foreign = tmp_path / "project"
    (foreign / "logs").mkdir(parents=True)
    with pytest.raises(InputError, match="is not a sandbox but holds logs"):
        check_up_dir(foreign, force=False)


# --- produce ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("request_", "message"), [
    (ProduceRequest("bad topic", 1), "is not a name Kafka accepts"),
    (ProduceRequest("x" * 250, 1), "is not a name Kafka accepts"),
    (ProduceRequest("..", 1), "is not a name Kafka accepts"),
    (ProduceRequest("__consumer_offsets", 1), "internal topics"),
    (ProduceRequest("orders", 0), "--mb must be between 1"),
    (ProduceRequest("orders", 1, partitions=0), "--partitions must be between 1 and 1000"),
    (ProduceRequest("orders", 1, partitions=1001), "--partitions must be between 1 and 1000"),
    (ProduceRequest("orders", 1, replication_factor=0), "--replication-factor must be at least"),
], ids=["space", "too long", "dots", "internal", "no data", "no partitions", "too many",
        "rf 0"])
def test_produce_refuses_bad_arguments(request_: ProduceRequest, message: str) -> None:
    with pytest.raises(InputError, match=message):
        check_request(request_)


def test_produce_checks_arguments_before_looking_for_the_sandbox(
        tmp_path: Path, rebalance: Rebalance) -> None:
    nosuch = str(tmp_path / "nosuch")
    code, message = rebalance("sandbox", "produce", "a/b", "--mb", "1", "--dir", nosuch)
    assert (code, "'a/b' is not a name Kafka accepts" in message) == (2, True), message
    code, message = rebalance("sandbox", "produce", "orders", "--mb", "1", "--dir", nosuch)
    assert (code, f"no sandbox in {nosuch}" in message) == (7, True), message


def test_replication_factor_above_the_brokers_is_refused(tmp_path: Path) -> None:
    info = _info(tmp_path)
    with pytest.raises(InputError, match="--replication-factor 5 needs at least 5 brokers; "
                                         "the sandbox has 4"):
        _layout(ProduceRequest("orders", 1, replication_factor=5), len(info.brokers))
    assert _layout(ProduceRequest("orders", 1), 2) == (6, 2)
    assert _layout(ProduceRequest("orders", 1, 12, 3), 4) == (12, 3)


def test_message_sizes_add_up_to_the_request() -> None:
    assert message_sizes(3 * MB) == [100_000] * 30
    assert message_sizes(250_001, 100_000) == [100_000, 100_000, 50_001]
    assert sum(message_sizes(7 * MB + 3)) == 7 * MB + 3
    assert needed_disk_bytes(100 * MB, 3) == 300 * MB


# --- up's next commands ----------------------------------------------------------------------


def test_up_prints_the_loop_with_its_own_ports_and_dir(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REBALANCE_SANDBOX_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    sandbox_dir = tmp_path / "my sandbox"
    info = _info(sandbox_dir, racks=("a", "b", "a", "b", "a"))
    commands = [command for command, _ in next_commands(info, sandbox_dir)]
    bootstrap = "127.0.0.1:29092,127.0.0.1:29093,127.0.0.1:29094,127.0.0.1:29095,127.0.0.1:29096"
    quoted_dir = shlex.quote(str(sandbox_dir))
    assert commands == [
        f"rebalance sandbox produce orders --mb 100 --partitions 12 --dir {quoted_dir}",
        f"rebalance sandbox add-broker --rack b --dir {quoted_dir}",
        f"rebalance snapshot --bootstrap {bootstrap} --prometheus http://127.0.0.1:29090 "
        f"--capacities {shlex.quote(str(sandbox_dir / 'capacities.yaml'))} --out cluster.json",
        "rebalance plan --snapshot cluster.json --add-broker 6 --out plan.json",
        f"rebalance execute plan.json --bootstrap {bootstrap} "
        "--prometheus http://127.0.0.1:29090 --max-mbps 5",
        "rebalance status plan.json",
        f"rebalance sandbox down --dir {quoted_dir}",
    ]
    # In the default dir the sandbox commands need no --dir.
    default = tmp_path / ".sandbox"
    lines = [c for c, _ in next_commands(_info(default), default)]
    assert lines[0] == "rebalance sandbox produce orders --mb 100 --partitions 12"
    assert lines[-1] == "rebalance sandbox down"


def test_the_capacities_file_up_writes_is_read_by_the_tool(tmp_path: Path) -> None:
    from kafka_rebalance.sandbox.config import capacities_yaml
    from topology.capacities import read_capacities

    path = tmp_path / "capacities.yaml"
    path.write_text(capacities_yaml())
    example = Path(__file__).resolve().parents[3] / "examples" / "sandbox-capacities.yaml"
    assert read_capacities(path) == read_capacities(example)


def test_marker_keeps_whether_up_created_the_dir(tmp_path: Path) -> None:
    write_marker(tmp_path, created_dir=True)
    write_marker(tmp_path, created_dir=False)  # a later `up` does not forget it
    assert json.loads((tmp_path / MARKER_FILE).read_text())["created_dir"] is True


def test_ports_in_the_ephemeral_range_are_told_with_a_base_port_that_avoids_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kafka_rebalance.sandbox import ports

    info = _info(tmp_path)  # ports 29090..29404
    monkeypatch.setattr(ports, "_ephemeral_low", lambda: 32768)
    assert ports.ephemeral_overlap(info) == ""
    monkeypatch.setattr(ports, "_ephemeral_low", lambda: 29300)
    said = ports.ephemeral_overlap(info)
    assert said.startswith("the sandbox's ports (29090..29404) reach the kernel's ephemeral "
                           "range (from 29300)"), said
    assert said.endswith("a --base-port of 28985 or less keeps them out of it"), said
