"""What a plan must achieve (Goals) and what it may spend (Budget)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from kafka_rebalance.core.errors import InputError


@dataclass(frozen=True, slots=True)
class Goals:
    """Hard and balance goals of a plan.

    tolerance: every broker's utilization of each resource must lie within
    avg * (1 +/- tolerance) of the capacity-weighted average.
    max_utilization: hard cap of load / capacity on every broker and resource.
    """

    tolerance: float = 0.10
    max_utilization: float = 0.95
    add_brokers: frozenset[int] = field(default_factory=frozenset)
    remove_brokers: frozenset[int] = field(default_factory=frozenset)
    rack_aware: bool = True
    balance_leaders: bool = True
    # brokers whose every log dir is cordoned (KIP-1066): they keep what they hold, or give it
    # up, and receive no new replica
    cordoned_brokers: frozenset[int] = field(default_factory=frozenset)
    # --topic-spread: each topic's replicas (and leaders) on a broker at most its fair share
    # x (1 + this), rounded up (planner.spread); None: topics may crowd brokers
    topic_spread: float | None = None
    # --leader-balance: each broker's leader count and leader bytes in within this fraction of
    # its fair share of its own replicas (planner.leader_balance); None: only net out counts
    leader_balance: float | None = None
    # --request-balance: each broker's produce and fetch requests (served by the partitions it
    # leads) within this fraction of its fair share by request capacity (planner.requests);
    # None: requests are not balanced
    request_balance: float | None = None
    # JBOD brokers: move replicas between a broker's log dirs to level them (planner.log_dirs);
    # False: only choose the dir of arriving replicas
    level_log_dirs: bool = True

    def __post_init__(self) -> None:
        if not 0 < self.tolerance < 1:
            raise InputError(f"tolerance must be between 0 and 1 (e.g. 0.10), got {self.tolerance}")
        if not 0 < self.max_utilization <= 1:
            raise InputError(
                f"max utilization must be in (0, 1], got {self.max_utilization}"
            )
        if self.topic_spread is not None and not 0 <= self.topic_spread <= 10:
            raise InputError(f"--topic-spread must be between 0 and 10 (a fraction of the fair "
                             f"share, e.g. 0.5), got {self.topic_spread}")
        if self.leader_balance is not None and not 0 <= self.leader_balance <= 1:
            raise InputError(f"--leader-balance must be between 0 and 1 (a fraction of each "
                             f"broker's fair share, e.g. 0.1), got {self.leader_balance}")
        if self.request_balance is not None and not 0 <= self.request_balance <= 1:
            raise InputError(f"--request-balance must be between 0 and 1 (a fraction of each "
                             f"broker's fair share, e.g. 0.2), got {self.request_balance}")
        both = self.add_brokers & self.remove_brokers
        if both:
            raise InputError(f"broker {min(both)} is both added and removed")
        filled = self.add_brokers & self.cordoned_brokers
        if filled:
            raise InputError(f"--add-broker {min(filled)}: broker {min(filled)} is cordoned "
                             "(cordoned.log.dirs), so it may receive no replica; uncordon it "
                             "first (kafka-configs --delete-config cordoned.log.dirs)")


@dataclass(frozen=True, slots=True)
class Budget:
    """Limits on the plan (bytes, moves) and on the solver (seconds, seed)."""

    max_bytes: int | None = None
    max_moves: int | None = None
    time_limit_s: float = 60.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.max_bytes is not None and self.max_bytes < 0:
            raise InputError("--max-bytes must not be negative")
        if self.max_moves is not None and self.max_moves < 0:
            raise InputError("--max-moves must not be negative")
        if not 0 < self.time_limit_s < math.inf:
            raise InputError(f"--time-limit must be a positive number of seconds, got "
                             f"{self.time_limit_s}")
