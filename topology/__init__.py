"""Cluster model (pure values), load model, and the adapters that read and write it."""

from topology.load import balance, broker_loads, bytes_moved, leader_net_out, replica_load
from topology.model import (
    RESOURCES,
    Broker,
    Capacity,
    Load,
    Partition,
    Resource,
    TopicPartition,
    Topology,
    replace_replicas,
)

__all__ = [
    "RESOURCES",
    "Broker",
    "Capacity",
    "Load",
    "Partition",
    "Resource",
    "TopicPartition",
    "Topology",
    "balance",
    "broker_loads",
    "bytes_moved",
    "leader_net_out",
    "replace_replicas",
    "replica_load",
]
