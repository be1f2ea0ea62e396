"""Regenerate the bundled example: `python examples/make_example.py` (deterministic).

A 12-broker cluster on 3 racks with three broker sizes, 3,000 partitions with skewed sizes and
traffic, and one newly added empty broker per rack (ids 13-15). Capacities are round hardware
numbers (2/3/4 TB disks, 1/1.5/2 Gbit/s NICs); sizes and rates are scaled to them.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from topology.load import balance
from topology.model import Broker, Capacity, Partition, Resource, Topology
from topology.snapshot import write_snapshot
from topology.synthetic import generate_cluster

HERE = Path(__file__).resolve().parent
UNIT = Capacity(2e12, 125e6, 125e6)  # the smallest broker class: 2 TB, 1 Gbit/s
TOPICS = ["orders", "payments", "clicks", "page-views", "inventory", "shipments", "audit-log",
          "user-events", "search-queries", "notifications", "metrics", "sessions"]
TARGET_UTIL = {Resource.DISK: 0.55, Resource.NET_IN: 0.30, Resource.NET_OUT: 0.30}


def _topic_name(index: int) -> str:
    base = TOPICS[index % len(TOPICS)]
    return base if index < len(TOPICS) else f"{base}-v{index // len(TOPICS) + 1}"


def _size_class(ratio: float) -> float:
    """The generator's broker classes are 1x, 1.5x and 2x: snap to the nearest half."""
    return round(ratio * 2) / 2


def build() -> Topology:
    raw = generate_cluster(brokers=12, new_brokers=3, racks=3, partitions=3000, rf=3, seed=7)
    smallest = min(b.capacity.disk_bytes for b in raw.brokers)
    brokers = tuple(
        Broker(b.id, b.rack, Capacity(*(_size_class(b.capacity.disk_bytes / smallest) * u
                                        for u in (UNIT.disk_bytes, UNIT.net_in_bytes_per_sec,
                                                  UNIT.net_out_bytes_per_sec))))
        for b in raw.brokers
    )
    resized = Topology(brokers, raw.partitions)
    bal = balance(resized)
    scale = {r: TARGET_UTIL[r] / bal[r].average for r in TARGET_UTIL}
    topic_index = {t: i for i, t in enumerate(sorted({p.topic for p in raw.partitions}))}
    parts = tuple(
        Partition(_topic_name(topic_index[p.topic]), p.partition, p.replicas,
                  int(p.size_bytes * scale[Resource.DISK]),
                  round(p.bytes_in_per_sec * scale[Resource.NET_IN], 1),
                  round(p.bytes_out_per_sec * scale[Resource.NET_OUT], 1))
        for p in raw.partitions
    )
    return Topology(brokers, parts)


def capacities_doc(topology: Topology) -> dict[str, object]:
    """Default = the smallest class; bigger brokers listed as per-broker overrides."""
    def entry(c: Capacity) -> dict[str, str]:
        return {"disk_bytes": f"{c.disk_bytes / 1e12:g}TB",
                "net_in_bytes_per_sec": f"{c.net_in_bytes_per_sec / 1e6:g}MB/s",
                "net_out_bytes_per_sec": f"{c.net_out_bytes_per_sec / 1e6:g}MB/s"}
    overrides = {b.id: entry(b.capacity) for b in topology.brokers if b.capacity != UNIT}
    return {"default": entry(UNIT), "brokers": overrides}


def main() -> None:
    topology = build()
    write_snapshot(HERE / "cluster.json", topology)
    text = ("# Broker capacities for examples/cluster.json: the default is the smallest broker\n"
            "# class; bigger brokers override it. Units: TB/GB/MB (decimal), TiB/GiB (binary).\n")
    (HERE / "capacities.yaml").write_text(text + yaml.safe_dump(capacities_doc(topology),
                                                                sort_keys=False))


if __name__ == "__main__":
    main()
