"""Moves between the log dirs of a JBOD broker (KIP-858), once every partition move is done.

A replica that moves between two dirs of its broker is copied on that broker's own disks
(AlterReplicaLogDirs): no network, no replication throttle, no gate. What bounds it is the
broker's `replica.alter.log.dirs.io.max.bytes.per.second`, which the stage sets to the run's
cap (a lower value already set is kept) and puts back as it was when the stage ends, like the
replication throttles: the journal records the priors before the throttle is set, and each
replica once it is in its new dir, so a resumed run asks only for what is left (asking again
for a move in flight is a no-op) and restores the throttle a killed one left.

A cancel asks each broker to keep the replicas still moving in the dir they are in (a move to
its current dir drops the copy under way), then restores the throttle.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from executor.config import ExecutorConfig, Ports
from executor.journal import Journal
from executor.throttle import kept_rate, parse_rate
from kafka_rebalance.core.errors import ClusterError
from kafka_rebalance.core.names import visible
from kafka_rebalance.core.ports import BrokerLogDirs
from planner.log_dirs import DirMove
from topology.units import size_text

DIR_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
# A copy between dirs grows a fetch at a time (replica.fetch.max.bytes, 1 MiB by default): at
# a low rate it may show no new bytes for several polls without being stuck.
COPY_STEP_BYTES = 1_048_576


class DirStage:
    """Runs the plan's moves between log dirs under the run's journal."""

    def __init__(self, ports: Ports, config: ExecutorConfig, journal: Journal,
                 note: Callable[[str], None]) -> None:
        self.ports, self.config, self.journal, self.note = ports, config, journal, note
        self._progress: dict[str, tuple[int, int]] = {}  # replica -> bytes seen, polls idle

    def _left(self) -> list[DirMove]:
        dirs = self.journal.run.plan.log_dirs
        ended = self.journal.run.dirs_ended
        return [m for m in (dirs.moves if dirs else ()) if m.replica not in ended]

    def run(self) -> bool:
        """Move every replica left to its dir; False when a cancel stopped the stage."""
        left = self._cordoned_out(self._left())
        if left:
            self._throttle(sorted({m.broker for m in left}))
            self._ask(left, {m.replica: m.target for m in left})
            if not self._wait():
                return False
        self.restore()
        return True

    def cancel(self) -> None:
        """Keep every replica still moving where it is, then restore the throttle."""
        left = self._left()
        if left:
            self._ask(left, {m.replica: m.source for m in left}, quiet=True)
            now = self.ports.clock.now()
            for move in left:
                self.journal.dir_moved(move.replica, now, "cancelled: kept in " + move.source)
            self.note(f"cancelled {len(left)} move(s) between log dirs: each replica stays in "
                      "the dir it was in")
        self.restore()

    def restore(self) -> None:
        """Put the log-dir throttle back as it was before the run set it."""
        priors = self.journal.run.dir_throttles
        if not priors:
            return
        self.ports.admin.alter_broker_configs(
            {b: {DIR_RATE: value} for b, value in sorted(priors.items())})
        self.journal.dir_throttle(priors, False, self.ports.clock.now())
        self.note(f"restored {DIR_RATE} on broker(s) {sorted(priors)}")

    def _cordoned_out(self, moves: list[DirMove]) -> list[DirMove]:
        """`moves` but those into a dir cordoned since the plan was made (KIP-1066), which
        end here, each with its reason."""
        if not moves:
            return moves
        seen = self.ports.admin.log_dirs(sorted({m.broker for m in moves}))
        cordoned = {(b, d.path) for b, dirs in seen.items() for d in dirs.dirs if d.cordoned}
        now = self.ports.clock.now()
        for move in moves:
            if (move.broker, move.target) in cordoned:
                self.journal.dir_moved(move.replica, now, f"{move.target} is cordoned now")
                self.note(f"{move.replica}: log dir {visible(move.target)} of broker "
                          f"{move.broker} is cordoned now (cordoned.log.dirs): it stays")
        return [m for m in moves if (m.broker, m.target) not in cordoned]

    def _throttle(self, brokers: list[int]) -> None:
        if self.journal.run.dir_throttles:
            return  # set by this run before it was interrupted: still in force
        admin = self.ports.admin
        priors = {b: values.get(DIR_RATE)
                  for b, values in admin.broker_configs(brokers, [DIR_RATE]).items()}
        self.journal.dir_throttle(priors, True, self.ports.clock.now())
        cap = self.config.max_bytes_per_sec
        rates = {b: kept_rate(cap, priors.get(b)) for b in brokers}
        admin.alter_broker_configs({b: {DIR_RATE: str(rate)} for b, rate in rates.items()})
        self.note(f"{len(self._left())} replica(s) move between log dirs of broker(s) "
                  f"{brokers}, copied on their own disks at most at "
                  f"{size_text(min(rates.values()))}/s each ({DIR_RATE})")

    def _ask(self, moves: list[DirMove], dirs: Mapping[str, str], quiet: bool = False) -> None:
        answers = self.ports.admin.alter_replica_log_dirs(
            {(m.key, m.broker): dirs[m.replica] for m in moves})
        now = self.ports.clock.now()
        for move in moves:
            error = answers.get((move.key, move.broker))
            if error is not None and not quiet:
                self.journal.dir_moved(move.replica, now, f"refused by Kafka: {error}")
                self.note(f"{move.replica}: broker {move.broker} refused the move to "
                          f"{visible(move.target)} ({error}); it stays where it is")

    def _wait(self) -> bool:
        """Poll until every replica left is in its dir; False on a cancel. A move whose copy
        shows no progress for `stall_intervals` polls is given up (its replica kept where it
        is); one the broker shows no copy of is asked for again."""
        errors = 0
        while left := self._left():
            if self.journal.cancel_requested():
                return False
            try:
                seen = self.ports.admin.log_dirs(sorted({m.broker for m in left}))
                errors = 0
            except ClusterError as exc:
                errors += 1
                if errors >= self.config.stall_intervals:
                    raise ClusterError(f"{exc} ({errors} polls in a row) while replicas move "
                                       "between log dirs; `rebalance resume` goes on") from exc
                self.ports.clock.sleep(self.config.poll_seconds)
                continue
            for move in left:
                self._check(move, seen.get(move.broker))
            again = [m for m in self._left() if m.broker in seen
                     and m.key not in seen[m.broker].futures]
            if again:  # no copy under way (the broker lost the request): ask once more
                self._ask(again, {m.replica: m.target for m in again})
            if self._left():
                self.ports.clock.sleep(self.config.poll_seconds)
        return True

    def _check(self, move: DirMove, seen: BrokerLogDirs | None) -> None:
        if seen is None:
            return  # the broker did not answer this poll
        now = self.ports.clock.now()
        held = seen.replicas.get(move.key)
        if held is None:
            self.journal.dir_moved(move.replica, now, "the broker no longer holds it")
            self.note(f"{move.replica}: no longer on broker {move.broker}; nothing to move")
        elif held[0] == move.target and move.key not in seen.futures:
            self.journal.dir_moved(move.replica, now)
            self.note(f"{move.replica}: now in {visible(move.target)} "
                      f"({size_text(held[1])} copied on broker {move.broker})")
        else:
            self._stalled(move, seen.futures.get(move.key, ("", 0))[1])

    def _stall_polls(self) -> int:
        """Polls without new bytes after which a copy counts as stuck: `stall_intervals`, or
        two fetches' time at the slowest rate in force, when longer."""
        rates = [self.config.max_bytes_per_sec, *(
            rate for value in self.journal.run.dir_throttles.values()
            if (rate := parse_rate(value)) is not None and rate > 0)]
        fetches = 2 * COPY_STEP_BYTES / min(rates) / self.config.poll_seconds
        return max(self.config.stall_intervals, math.ceil(fetches))

    def _stalled(self, move: DirMove, copied: int) -> None:
        """Count the polls a move's copy stays at `copied` bytes; give it up after
        `stall_intervals` of them, keeping the replica in the dir it is in."""
        last, idle = self._progress.get(move.replica, (-1, 0))
        idle = 0 if copied > last else idle + 1
        self._progress[move.replica] = (max(copied, last), idle)
        if idle < self._stall_polls():
            return
        self.ports.admin.alter_replica_log_dirs({(move.key, move.broker): move.source})
        reason = f"no progress in {idle} polls: kept in {move.source}"
        self.journal.dir_moved(move.replica, self.ports.clock.now(), reason)
        self.note(f"{move.replica}: its copy to {visible(move.target)} on broker {move.broker} "
                  f"made no progress in {idle} polls; it stays in {visible(move.source)}")

