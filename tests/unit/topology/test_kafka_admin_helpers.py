"""Pure helpers of the Kafka adapter: config batching, dynamic-value filter, read-back check,
the replication quota window."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pytest
from confluent_kafka.admin import ConfigEntry, ConfigResource, ConfigSource, ResourceType

from topology.kafka_admin import _batches, _dynamic_value, _mismatches, _quota_window


def test_broker_resources_go_one_per_request_and_topics_together() -> None:
    resources = [ConfigResource(ResourceType.BROKER, "1"), ConfigResource(ResourceType.TOPIC, "a"),
                 ConfigResource(ResourceType.BROKER, "2"), ConfigResource(ResourceType.TOPIC, "b")]
    batches = _batches(resources)
    assert [[r.name for r in batch] for batch in batches] == [["1"], ["2"], ["a", "b"]]


def test_only_values_set_at_the_asked_level_count() -> None:
    dynamic = ConfigEntry("x", "5", source=ConfigSource.DYNAMIC_BROKER_CONFIG)
    static = ConfigEntry("x", "9", source=ConfigSource.STATIC_BROKER_CONFIG)
    default = ConfigEntry("x", "1", source=ConfigSource.DEFAULT_CONFIG)
    assert _dynamic_value(dynamic, ConfigSource.DYNAMIC_BROKER_CONFIG) == "5"
    assert _dynamic_value(static, ConfigSource.DYNAMIC_BROKER_CONFIG) is None
    assert _dynamic_value(default, ConfigSource.DYNAMIC_BROKER_CONFIG) is None
    assert _dynamic_value(None, ConfigSource.DYNAMIC_TOPIC_CONFIG) is None
    assert _dynamic_value(dynamic, ConfigSource.DYNAMIC_TOPIC_CONFIG) is None


def test_mismatches_list_writes_not_yet_described_ignoring_whitespace() -> None:
    described = {1: {"rate": "100", "list": "0:1,0:2"}, 2: {"rate": None, "list": None}}
    calls: list[tuple[list[int], list[str]]] = []

    def describe(ids: Iterable[int], names: Sequence[str]) -> dict[int, dict[str, str | None]]:
        calls.append((list(ids), list(names)))
        return {i: {n: described[i][n] for n in names} for i in ids}

    assert _mismatches(describe, {1: {"rate": "100", "list": "0:1, 0:2"}, 2: {"rate": None}}) == []
    assert _mismatches(describe, {1: {"rate": "200"}, 2: {"list": "0:2"}}) == ["1 rate", "2 list"]
    assert _mismatches(describe, {1: {}}) == []
    assert calls[0] == ([1, 2], ["list", "rate"])


@pytest.mark.parametrize(("num", "size", "window"), [
    ("11", "1", 11.0),  # Kafka's defaults
    ("3", "2", 6.0),
    ("0", "1", None),  # not a window: the broker says nothing usable
    ("x", "1", None),
    (None, "1", None),  # a broker that does not know the config
])
def test_a_brokers_quota_window_is_its_samples_times_their_size(
        num: str | None, size: str, window: float | None) -> None:
    entries = {"replication.quota.window.size.seconds": ConfigEntry(
        "replication.quota.window.size.seconds", size, source=ConfigSource.DEFAULT_CONFIG)}
    if num is not None:  # whatever level sets it
        entries["replication.quota.window.num"] = ConfigEntry(
            "replication.quota.window.num", num, source=ConfigSource.STATIC_BROKER_CONFIG)
    assert _quota_window(entries) == window
