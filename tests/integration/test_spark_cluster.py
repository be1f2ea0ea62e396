"""The weights job on a real Spark standalone cluster: a master and two workers on loopback.

The master and workers come from the PySpark distribution (`bin/spark-class`; the wheel ships no
`sbin/start-master.sh`). The job runs with `--master spark://...` and must give the same weights
as local mode. Every JVM started here is stopped, executors included (one process group each).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pyspark
import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SPARK_HOME = Path(pyspark.__file__).resolve().parent
T0_US = 1_767_571_200_000_000


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _spark_env(work: Path) -> dict[str, str]:
    env = dict(os.environ, SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1",
               SPARK_DAEMON_MEMORY="256m", SPARK_WORKER_DIR=str(work / "worker"),
               SPARK_LOG_DIR=str(work / "logs"), PYSPARK_PYTHON=sys.executable)
    env.pop("SPARK_CONF_DIR", None)
    return env


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), *args], env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    with contextlib.suppress(ProcessLookupError):  # a worker's executors share its group
        os.killpg(proc.pid, signal.SIGKILL)


def _alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json", timeout=5) as answer:
            return int(json.load(answer).get("aliveworkers", 0))
    except OSError:
        return 0


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("spark-cluster")
    env = _spark_env(work)
    port, ui_port = _free_port(), _free_port()
    master_url = f"spark://127.0.0.1:{port}"
    procs = [_start(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                     "--port", str(port), "--webui-port", str(ui_port)], env, work / "master.log")]
    try:
        for index in range(2):
            procs.append(_start(
                ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                 "--webui-port", str(_free_port()), "--cores", "1", "--memory", "768m",
                 "--work-dir", str(work / f"worker-{index}"), master_url],
                env, work / f"worker-{index}.log"))
        deadline = time.monotonic() + 120
        while _alive_workers(ui_port) < 2:
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                logs = "\n".join(p.read_text()[-2000:] for p in sorted(work.glob("*.log")))
                pytest.fail(f"standalone cluster did not come up with 2 workers:\n{logs}")
            time.sleep(1)
        yield master_url
    finally:
        for proc in reversed(procs):
            _stop(proc)


def _history(path: Path) -> None:
    rng = np.random.default_rng(3)
    n_parts, steps = 6, 3000
    ts = np.repeat(T0_US + np.arange(steps) * 60_000_000, n_parts)
    part = np.tile(np.arange(n_parts), steps)
    rates = (part + 1) * 1000.0 * rng.lognormal(0, 0.3, len(ts))
    size = (part + 1) * 10**8 + (ts - T0_US) // 1000
    path.mkdir()
    pq.write_table(pa.table({
        "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
        "topic": pa.array(np.where(part < 3, "orders", "clicks"), pa.string()),
        "partition": pa.array(part % 3, pa.int32()),
        "bytes_in_per_sec": rates, "bytes_out_per_sec": rates * 2,
        "size_bytes": pa.array(size, pa.int64(), mask=rng.random(len(ts)) < 0.05),
    }), path / "part-00000.parquet")
    (path / "_notes.json").write_text(json.dumps(
        {"version": 1, "start": "2026-01-05T00:00:00+00:00", "step_seconds": 60}))


def _run_job(history: Path, out: Path, master: str, extra_env: dict[str, str]) -> None:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, **extra_env)
    done = subprocess.run(
        [sys.executable, "-m", "spark_jobs.weights", "--history", str(history), "--out", str(out),
         "--master", master], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


def _rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_cluster_mode_matches_local_mode(spark_cluster: str, tmp_path: Path) -> None:
    history = tmp_path / "history"
    _history(history)
    cluster_out, local_out = tmp_path / "cluster.json", tmp_path / "local.json"
    submit_args = ("--conf spark.executor.memory=512m --conf spark.executor.cores=1 "
                   "--conf spark.cores.max=2 pyspark-shell")
    _run_job(history, cluster_out, spark_cluster, {"PYSPARK_SUBMIT_ARGS": submit_args})
    _run_job(history, local_out, "local[2]", {})
    cluster, local = _rows(cluster_out), _rows(local_out)
    assert [(r["topic"], r["partition"]) for r in cluster] == [
        ("clicks", 0), ("clicks", 1), ("clicks", 2), ("orders", 0), ("orders", 1), ("orders", 2)]
    for got, want in zip(cluster, local, strict=True):
        assert got["size_growth_bytes_per_day"] == pytest.approx(
            want["size_growth_bytes_per_day"], rel=1e-9)
        assert {k: v for k, v in got.items() if k != "size_growth_bytes_per_day"} == {
            k: v for k, v in want.items() if k != "size_growth_bytes_per_day"}
    # Sizes grow one byte per millisecond: 86.4 MB per day.
    assert all(r["size_growth_bytes_per_day"] == pytest.approx(86_400_000, rel=1e-6)
               for r in local)
    # The busiest partition (clicks 2 = index 5) gets the highest rate.
    assert max(cluster, key=lambda r: r["bytes_in_per_sec"])["partition"] == 2
