"""The auto-balancer's state directory: timestamped plans with their journals beside them,
and the lock file that keeps a second `rebalance auto` off the same directory.

    STATE_DIR/auto.lock                          held (flock) while an auto process runs
    STATE_DIR/offline.json                       when each offline broker was first seen
    STATE_DIR/plan-20261123T013000Z.json         a plan made by a cycle
    STATE_DIR/plan-20261123T013000Z.json.journal its run's journal
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from executor.journal import RunState, journal_of, read_journal
from executor.state import MoveState
from kafka_rebalance.autobalance.cycle import RunLeft
from kafka_rebalance.core.errors import ExecutionError, InputError
from kafka_rebalance.core.names import visible

LOCK_NAME = "auto.lock"
OFFLINE_NAME = "offline.json"  # when each offline broker was first seen offline
PLAN_PREFIX = "plan-"


def run_left_of(run: RunState | None) -> RunLeft:
    """What a run left: nothing (ended or none), pending moves only, or a move in flight."""
    if run is None or not run.unfinished:
        return RunLeft.NONE
    if any(run.state_of(m.name) is not MoveState.PENDING for m in run.unfinished):
        return RunLeft.IN_FLIGHT
    return RunLeft.PENDING


class StateDir:
    """Plans and journals of the auto-balancer, newest last by their UTC timestamp names."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def ensure(self) -> None:
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"--state-dir {visible(str(self.path))}: cannot create it "
                             f"({exc.strerror}); "
                             "choose a writable directory") from exc

    def plans(self) -> list[Path]:
        if not self.path.is_dir():
            return []
        return sorted(self.path.glob(f"{PLAN_PREFIX}*.json"))

    def latest_journal(self) -> Path | None:
        """The journal of the newest plan that has one (older runs ended before it began)."""
        for plan in reversed(self.plans()):
            journal = journal_of(plan)
            if journal.exists():
                return journal
        return None

    def latest_run(self) -> tuple[Path | None, RunState | None]:
        journal = self.latest_journal()
        return (journal, read_journal(journal)) if journal is not None else (None, None)

    def offline_seen(self) -> dict[int, float]:
        """When each offline broker was first seen offline (empty when never written; a
        damaged file counts as empty: the grace period then starts again, which is safe)."""
        try:
            doc = json.loads((self.path / OFFLINE_NAME).read_text())
            return {int(b): float(at) for b, at in doc.items()}
        except (OSError, ValueError, TypeError, AttributeError):
            return {}

    def remember_offline(self, since: Mapping[int, float]) -> None:
        """Keep `since` for the next cycles (written whole, then renamed into place)."""
        self.ensure()
        path = self.path / OFFLINE_NAME
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps({str(b): at for b, at in sorted(since.items())}))
        temporary.replace(path)

    def new_plan_path(self, at: datetime) -> Path:
        """plan-YYYYMMDDTHHMMSSZ.json for `at` (a suffix keeps two plans of one second apart)."""
        stamp = at.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
        path = self.path / f"{PLAN_PREFIX}{stamp}.json"
        serial = 1
        while path.exists() or journal_of(path).exists():
            path = self.path / f"{PLAN_PREFIX}{stamp}-{serial}.json"
            serial += 1
        return path


@contextmanager
def state_lock(state: StateDir) -> Iterator[None]:
    """Hold STATE_DIR/auto.lock for the life of an auto process; refuse when another holds it.

    flock is released by the kernel when the process dies, so a crash never leaves it stuck;
    the file keeps the holder's pid for the message."""
    state.ensure()
    path = state.path / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:  # not writable, a directory in its place, not a real directory
        raise InputError(f"--state-dir {visible(str(state.path))}: cannot open its lock file "
                         f"{LOCK_NAME} ({exc.strerror}); choose a directory this user may "
                         "write") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise ExecutionError(f"another `rebalance auto` (pid {holder}) is running on "
                             f"{state.path}; stop it first or use another --state-dir") from None
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)
