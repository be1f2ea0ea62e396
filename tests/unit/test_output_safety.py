"""Output paths: a refused command writes nothing and touches no input or existing file.

Every refusal is exit code 2 with a one-line message, happens before any work (reading the
cluster, solving, starting Spark or a sandbox), and leaves every file's bytes as they were.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_rebalance.commands import sandbox_cmd
from kafka_rebalance.core.errors import ClusterError, MetricsError, SandboxError
from kafka_rebalance.files import outputs
from kafka_rebalance.usecases import plan as plan_usecase
from kafka_rebalance.usecases.history import is_weights_output

Rebalance = Callable[..., tuple[int, str]]

CAP = {"disk_bytes": 1000, "net_in_bytes_per_sec": 1000, "net_out_bytes_per_sec": 1000}
WEIGHTS_ROW = {"topic": "t", "partition": 0, "bytes_in_per_sec": 1.0, "bytes_out_per_sec": 1.0,
               "size_bytes": 100, "size_growth_bytes_per_day": 0.0}


def snapshot_doc() -> dict[str, Any]:
    return {"version": 1,
            "brokers": [{"id": i, "rack": "a" if i % 2 else "b", "capacity": CAP}
                        for i in (1, 2, 3, 4)],
            "partitions": [{"topic": "t", "partition": n, "replicas": r, "size_bytes": 100}
                           for n, r in {0: [1, 2], 1: [3, 2], 2: [2, 1], 3: [2, 3]}.items()]}


def plan_doc() -> dict[str, Any]:
    return {"version": 1, "partitions": [], "moves": [], "fingerprint": "x"}


def files_under(root: Path) -> dict[str, bytes]:
    """Every file and link under `root` with its bytes (a link: where it points)."""
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            found[str(path.relative_to(root))] = os.readlink(path).encode()
        elif path.is_file():
            found[str(path.relative_to(root))] = path.read_bytes()
        else:
            found[str(path.relative_to(root)) + "/"] = b""
    return found


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Inputs and bystanders of the plan command, and the cwd of the test."""
    (tmp_path / "snap.json").write_text(json.dumps(snapshot_doc()))
    (tmp_path / "old-snap.json").write_text(json.dumps(snapshot_doc()))
    (tmp_path / "caps.yaml").write_text("default: {disk_bytes: 1GB, net_in_bytes_per_sec: "
                                        "1000, net_out_bytes_per_sec: 1000}\n")
    (tmp_path / "weights.json").write_text(json.dumps(WEIGHTS_ROW) + "\n")
    (tmp_path / "client.properties").write_text("security.protocol=PLAINTEXT\n")
    (tmp_path / "notes.txt").write_text("keep me\n")
    (tmp_path / "plan.json").write_text(json.dumps(plan_doc()))
    (tmp_path / "plan.json.journal").write_text('{"kind": "run"}\n')
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "README").write_text("mine\n")
    (tmp_path / "hard.json").hardlink_to(tmp_path / "snap.json")
    (tmp_path / "link.yaml").symlink_to(tmp_path / "caps.yaml")
    monkeypatch.chdir(tmp_path)
    return tmp_path


PLAN_INPUTS = ["--snapshot", "snap.json", "--capacities", "caps.yaml", "--weights",
               "weights.json", "--command-config", "client.properties"]


@pytest.mark.parametrize("out, force, message", [
    ("snap.json", False, "--out snap.json is the --snapshot file snap.json"),
    ("snap.json", True, "--out snap.json is the --snapshot file snap.json"),
    ("./sub/../snap.json", True, "is the --snapshot file snap.json"),
    ("hard.json", True, "--out hard.json is the --snapshot file"),
    ("caps.yaml", True, "is the --capacities file"),
    ("link.yaml", True, "is the --capacities file"),
    ("weights.json", True, "is the --weights file"),
    ("client.properties", True, "is the --command-config file"),
    ("notes.txt", False, "--out notes.txt exists and is not a plan written by rebalance"),
    ("old-snap.json", False, "exists and is not a plan written by rebalance; choose another "
                             "--out path, or pass --force"),
    ("project", True, "--out project: it is a directory"),
    ("/dev/null", True, "is not a regular file"),
    ("plan.json", True, "the journal plan.json.journal of a run of that plan exists"),
], ids=["snapshot", "snapshot forced", "snapshot by another spelling", "snapshot hard link",
        "capacities", "capacities symlink", "weights", "command config", "unrelated file",
        "a snapshot that is no input", "directory", "device", "plan with a journal"])
def test_plan_refuses_an_output_before_any_work(
        workdir: Path, rebalance: Rebalance, monkeypatch: pytest.MonkeyPatch, out: str,
        force: bool, message: str) -> None:
    def no_reading(*args: object) -> None:
        raise AssertionError("the inputs were read before the output was checked")

    monkeypatch.setattr(plan_usecase, "load_topology", no_reading)
    (workdir / "sub").mkdir()
    before = files_under(workdir)
    code, error = rebalance("plan", *PLAN_INPUTS, "--out", out, *(["--force"] if force else []))
    assert (code, message in error, "\n" in error) == (2, True, False), error
    assert files_under(workdir) == before


def test_plan_replaces_its_own_plan_and_with_force_any_file(workdir: Path,
                                                            rebalance: Rebalance) -> None:
    (workdir / "plan.json.journal").unlink()
    code, output = rebalance("plan", "--snapshot", "snap.json", "--out", "plan.json",
                             "--time-limit", "5")
    assert code == 0, output
    assert outputs.is_plan_file(workdir / "plan.json")
    assert json.loads((workdir / "plan.json").read_text())["fingerprint"] != "x"
    code, output = rebalance("plan", "--snapshot", "snap.json", "--out", "notes.txt",
                             "--time-limit", "5", "--force")
    assert code == 0, output
    assert outputs.is_plan_file(workdir / "notes.txt")


def test_refusal_through_main_is_one_line_on_stderr(workdir: Path, rebalance_main: Any) -> None:
    before = files_under(workdir)
    result = rebalance_main("plan", "--snapshot", "snap.json", "--out", "snap.json")
    assert result.code == 2
    assert result.err_lines == ["error: --out snap.json is the --snapshot file snap.json: "
                                "writing the plan there would overwrite an input of this "
                                "command; choose another --out path"]
    assert result.out == ""
    assert files_under(workdir) == before


# ---- snapshot ---------------------------------------------------------------------------


@pytest.mark.parametrize("out, message", [
    ("caps.yaml", "is the --capacities file"),
    ("client.properties", "is the --command-config file"),
    ("notes.txt", "exists and is not a snapshot written by rebalance"),
    ("plan.json", "exists and is not a snapshot written by rebalance"),
    ("project", "it is a directory"),
])
def test_snapshot_refuses_an_output_before_contacting_kafka(
        workdir: Path, rebalance: Rebalance, monkeypatch: pytest.MonkeyPatch, out: str,
        message: str) -> None:
    from topology import kafka_admin

    def no_kafka(*args: object, **kwargs: object) -> None:
        raise AssertionError("Kafka was contacted before the output was checked")

    monkeypatch.setattr(kafka_admin, "KafkaClusterAdmin", no_kafka)
    before = files_under(workdir)
    code, error = rebalance("snapshot", "--bootstrap", "127.0.0.1:1", "--capacities",
                            "caps.yaml", "--command-config", "client.properties", "--out", out)
    assert (code, message in error, "\n" in error) == (2, True, False), error
    assert files_under(workdir) == before


@pytest.mark.parametrize("out, force", [("old-snap.json", False), ("new.json", False),
                                        ("notes.txt", True)])
def test_snapshot_may_write_a_new_file_its_own_snapshot_or_forced(
        workdir: Path, rebalance: Rebalance, monkeypatch: pytest.MonkeyPatch, out: str,
        force: bool) -> None:
    """The output check passes: the command goes on to contact Kafka (here: unreachable)."""
    from topology import kafka_admin

    def unreachable(*args: object, **kwargs: object) -> None:
        raise ClusterError("unreachable (test)")

    monkeypatch.setattr(kafka_admin, "KafkaClusterAdmin", unreachable)
    code, error = rebalance("snapshot", "--bootstrap", "127.0.0.1:1", "--out", out,
                            *(["--force"] if force else []))
    assert (code, error) == (3, "unreachable (test)")


# ---- weights and history export ------------------------------------------------------------


@pytest.mark.parametrize("out, force, message", [
    ("notes.txt", False, "--out notes.txt exists and is not a weights file written by rebalance"),
    ("plan.json", False, "exists and is not a weights file"),
    ("project", True, "is a directory with other files in it"),
    ("notes.txt", True, "--master 'bogus'"),  # forced: the next check speaks
    ("weights.json", False, "--master 'bogus'"),  # an earlier weights file may be replaced
])
def test_weights_output_is_checked_before_spark(workdir: Path, rebalance: Rebalance, out: str,
                                                force: bool, message: str) -> None:
    history = workdir / "history"
    history.mkdir()
    (history / "part-0.parquet").write_bytes(b"PAR1")
    before = files_under(workdir)
    code, error = rebalance("weights", "--history", "history", "--out", out, "--master",
                            "bogus", *(["--force"] if force else []))
    assert (code, message in error) == (2, True), error
    assert files_under(workdir) == before


def test_weights_outputs_are_recognized(tmp_path: Path) -> None:
    parquet = tmp_path / "w.parquet"
    pq.write_table(pa.Table.from_pylist([WEIGHTS_ROW]), parquet)
    lines = tmp_path / "w.json"
    lines.write_text(json.dumps(WEIGHTS_ROW) + "\n")
    spark_dir = tmp_path / "w-dir"
    spark_dir.mkdir()
    (spark_dir / "part-00000-x.snappy.parquet").write_bytes(b"x")
    (spark_dir / "_SUCCESS").write_bytes(b"")
    history = tmp_path / "h.parquet"
    pq.write_table(pa.Table.from_pylist([{"ts": 1, "topic": "t", "partition": 0}]), history)
    other = tmp_path / "o.json"
    other.write_text('{"topic": "t"}\n')
    assert [is_weights_output(p) for p in (parquet, lines, spark_dir)] == [True] * 3
    assert [is_weights_output(p) for p in (history, other)] == [False, False]
    (spark_dir / "README").write_text("mine")
    assert not is_weights_output(spark_dir)


def test_history_export_refuses_a_used_directory_before_prometheus(
        workdir: Path, rebalance: Rebalance, monkeypatch: pytest.MonkeyPatch) -> None:
    from topology import prom_source

    def no_prometheus(*args: object) -> None:
        raise AssertionError("Prometheus was contacted before the output was checked")

    monkeypatch.setattr(prom_source, "PrometheusMetrics", no_prometheus)
    before = files_under(workdir)
    for out in ("project", "notes.txt"):
        code, error = rebalance("history", "export", "--prometheus", "http://127.0.0.1:1",
                                "--out", out)
        assert (code, "exists and is not an empty directory" in error) == (2, True), error
    assert files_under(workdir) == before


def test_a_failed_export_leaves_no_directory(workdir: Path, rebalance: Rebalance,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from topology import prom_source

    class Unreachable:
        def __init__(self, url: str, timeout_s: int = 0) -> None:
            pass

        def query_range(self, *args: object) -> None:
            raise MetricsError("unreachable (test)")

    monkeypatch.setattr(prom_source, "PrometheusMetrics", Unreachable)
    code, error = rebalance("history", "export", "--prometheus", "http://127.0.0.1:1",
                            "--out", "new-history")
    assert (code, error) == (4, "unreachable (test)")
    assert not (workdir / "new-history").exists()


# ---- sandbox up --dir -----------------------------------------------------------------------


@pytest.mark.parametrize("setup, force, message", [
    ("file", True, "--dir target is a file, not a directory"),
    ("logs", False, "--dir target is not a sandbox but holds broker-1, logs, prometheus.yml"),
], ids=["a file", "a directory of other files"])
def test_sandbox_up_refuses_a_dir_before_starting(
        workdir: Path, rebalance: Rebalance, monkeypatch: pytest.MonkeyPatch, setup: str,
        force: bool, message: str) -> None:
    def no_start(*args: object, **kwargs: object) -> None:
        raise AssertionError("the sandbox was started")

    monkeypatch.setattr(sandbox_cmd.cluster, "up", no_start)
    target = workdir / "target"
    if setup == "file":
        target.write_text("not a directory\n")
    else:
        for name in ("logs", "broker-1"):
            (target / name).mkdir(parents=True)
            (target / name / "keep.txt").write_text("mine\n")
        (target / "prometheus.yml").write_text("mine\n")
    before = files_under(workdir)
    code, error = rebalance("sandbox", "up", "--dir", "target", *(["--force"] if force else []))
    assert (code, message in error, "\n" in error) == (2, True, False), error
    assert files_under(workdir) == before


@pytest.mark.parametrize("setup, force", [("missing", False), ("empty", False),
                                          ("unrelated files", False), ("logs", True)])
def test_sandbox_up_uses_a_new_empty_or_forced_dir(
        workdir: Path, rebalance: Rebalance, monkeypatch: pytest.MonkeyPatch, setup: str,
        force: bool) -> None:
    def started(*args: object, **kwargs: object) -> None:
        raise SandboxError("started (test)")

    monkeypatch.setattr(sandbox_cmd.cluster, "up", started)
    target = workdir / "target"
    if setup != "missing":
        target.mkdir()
    if setup == "unrelated files":
        (target / "notes.txt").write_text("never touched by up\n")
    if setup == "logs":
        (target / "logs").mkdir()
    code, error = rebalance("sandbox", "up", "--dir", "target", *(["--force"] if force else []))
    assert (code, error) == (7, "started (test)")


@pytest.mark.parametrize(("args", "shown"), [
    (["plan", "--snapshot", "SNAP", "--out", "plans/"], "--out plans/: ends with '/'"),
    (["plan", "--snapshot", "SNAP", "--out=plans/"], "(such as plans/plan.json)"),
    (["diff", "PLAN", "--html", "pages/"], "(such as pages/report.html)"),
    (["snapshot", "--bootstrap", "127.0.0.1:1", "--out", "snaps/"], "snaps/snapshot.json"),
])
def test_a_file_output_with_a_trailing_slash_is_refused_as_typed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rebalance_main: Any,
        args: list[str], shown: str) -> None:
    """The command's path loses the slash ('plans/' -> 'plans'): without this refusal the plan
    would be written as a file named like the directory the operator meant."""
    monkeypatch.chdir(tmp_path)
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(snapshot_doc()))
    argv = [str(snap) if a in ("SNAP", "PLAN") else a for a in args]
    result = rebalance_main(*argv)
    assert result.code == 2, result
    assert shown in result.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snap.json"]
