"""One run per cluster: the lease a run holds on the cluster itself, and who may take it.

The lease lives in the cluster (a compacted topic, see topology.kafka_lease), so a second run
from any machine, on the same plan or another, is refused before it changes anything. A run
holds it while it works and refreshes it every HEARTBEAT_SECONDS; a lease not refreshed for
TTL_SECONDS belongs to a run that was killed. That age is measured on the cluster's clock where
the store can (the broker's append times of the lease and of the claim), so a claimant whose
clock runs ahead of the holder's never takes a live lease, and one behind never waits forever.
Such a lease passes only to a process of the same run (`resume`, `cancel` or `clear-throttles`
of its journal) or to an operator who names the run (`--take-over-lease RUN_ID`). These rules
are pure; the adapter only reads and writes.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Protocol

from kafka_rebalance.core.errors import LeaseLost, LeaseRefused
from kafka_rebalance.core.ports import LeaseDecision

TTL_SECONDS = 45.0
HEARTBEAT_SECONDS = 10.0


@dataclass(frozen=True)
class LeaseRecord:
    """The lease's latest state: which run, where it runs, when it last said so."""

    run_id: str
    holder: str  # host, pid and journal, for the operator
    at: float  # epoch seconds of the last claim or heartbeat
    held: bool = True  # False once the run released it
    host: str = ""  # the machine the run works on ("" in leases of older versions)

    def encode(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def decode(cls, raw: bytes) -> LeaseRecord | None:
        """The record, or None for anything that is not one (never trusted blindly)."""
        try:
            doc = json.loads(raw)
            record = cls(str(doc["run_id"]), str(doc["holder"]), float(doc["at"]),
                         bool(doc["held"]), str(doc.get("host", "")))
        except (ValueError, KeyError, TypeError):
            return None
        return record


def claim_problem(current: LeaseRecord | None, run_id: str, age: float,
                  take_over: str | None = None, host: str = "") -> str | None:
    """None when `run_id` (working on `host`) may take the lease, last renewed `age` seconds
    ago; otherwise why not, and what to do. The same run takes its own lease back (a resume
    after a crash), unless the lease is live on another machine: there the run is still going
    (its journal copied to this one), and the journal's file lock cannot see across machines."""
    if current is None or not current.held:
        return None
    age = max(age, 0.0)
    if current.run_id == run_id:
        if age <= TTL_SECONDS and current.host and host and current.host != host:
            return (f"run {run_id} is alive on {current.host} ({current.holder}), renewed "
                    f"{age:.0f} s ago; nothing was changed. Resume or cancel it there, or "
                    f"wait {TTL_SECONDS:.0f} s after it stops")
        return None
    if take_over is not None and take_over == current.run_id and age > TTL_SECONDS:
        return None
    if take_over is not None and take_over == current.run_id:
        return (f"run {current.run_id} ({current.holder}) is alive: it renewed the cluster's "
                f"lease {age:.0f} s ago; nothing was changed. --take-over-lease takes only the "
                f"lease of a run that stopped renewing it ({TTL_SECONDS:.0f} s); stop that run "
                "(Ctrl-C) or cancel it (`rebalance cancel` with its journal)")
    if age <= TTL_SECONDS:
        return (f"another run holds this cluster: run {current.run_id} ({current.holder}), "
                f"alive {age:.0f} s ago; nothing was changed. Wait for it to end, or cancel it "
                "(`rebalance cancel` with its journal)")
    return (f"run {current.run_id} ({current.holder}) holds this cluster's lease but has not "
            f"renewed it for {age:.0f} s (killed?); nothing was changed. `rebalance resume` or "
            "`rebalance cancel` with that run's journal takes it over; if that run is gone for "
            f"good, pass --take-over-lease {current.run_id}")


class LeaseStore(Protocol):
    """Where the lease lives. `claim` fences every other claimant, reads the latest value and
    writes what `decide` returns, atomically with respect to other claims; `decide` raises to
    refuse (nothing is written). Without the store's age of the lease, `decide` falls back on
    the record's `at` against this machine's clock. A claim, a heartbeat and the release all go
    through it, so each is a compare-and-set on the lease as it is in the cluster."""

    def claim(self, decide: LeaseDecision) -> None: ...

    def close(self) -> None: ...


class LeaseKeeper:
    """Holds the lease for one run: claim, a heartbeat thread, release (the ClusterLease).

    The heartbeat and the release write only while the lease in the cluster is still this
    process's claim (same run, same holder): after a take-over by another process the
    heartbeat stops and says so (`lost`), and the release leaves the new holder's lease."""

    def __init__(self, store: LeaseStore, clock: Callable[[], float] = time.time,
                 heartbeat_seconds: float = HEARTBEAT_SECONDS) -> None:
        self._store = store
        self._clock = clock
        self._every = heartbeat_seconds
        self._record: LeaseRecord | None = None
        self.prior: LeaseRecord | None = None  # the lease as the claim found it
        self.lost = ""  # why this process no longer holds the lease ("": it does)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self, run_id: str, holder: str, take_over: str | None = None,
                host: str = "") -> None:
        def decide(raw: bytes | None, written_ago: float | None) -> bytes:
            current = LeaseRecord.decode(raw) if raw is not None else None
            self.prior = current
            age = (written_ago if written_ago is not None or current is None
                   else self._clock() - current.at)
            problem = claim_problem(current, run_id, age or 0.0, take_over, host)
            if problem is not None:
                raise LeaseRefused(problem)
            return LeaseRecord(run_id, holder, self._clock(), host=host).encode()

        self._store.claim(decide)
        self._record = LeaseRecord(run_id, holder, self._clock(), host=host)
        self._thread = threading.Thread(target=self._beat, name="lease-heartbeat", daemon=True)
        self._thread.start()

    def _write_if_ours(self, record: LeaseRecord, held: bool) -> None:
        """Write `record` renewed (or released) if the lease is still this claim; LeaseLost
        when another process took it over."""
        def decide(raw: bytes | None, _written_ago: float | None) -> bytes:
            current = LeaseRecord.decode(raw) if raw is not None else None
            if (current is None or not current.held or current.run_id != record.run_id
                    or current.holder != record.holder):
                now = ("free" if current is None or not current.held
                       else f"held by run {current.run_id} ({current.holder})")
                raise LeaseLost(f"the cluster's run lease of run {record.run_id} passed to "
                                f"another process (it is {now}); this process stops and "
                                "changes nothing more")
            return replace(record, at=self._clock(), held=held).encode()
        self._store.claim(decide)

    def _beat(self) -> None:
        while not self._stop.wait(self._every):
            record = self._record
            if record is None:
                return
            try:
                self._write_if_ours(record, held=True)
            except LeaseLost as lost:
                self.lost = str(lost)
                return
            except Exception:  # a missed beat is retried; TTL covers 4
                continue

    def abandon(self) -> None:
        """Stop renewing without releasing (a run interrupted mid-move): the lease goes stale
        and passes only to this run's resume or cancel, or to a named take-over."""
        self._stop_beating()
        self._record = None
        self._store.close()

    def _stop_beating(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * self._every)

    def release(self) -> None:
        """Give the lease back (LeaseLost, and nothing written, when it is no longer ours)."""
        self._stop_beating()
        record, self._record = self._record, None
        try:
            if record is not None:
                self._write_if_ours(record, held=False)
        finally:
            self._store.close()


class LeaseHold:
    """What happens to the lease when its block ends: released, unless the run got under way
    (`started`) and did not reach an end (`ended`), e.g. Ctrl-C mid-move; then it is left to
    go stale, for this run's resume or cancel. `inherited`: the claim found the lease held by
    this same run (stale after a crash, or a resume's own), so the run had work under way on
    the cluster before this process; a refusal leaves it held, as it found it."""

    def __init__(self, inherited: bool = False, lost: Callable[[], str] = lambda: "") -> None:
        self.inherited = inherited
        self.lost = lost  # why the lease passed to another process while held ("": it did not)
        self.started = False
        self.ended = False

    @property
    def release(self) -> bool:
        return self.ended or not self.started
