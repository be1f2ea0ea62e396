"""What Ctrl-C, SIGTERM and a terminal that goes away do while a command works.

`sigterm_as_ctrl_c`: during a run, SIGTERM and SIGHUP (the SSH session dropped) end the
command the way Ctrl-C does; `output_may_close` (also part of it): output whose reader is gone
(`| head`, a closed terminal) is dropped instead of ending the run between two cluster writes.

`interrupts_end_solving`: during planning, either signal ends the process at once with
nothing written. The solvers run in C++ threads, where Python's own handler cannot run until a
solve returns (up to the whole time limit), and CP-SAT would otherwise take Ctrl-C as "stop
searching" and hand back its best plan, which the command would then write as if nothing had
happened. So while the solvers run, a thread of ours waits for either signal and ends the
process.
"""

from __future__ import annotations

import errno
import functools
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, TextIO, TypeVar, cast

_T = TypeVar("_T")

INTERRUPTED_EXIT_CODE = 130  # 128 + SIGINT, as shells report Ctrl-C


@contextmanager
def sigterm_as_ctrl_c() -> Iterator[None]:
    """While the block runs, SIGTERM (systemd, `timeout`, kill) and SIGHUP (the terminal or
    SSH session closed) are Ctrl-C: the command ends the way it ends on an interrupt (exit 130
    and the summary for execute, resume and cancel; a clean cancel for auto) instead of dying
    mid-move without a word; and stdout and stderr survive their reader going away."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers belong to the main thread
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = {number: signal.signal(number, interrupt)
                for number in (signal.SIGTERM, signal.SIGHUP)}
    try:
        with output_may_close():
            yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


_F = TypeVar("_F", bound=Callable[..., Any])


def reader_may_go(command: _F) -> _F:
    """`command` run inside `output_may_close` (its signature kept, for typer)."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        with output_may_close():
            return command(*args, **kwargs)

    return cast(_F, run)


@contextmanager
def output_may_close() -> Iterator[None]:
    """While the block runs, stdout and stderr survive their reader going away (`| head`, a
    closed terminal): what is written then is dropped. For the whole of a command that
    changes the cluster, from its first line to its summary, so that the run and its exit code
    are what they would be with the reader still there."""
    if isinstance(sys.stdout, _ReaderMayGo) and isinstance(sys.stderr, _ReaderMayGo):
        yield
        return
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _ReaderMayGo(sys.stdout), _ReaderMayGo(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = streams


class _ReaderMayGo:
    """A text stream whose reader may go away (EPIPE: `| head` exited; EIO: the terminal
    closed): from then on its file descriptor writes to /dev/null, so what is written is
    dropped and nothing raises in the middle of a run (the journal and `status` keep what
    the output said)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._guarded(lambda: self._stream.write(text), len(text))

    def flush(self) -> None:
        self._guarded(self._stream.flush, None)

    def _guarded(self, call: Callable[[], _T], otherwise: _T) -> _T:
        try:
            return call()
        except OSError as exc:
            if exc.errno not in (errno.EPIPE, errno.EIO):
                raise
            try:  # the stream's buffer and every later write go nowhere, quietly
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, self._stream.fileno())
                os.close(null)
            except (OSError, ValueError):
                pass
            return otherwise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def interrupts_end_solving(what: str) -> Iterator[None]:
    """While the block runs, Ctrl-C or SIGTERM prints "interrupted: `what` ..." and ends the
    process at once (130 for Ctrl-C, 128 + the signal for others). The block must not write
    anything: what it computes is simply dropped.

    Python's handlers run on the main thread only when it is back in Python, which a solve
    is not; but its signal handling writes each signal's number to the wakeup fd at once, from
    whichever thread the signal reached, and a thread of ours waits on that fd."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    waited = (signal.SIGINT, signal.SIGTERM)
    reading, writing = os.pipe()
    os.set_blocking(writing, False)

    def wait() -> None:
        received = os.read(reading, 1)
        if not received:
            return  # the block ended: the pipe was closed, no signal came
        if sys.stderr.isatty():  # the spinner's line cleared, the cursor it hid shown again
            sys.stderr.write("\r\x1b[2K\x1b[?25h")
        sys.stderr.write(f"interrupted: {what}; nothing was written\n")
        sys.stderr.flush()
        number = received[0]
        os._exit(INTERRUPTED_EXIT_CODE if number == signal.SIGINT else 128 + number)

    def noted(signum: int, frame: FrameType | None) -> None:
        """The Python side of a signal, which runs once the main thread is back in Python
        (between solves, or as one returns): it parks the block there, before anything is
        written, while the waiter ends the process."""
        threading.Event().wait()

    previous_fd = signal.set_wakeup_fd(writing, warn_on_full_buffer=False)
    previous = {number: signal.signal(number, noted) for number in waited}
    waiter = threading.Thread(target=wait, name="interrupts", daemon=True)
    waiter.start()
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        signal.set_wakeup_fd(previous_fd)
        os.close(writing)  # the waiter reads end of file and returns
        waiter.join()
        os.close(reading)
