"""Process management for the sandbox: spawn in its own process group, check, stop, ports.

Every process is identified by pid *and* by the sandbox dir in its command line, so a recycled
pid is never mistaken for (or killed as) one of ours.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterable, Sequence
from pathlib import Path


def port_in_use(port: int) -> bool:
    """True when something listens on 127.0.0.1:port (or the port cannot be bound)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def port_open(port: int) -> bool:
    """True when a TCP connect to 127.0.0.1:port succeeds."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def spawn(command: Sequence[str], log_file: Path, cwd: Path) -> int:
    """Start a detached process (own session/group), stdout+stderr to log_file; return its pid."""
    with open(log_file, "ab") as log:
        proc = subprocess.Popen(
            list(command), cwd=cwd, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )
    _children[proc.pid] = proc
    return proc.pid


# Children started by this process, kept so their exit status can be read (and reaped).
_children: dict[int, subprocess.Popen[bytes]] = {}


def _reap(pid: int) -> None:
    """Collect the exit status if pid is our own exited child (else it stays a zombie)."""
    child = _children.get(pid)
    if child is not None:
        child.poll()
        return
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def exit_description(pid: int) -> str:
    """How a child of this process ended ("exit code 1", "killed by SIGKILL"), if known."""
    child = _children.get(pid)
    code = child.poll() if child is not None else None
    if code is None:
        return "exit status unknown"
    if code < 0:
        return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"


def _read_proc(pid: int) -> tuple[str, str] | None:
    """(state, command line) of a process, or None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[0], cmdline


def is_ours(pid: int, marker: str) -> bool:
    """True when pid is alive (not a zombie) and its command line mentions marker.

    Right after exec the kernel can show an empty command line for a moment: it is looked at
    again for up to a second; a running child of this process whose command line is still not
    set then counts as ours (on a loaded machine exec can take that long).
    """
    if pid <= 0:
        return False
    _reap(pid)
    child = _children.get(pid)
    if child is not None and child.returncode is not None:
        return False
    for _ in range(20):
        seen = _read_proc(pid)
        if seen is None or seen[0] in ("Z", "X"):
            return False
        if seen[1]:
            return marker in seen[1]
        time.sleep(0.05)
    return child is not None


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def _group_alive(pgid: int) -> bool:
    """True while any non-zombie process is left in process group pgid."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            return True
    return False


def stop(pids: Iterable[int], marker: str, grace_s: float) -> list[int]:
    """TERM the process groups, wait up to grace_s for every member to exit, then KILL what is
    left; return the group leaders that had to be killed."""
    live = [pid for pid in pids if is_ours(pid, marker)]
    for pid in live:
        _signal_group(pid, signal.SIGTERM)

    def remaining() -> list[int]:
        return [pid for pid in live if is_ours(pid, marker) or _group_alive(pid)]

    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and remaining():
        time.sleep(0.1)
    killed = remaining()
    for pid in killed:
        _signal_group(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and remaining():
        time.sleep(0.05)
    return killed


def kill(pid: int, marker: str) -> bool:
    """SIGKILL one process group at once, as a crash would; True when it was ours and is gone."""
    if not is_ours(pid, marker):
        return False
    _signal_group(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and (is_ours(pid, marker) or _group_alive(pid)):
        time.sleep(0.05)
    return not _group_alive(pid)


def tail(log_file: Path, lines: int = 3) -> str:
    """Last lines of a log, joined on one line for error messages."""
    try:
        text = log_file.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(line.strip() for line in text[-lines:]) or "(empty log)"
