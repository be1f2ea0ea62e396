"""A partition's name, shared by the model, the ports and every layer above them, and how any
name from a cluster or a file is shown to people."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# control characters, and the invisible ones that reorder or hide text (bidi overrides such as
# U+202E, zero-width characters, the byte-order mark)
_FORMAT = "\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff"
_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f{_FORMAT}]")
_CONTROL_BUT_NEWLINE = re.compile(f"[\x00-\x09\x0b-\x1f\x7f-\x9f{_FORMAT}]")


@dataclass(frozen=True, slots=True)
class TopicPartition:
    """A partition's name: topic and index."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


def listed(names: Sequence[str], limit: int) -> str:
    """The first `limit` of `names`, comma separated, and how many more there are:
    "a-0, a-1 and 3 more"."""
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def visible(text: str, *, lines: bool = False) -> str:
    """`text` with its control characters written out as escapes (ESC as \\x1b, a tab as
    \\x09, a right-to-left override as \\u202e): a rack named by a cluster or a file can then
    neither colour nor move the terminal, nor reorder or split a table row. With `lines`,
    newlines stay (a message of several lines)."""
    pattern = _CONTROL_BUT_NEWLINE if lines else _CONTROL
    return pattern.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

