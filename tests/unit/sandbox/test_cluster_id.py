"""The sandbox's KRaft cluster id never reads as a command-line option."""
from __future__ import annotations

import uuid

import pytest

from kafka_rebalance.sandbox import cluster


def test_an_id_starting_with_a_dash_is_drawn_again(monkeypatch: pytest.MonkeyPatch) -> None:
    dashed = uuid.UUID(bytes=bytes([0xF8]) + bytes(15))   # encodes as "-AAAA..."
    plain = uuid.UUID(bytes=bytes(16))
    draws = iter([dashed, plain])
    monkeypatch.setattr(uuid, "uuid4", lambda: next(draws))

    assert cluster.new_cluster_id() == "A" * 22


def test_ids_are_22_url_safe_characters() -> None:
    ids = {cluster.new_cluster_id() for _ in range(200)}

    assert len(ids) == 200
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)
