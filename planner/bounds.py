"""The lower bound on bytes that must move to bring disk into the band the planner aims at."""

from __future__ import annotations

import math

import numpy as np

from planner.arrays import DISK, ClusterArrays, broker_loads, to_arrays
from planner.balance import Targets, achievable_targets, aim
from planner.goals import Goals
from topology.model import Topology


def disk_lower_bound_arrays(arrays: ClusterArrays, goals: Goals, targets: Targets) -> int:
    """Bytes that must move for disk: max(total excess above the aimed upper bounds, total
    deficit below its lower bounds); brokers that must end empty count their whole disk as
    excess. Every byte above a broker's bound must leave it, every byte missing must arrive."""
    loads = broker_loads(arrays, arrays.replicas)
    lower, upper = aim(arrays, targets, goals.tolerance, goals.max_utilization)
    disk = loads[:, DISK]
    excess = math.fsum(np.maximum(disk - upper[:, DISK], 0.0).tolist())
    deficit = math.fsum(np.maximum(lower[:, DISK] - disk, 0.0)[arrays.eligible].tolist())
    bound = max(excess, deficit)
    return max(0, math.ceil(bound - 1e-9 * max(1.0, bound)))  # float noise is not a byte


def disk_lower_bound(topology: Topology, goals: Goals) -> int:
    """The lower bound on bytes moved for the disk goal at `goals.tolerance` (see above)."""
    arrays = to_arrays(topology, goals)
    return disk_lower_bound_arrays(arrays, goals, achievable_targets(arrays, goals))
