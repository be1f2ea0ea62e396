"""A partition's name, shared by the model, the ports and every layer above them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


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
