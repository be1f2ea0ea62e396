"""History export and weights end to end on the real sandbox: uneven traffic -> uneven weights.

Two hot and two cold partitions of a fresh topic get traffic for a while; `rebalance history
export` reads the sandbox's real Prometheus, `rebalance weights` runs the Spark job, and the hot
partitions must come out with the higher rates and sizes. Then `rebalance plan --weights`
must see those rates (the plan's loads differ from a plan without weights).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pandas as pd
import pytest
import requests
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic

from kafka_rebalance.sandbox.state import SandboxInfo
from tests.integration.kafka_topics import create_topics

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
HOT, COLD = (0, 1), (2, 3)
VALUE = b"h" * 1000


def _cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _create_topic(sandbox: SandboxInfo, topic: str) -> None:
    ids = [b.id for b in sandbox.brokers]
    assignment = [[ids[p % len(ids)], ids[(p + 1) % len(ids)]] for p in range(4)]
    create_topics(sandbox.bootstrap, [NewTopic(topic, 4, replica_assignment=assignment)])


def _produce_uneven(sandbox: SandboxInfo, topic: str, seconds: float) -> None:
    """Each second: 200 messages to each hot partition, 5 to each cold one."""
    producer = Producer({"bootstrap.servers": sandbox.bootstrap, "linger.ms": 5})
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for partition in HOT:
            for _ in range(200):
                producer.produce(topic, VALUE, partition=partition)
        for partition in COLD:
            for _ in range(5):
                producer.produce(topic, VALUE, partition=partition)
        producer.flush(10)
        time.sleep(1)


def _wait_for_series(prometheus_url: str, topic: str, timeout_s: float = 60) -> None:
    query = (f'count(kafka_log_size_bytes{{topic="{topic}"}}) and '
             f'count(kafka_topic_bytes_in_total{{topic="{topic}"}})')
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        answer = requests.get(f"{prometheus_url}/api/v1/query", params={"query": query},
                              timeout=10).json()
        if answer["data"]["result"]:
            return
        time.sleep(2)
    raise AssertionError(f"Prometheus has no size and rate series for {topic}")


def test_hot_partitions_get_the_higher_weights(sandbox: SandboxInfo, tmp_path: Path) -> None:
    topic = f"history-{uuid.uuid4().hex[:8]}"
    _create_topic(sandbox, topic)
    _produce_uneven(sandbox, topic, 5)
    _wait_for_series(sandbox.prometheus_url, topic)
    _produce_uneven(sandbox, topic, 8)
    history = tmp_path / "history"
    exported = _cli("history", "export", "--prometheus", sandbox.prometheus_url,
                    "--since", "3m", "--step", "5s", "--out", str(history))
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert "split over the topic's partitions" in exported.stderr  # notes go to stderr
    assert json.loads((history / "_notes.json").read_text())["rates_split_by_size"] is True
    rows = pd.read_parquet(history)
    assert set(rows[rows["topic"] == topic]["partition"]) == {0, 1, 2, 3}

    weights_file = tmp_path / "weights.json"
    # Three minutes of history: growth is measured only when asked for (default: 1d at least).
    weighed = _cli("weights", "--history", str(history), "--out", str(weights_file),
                   "--master", "local[1]", "--min-growth-span", "0")
    assert weighed.returncode == 0, weighed.stdout + weighed.stderr
    assert "the history spans only" in weighed.stderr
    weights = pd.read_json(weights_file, lines=True)
    mine = weights[weights["topic"] == topic].set_index("partition")
    assert len(mine) == 4
    for hot in HOT:
        for cold in COLD:
            assert mine.loc[hot, "bytes_in_per_sec"] > 5 * mine.loc[cold, "bytes_in_per_sec"]
            assert mine.loc[hot, "size_bytes"] > 5 * mine.loc[cold, "size_bytes"]
            assert mine.loc[hot, "size_growth_bytes_per_day"] > mine.loc[
                cold, "size_growth_bytes_per_day"]
            # the brokers' request meters, per topic, split like the bytes
            assert mine.loc[hot, "requests_per_sec"] > mine.loc[cold, "requests_per_sec"] > 0
    assert all(len(profile) == 24 for profile in mine["hourly_bytes_in_per_sec"])

    _plan_sees_the_weights(sandbox, weights, topic, tmp_path)


def _plan_sees_the_weights(sandbox: SandboxInfo, weights: pd.DataFrame, topic: str,
                           tmp_path: Path) -> None:
    """`plan --weights` uses the weights' rates: the planned loads differ from a plain plan.

    The snapshot splits each topic's measured rate by partition size, so on a quiet sandbox its
    net in is shaped like disk, and so are weights from the same history: the spread alone may
    not tell the two apart. The weights are scaled far above the measured rates, so the net-in
    load a plan starts from shows whether it read them."""
    mine = weights[weights["topic"] == topic].copy()
    hot_rate = 20e6  # exaggerate, so the weights dominate the cluster's measured traffic
    mine["bytes_in_per_sec"] = mine["bytes_in_per_sec"] / mine["bytes_in_per_sec"].max() * hot_rate
    mine_file = tmp_path / "mine.json"
    mine_file.write_text(mine.to_json(orient="records", lines=True))
    caps = tmp_path / "capacities.yaml"
    caps.write_text("default: {disk_bytes: 100GB, net_in_bytes_per_sec: 100MB/s, "
                    "net_out_bytes_per_sec: 100MB/s}\n")
    common = ["--bootstrap", sandbox.bootstrap, "--prometheus", sandbox.prometheus_url,
              "--capacities", str(caps), "--time-limit", "3", "--json"]
    plain = _cli("plan", "--out", str(tmp_path / "plain.json"), *common)
    weighted = _cli("plan", "--out", str(tmp_path / "weighted.json"), "--weights",
                    str(mine_file), *common)
    assert plain.returncode == 0, plain.stderr
    assert weighted.returncode == 0, weighted.stderr
    net_in = [json.loads((tmp_path / f"{name}.json").read_text())["before"]["resources"][
        "net_in"]["average"] for name in ("plain", "weighted")]
    # the topic's measured rate is about 0.2 MB/s in all; the weights say about 40 MB/s
    assert net_in[1] > 20 * net_in[0], net_in
