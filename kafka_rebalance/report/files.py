"""Report files on disk: recognizing one this tool wrote, and writing one atomically.

Kept apart from the page and the charts (which import jinja2 and matplotlib) so that the
commands can check an --html path before any work, at no start-up cost.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from kafka_rebalance.core.errors import InputError

GENERATOR = "kafka-rebalance report"
GENERATOR_META = f'<meta name="generator" content="{GENERATOR}">'
RECOGNIZE_BYTES = 4096


def is_report_file(path: Path) -> bool:
    """A report this tool wrote: its generator tag is in the first few kilobytes."""
    try:
        with path.open("rb") as handle:
            head = handle.read(RECOGNIZE_BYTES)
    except OSError:
        return False
    return GENERATOR_META.encode() in head


def write_report(path: Path, html: str) -> None:
    """Write the page atomically: a temporary file beside it, then a rename."""
    directory = path.absolute().parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise InputError(f"cannot write the report {path}: {exc.strerror}; choose a "
                         "writable --html path") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(html)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException as exc:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(exc, OSError):  # a full disk, a quota: nothing of the page is left
            raise InputError(f"cannot write the report {path}: {exc.strerror}") from None
        raise
