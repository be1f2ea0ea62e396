"""Other placement tools, run on the benchmark's clusters beside the planner.

- kafka_generate: Kafka's own `kafka-reassign-partitions --generate` placement, the tool's
  real code (`KafkaGenerate.java` calls it from the Kafka tools jar the sandbox fetches).
- external: any command that reads a snapshot file and writes Kafka's reassignment JSON
  (`{"version": 1, "partitions": [{"topic", "partition", "replicas"}]}`), given as a template
  with `{snapshot}` and `{out}`; how a tool that is not on PyPI or Maven takes part.
- topicmappr: DataDog kafka-kit's topicmappr, its own planning code built by
  `topicmappr/build.sh` from a kafka-kit checkout and run through `external`.
- kafka_utils: Yelp kafka-utils' genetic balancer (PyPI), in a venv of its own made by
  `kafka_utils/setup.sh`, run by `kafka_utils/driver.py` through `external`.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import tempfile
from pathlib import Path

from kafka_rebalance.sandbox.jars import ensure_jars
from planner.goals import Goals
from topology.model import TopicPartition, Topology, replace_replicas
from topology.snapshot import write_snapshot

HERE = Path(__file__).resolve().parent


def kafka_generate(topology: Topology, goals: Goals) -> Topology:
    """Every topic re-laid by Kafka's --generate over the brokers that stay (rack-aware)."""
    members = [b for b in topology.brokers if b.alive and b.id not in goals.remove_brokers]
    lines = [" ".join(f"{b.id}:{b.rack or '-'}" for b in members)]
    lines += [f"{p.topic} {p.partition} {','.join(map(str, p.replicas))}"
              for p in topology.partitions]
    jars = ensure_jars(progress=print)
    done = subprocess.run(["java", "-Xmx2g", "-cp", f"{jars}/*", str(HERE / "KafkaGenerate.java")],
                          input="\n".join(lines) + "\n", capture_output=True, text=True,
                          check=True)
    target = {}
    for line in done.stdout.splitlines():
        topic, number, replicas = line.split(" ")
        target[TopicPartition(topic, int(number))] = tuple(int(b) for b in replicas.split(","))
    return replace_replicas(topology, target)


def topicmappr_command(binary: Path, topology: Topology, goals: Goals) -> str:
    """The topicmappr run an operator would choose for this change, as an `external` template.

    Brokers leaving: `rebuild --placement storage` onto the rest. Brokers holding no replica:
    `scale` onto them. Otherwise `rebalance`. Every other flag keeps topicmappr's default.
    """
    held = {b for p in topology.partitions for b in p.replicas}
    empty = [b.id for b in topology.brokers if b.alive and b.id not in held]
    if goals.remove_brokers:
        args = f"rebuild --placement storage --remove {_ids(goals.remove_brokers)}"
    elif empty:
        args = "scale"
    else:
        args = "rebalance"
    return f"{_program(binary)} {args} --snapshot {{snapshot}} --out {{out}} >/dev/null"


def kafka_utils_command(python: Path, goals: Goals, time_limit_s: float) -> str:
    """kafka-utils' genetic balancer as an `external` template: `decommission` when brokers
    leave, `rebalance --replication-groups --brokers --leaders` otherwise."""
    program = _program(python, HERE / "kafka_utils" / "driver.py")
    extra = f" --remove {_ids(goals.remove_brokers)}" if goals.remove_brokers else ""
    return f"{program} --time-limit {time_limit_s:g}{extra} --snapshot {{snapshot}} --out {{out}}"


def _program(*parts: Path) -> str:
    """A command's words, shell-quoted, with braces doubled so the template leaves them be."""
    words = " ".join(shlex.quote(str(part)) for part in parts)
    return words.replace("{", "{{").replace("}", "}}")


def _ids(brokers: frozenset[int]) -> str:
    return ",".join(str(b) for b in sorted(brokers))


def external(template: str, topology: Topology) -> Topology:
    """The placement a snapshot-in, reassignment-out command proposes."""
    with tempfile.TemporaryDirectory(prefix="peer-") as work:
        snapshot, out = Path(work) / "snapshot.json", Path(work) / "reassignment.json"
        write_snapshot(snapshot, topology)
        command = template.format(snapshot=shlex.quote(str(snapshot)),
                                  out=shlex.quote(str(out)))
        subprocess.run(command, shell=True, check=True)
        doc = json.loads(out.read_text())
    target = {TopicPartition(str(e["topic"]), int(e["partition"])):
              tuple(int(b) for b in e["replicas"]) for e in doc["partitions"]}
    return replace_replicas(topology, target)
