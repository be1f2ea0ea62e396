"""How the commands print: the consoles (sized for a terminal, a pipe or a log), `say`, `note`,
notes held while a live view runs, and the --force help they share.

Every string from a user or a cluster (paths, rack and topic names, messages) reaches rich
escaped (`rich.markup.escape`) or as plain text (`say`, `note`, `Text`): a rack named "[/]x"
must print as written, not break or restyle the output.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.text import Text

from kafka_rebalance.core.errors import RebalanceError
from kafka_rebalance.core.names import visible
from kafka_rebalance.report.layout import WIDE

PIPE_WIDTH = WIDE  # to a file or a pipe without COLUMNS: the review's full layout

# The --force of every command that writes a file (kafka_rebalance.files.outputs).
FORCE_HELP = ("Replace an existing --out file even if it is not a {what} this tool wrote "
              "(an input file of the command, a directory or a device is never replaced).")


def _console(stderr: bool = False) -> Console:
    """The terminal's width; to a file or a pipe, COLUMNS when set, else PIPE_WIDTH (a log
    keeps every column)."""
    probe = Console(stderr=stderr)
    if probe.is_terminal or "COLUMNS" in os.environ:
        return probe
    return Console(stderr=stderr, width=PIPE_WIDTH)


def stdout_width() -> int:
    """Standard output's width now, as `console` would have it if made now."""
    return _console().width


console = _console()
err_console = _console(stderr=True)


def say(text: str, target: Console | None = None) -> None:
    """Print `text` exactly as given (no markup, no highlighting), on stdout by default."""
    (target or console).print(Text(visible(text, lines=True)), highlight=False, soft_wrap=True)


class NoteHold:
    """Notes held back by `notes_held()`; `release()` prints them and stops holding."""

    def __init__(self) -> None:
        self.lines: list[Text] = []

    def release(self) -> None:
        if self in _holds:
            _holds.remove(self)
        lines, self.lines = self.lines, []
        for line in lines:
            _emit(line)


_holds: list[NoteHold] = []


def note(message: str, label: str = "note", style: str = "yellow") -> None:
    """A 'note: message' line on stderr, the message printed as written. Inside `notes_held()`
    it waits until the block ends or releases it."""
    message = visible(message, lines=True)
    _emit(Text.assemble((f"{label}:", style), " ", message) if label else Text(message))


def _emit(line: Text) -> None:
    if _holds:
        _holds[-1].lines.append(line)
    else:
        err_console.print(line, highlight=False, soft_wrap=True)


@contextmanager
def notes_held() -> Iterator[NoteHold]:
    """Hold the notes of a block so that a refusal's error line comes first on stderr: on a
    RebalanceError they ride on the error (`add_note`; `cli.main` prints them after the error
    line); otherwise they are printed when the block ends or calls `release()`."""
    hold = NoteHold()
    _holds.append(hold)
    try:
        yield hold
    except RebalanceError as exc:
        for line in hold.lines:
            exc.add_note(line.plain)
        hold.lines = []
        raise
    finally:
        hold.release()
