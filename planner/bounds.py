"""Balance bands per broker and the lower bound on bytes that must move for the disk goal."""

from __future__ import annotations

import math

import numpy as np

from planner.arrays import DISK, ClusterArrays, FloatArray, broker_loads, to_arrays
from planner.goals import Goals
from topology.errors import PlanError
from topology.model import Topology


def averages(arrays: ClusterArrays, loads: FloatArray) -> FloatArray:
    """Capacity-weighted average utilization per resource over the eligible brokers."""
    cap = arrays.capacity[arrays.eligible].sum(axis=0)
    if not arrays.eligible.any():
        raise PlanError("no broker remains to hold replicas: every broker is removed or offline")
    avg: FloatArray = loads.sum(axis=0) / cap
    return avg


def band(arrays: ClusterArrays, loads: FloatArray, goals: Goals,
         margin: float = 0.0) -> tuple[FloatArray, FloatArray]:
    """Lower and upper load [B, 3] per broker: avg*(1 -/+ tol)*capacity, upper capped at the
    max utilization; brokers that must end empty get [0, 0]. `margin` narrows the band."""
    avg = averages(arrays, loads)
    tol = max(goals.tolerance - margin, 0.0)
    if np.any(avg * (1 - tol) > goals.max_utilization):
        worst = float(avg.max())
        raise PlanError(f"the remaining brokers cannot hold the load: average utilization "
                        f"{worst:.0%} leaves no room under the {goals.max_utilization:.0%} "
                        "maximum; add brokers or raise --max-utilization")
    upper_util = np.minimum(avg * (1 + tol), goals.max_utilization)
    lower = avg[None, :] * (1 - tol) * arrays.capacity
    upper = upper_util[None, :] * arrays.capacity
    lower[~arrays.eligible] = 0.0
    upper[~arrays.eligible] = 0.0
    return lower, upper


def disk_lower_bound_arrays(arrays: ClusterArrays, goals: Goals) -> int:
    """Bytes that must move for disk: max(total excess above upper bounds, total deficit below
    lower bounds); brokers that must end empty count their whole disk as excess."""
    loads = broker_loads(arrays, arrays.replicas)
    lower, upper = band(arrays, loads, goals)
    disk = loads[:, DISK]
    excess = math.fsum(np.maximum(disk - upper[:, DISK], 0.0).tolist())
    deficit = math.fsum(np.maximum(lower[:, DISK] - disk, 0.0)[arrays.eligible].tolist())
    bound = max(excess, deficit)
    return max(0, math.ceil(bound - 1e-9 * max(1.0, bound)))  # float noise is not a byte


def disk_lower_bound(topology: Topology, goals: Goals) -> int:
    """The lower bound on bytes moved for the disk goal at `goals.tolerance` (see above)."""
    return disk_lower_bound_arrays(to_arrays(topology, goals), goals)
