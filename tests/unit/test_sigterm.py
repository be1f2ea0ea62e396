"""SIGTERM (systemd, `timeout`, kill) ends execute, resume, cancel and auto the way Ctrl-C
does, and only while their run goes on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafka_rebalance.usecases.signals import sigterm_as_ctrl_c

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


@pytest.mark.parametrize("sent", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_inside_the_run_is_an_interrupt_and_the_old_handler_comes_back(
        sent: signal.Signals) -> None:
    """SIGHUP too: an SSH session that drops ends the run as Ctrl-C does (it died at once,
    with no summary)."""
    before = signal.getsignal(sent)
    with pytest.raises(KeyboardInterrupt), sigterm_as_ctrl_c():
        os.kill(os.getpid(), sent)
        time.sleep(5)  # the handler interrupts the sleep
        pytest.fail(f"{sent.name} did not interrupt the run")
    assert signal.getsignal(sent) is before


def test_output_whose_reader_went_away_is_dropped_and_the_run_goes_on() -> None:
    """`execute ... | head -6`: once head exits, writes fail with EPIPE; inside the run they
    are dropped (the descriptor then writes to /dev/null) instead of ending it mid-move."""
    reading, writing = os.pipe()
    os.close(reading)  # the reader is gone
    real_stdout = sys.stdout
    stream = os.fdopen(writing, "w", buffering=1)
    sys.stdout = stream
    try:
        with sigterm_as_ctrl_c():
            for _ in range(3):
                print("a progress line", flush=True)  # EPIPE, dropped
            sys.stdout.flush()
        print("after the run: /dev/null now", flush=True)
    finally:
        sys.stdout = real_stdout
        stream.close()


def _solving(pid: int) -> bool:
    """Whether the process catches SIGTERM now: `plan` does so only while it solves."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_while_planning_ends_it_at_once_and_writes_nothing(
        sent: signal.Signals, tmp_path: Path) -> None:
    """The solvers run in C++ threads: before, CP-SAT took Ctrl-C as "stop searching", and
    the command wrote the plan it had and exited 0. Now the process ends while it solves,
    with 128 + the signal and no plan file. The signal is sent once the solving has begun
    (SIGTERM caught, read from /proc), which lasts seconds on this example."""
    out = tmp_path / "plan.json"
    child = subprocess.Popen(
        [sys.executable, "-c", "import cli; cli.main()", "plan",
         "--snapshot", str(EXAMPLES / "cluster.json"),
         "--capacities", str(EXAMPLES / "capacities.yaml"), "--add-broker", "13,14,15",
         "--time-limit", "600", "--out", str(out)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        while not _solving(child.pid):
            assert child.poll() is None, child.communicate()
            time.sleep(0.05)
        child.send_signal(sent)
        stdout, stderr = child.communicate(timeout=120)
    finally:
        child.kill()
    assert child.returncode == 128 + sent, stdout + stderr
    assert "interrupted: the plan was not made; nothing was written" in stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_a_refusal_keeps_its_exit_code_when_the_reader_is_gone() -> None:
    """`execute MISSING.json ... 2>&1 | head -c0`: the error line has nowhere to go, and the
    exit code is still the refusal's (2), not 1 from rich's broken-pipe exit."""
    reading, writing = os.pipe()
    os.close(reading)
    try:
        done = subprocess.run([sys.executable, "-c", "import cli; cli.main()", "execute",
                               str(ROOT / "no-such-plan.json"), "--bootstrap", "127.0.0.1:1",
                               "--prometheus", "http://127.0.0.1:1", "--max-mbps", "1"],
                              stdout=writing, stderr=writing, cwd=ROOT, timeout=60)
    finally:
        os.close(writing)
    assert done.returncode == 2
