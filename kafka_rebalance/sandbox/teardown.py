"""Taking a sandbox down from the CLI: refuse a dir that holds no sandbox, stop it, and with
`purge` delete what it wrote (broker and controller logs, Prometheus' TSDB, configs, state).

`kafka_rebalance.sandbox.cluster.down` stays quiet on a dir with nothing to stop, since tests and
scripts call it to make sure nothing is left; a user who names the wrong dir must hear it instead.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from kafka_rebalance.core.errors import SandboxError
from kafka_rebalance.sandbox import cluster
from kafka_rebalance.sandbox.state import is_sandbox_dir, read_marker, written_entries

_TSDB_FLAG = "--storage.tsdb.path="
_TSDB_DIR = "prometheus-data"


@dataclass(frozen=True)
class PurgeResult:
    """What `purge` deleted: the entries (names at the top of the dir), their bytes, and
    whether the dir itself went too (only when `up` had created it and it is empty now)."""

    removed: tuple[str, ...]
    freed_bytes: int
    dir_removed: bool


@dataclass(frozen=True)
class DownResult:
    """What `take_down` did: the processes stopped, and the purge (None without --purge)."""

    stopped: tuple[str, ...]
    purged: PurgeResult | None


def known(sandbox_dir: Path) -> bool:
    """True when sandbox_dir holds a sandbox, running or stopped, or processes started from it."""
    resolved = sandbox_dir.resolve()
    return is_sandbox_dir(resolved) or bool(cluster.sandbox_pids(resolved))


def running_elsewhere(exclude: Path | None = None) -> list[Path]:
    """Dirs of the sandboxes running on this machine (found by their Prometheus), sorted."""
    found: set[Path] = set()
    for _, argv in cluster.sandbox_processes():
        for word in argv:
            if word.startswith(_TSDB_FLAG) and word.endswith(f"/{_TSDB_DIR}"):
                found.add(Path(word[len(_TSDB_FLAG):]).parent)
    skip = exclude.resolve() if exclude is not None else None
    return sorted(d for d in found if d != skip and is_sandbox_dir(d))


def _size(path: Path) -> int:
    """Bytes of a file, or of every file under a directory (symlinks counted, never followed)."""
    if path.is_symlink() or not path.is_dir():
        return path.lstat().st_size
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += (Path(root) / name).lstat().st_size
            except OSError:
                continue
    return total


def purge(sandbox_dir: Path) -> PurgeResult:
    """Delete what the sandbox wrote in sandbox_dir, the marker last (an interrupted purge can
    be run again); anything else in the dir stays. Refused while a sandbox process runs."""
    resolved = sandbox_dir.resolve()
    left = cluster.sandbox_pids(resolved)
    if left:
        raise SandboxError(f"sandbox processes still run from {resolved} (pids "
                           f"{', '.join(map(str, left))}); nothing was deleted")
    marker = read_marker(resolved)
    entries = written_entries(resolved)
    names = tuple(e.name + ("/" if e.is_dir() and not e.is_symlink() else "") for e in entries)
    freed = 0
    for entry in entries:
        freed += _size(entry)
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink(missing_ok=True)
    dir_removed = False
    if marker is not None and marker.created_dir and not any(resolved.iterdir()):
        resolved.rmdir()
        dir_removed = True
    return PurgeResult(names, freed, dir_removed)


def take_down(sandbox_dir: Path, *, purge_data: bool = False) -> DownResult:
    """Stop the sandbox in sandbox_dir and, with purge_data, delete its data.

    Raises SandboxError when the dir holds no sandbox (no state, no marker, no process of one).
    """
    if not known(sandbox_dir):
        raise SandboxError(f"no sandbox in {sandbox_dir}")
    stopped = tuple(cluster.down(sandbox_dir))
    return DownResult(stopped, purge(sandbox_dir) if purge_data else None)
