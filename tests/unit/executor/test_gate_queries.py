"""The gate's PromQL templates: overridable from a file, kept in the journal, and a rate window
that follows the Prometheus scrape interval."""

from __future__ import annotations

from pathlib import Path

import pytest

from executor.config import ExecutorConfig, RunOverrides
from executor.journal import header_record
from executor.plan import ExecutionPlan
from executor.readings import GateQueries, window_for_scrape_interval
from kafka_rebalance.core.errors import InputError
from kafka_rebalance.usecases.run_settings import read_queries
from planner.result import Move


@pytest.mark.parametrize(("interval", "window"), [
    (None, "1m"), (1.0, "10s"), (2.5, "10s"), (15.0, "60s"), (30.0, "120s"), (60.0, "240s"),
])
def test_the_window_holds_four_scrapes_and_at_least_ten_seconds(interval: float | None,
                                                                window: str) -> None:
    assert window_for_scrape_interval(interval) == window


def test_a_queries_file_overrides_only_what_it_names(tmp_path: Path) -> None:
    path = tmp_path / "q.yaml"
    path.write_text('net_in: sum by (broker_id) (rate(in_bytes[{window}]))\n')
    queries, derive = read_queries("auto", path)
    assert derive  # no window given: it comes from the scrape interval
    assert queries.render(queries.net_in) == "sum by (broker_id) (rate(in_bytes[10s]))"
    assert queries.net_out == GateQueries().net_out
    explicit, derive = read_queries("45s", path)
    assert explicit.window == "45s" and not derive
    path.write_text("window: 2m\n")
    assert read_queries("auto", path) == (GateQueries(window="2m"), False)


@pytest.mark.parametrize(("text", "message"), [
    ("net_inn: x\n", "unknown key(s) ['net_inn']"),
    ("net_in: 5\n", "net_in must be a non-empty string"),
    ("net_in: 'rate(x[{windw}])'\n", "net_in is not a valid template"),
    ("- a\n- b\n", "must be a mapping"),
    ("net_in: [unclosed\n", "not valid YAML"),
    ("window: soon\n", "cannot read 'soon' as a duration"),
    ("broker_label: 'b\"} or vector(1) #'\n", "is not a Prometheus label name"),
    ("broker_label: node\nnet_in: sum by (node) (rate(x[{window}]))\n",
     "broker_label is 'node', but the gate's net_out is left at the defaults"),
])
def test_a_bad_queries_file_is_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "q.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")
                       .replace("(", r"\(").replace(")", r"\)")):
        read_queries("auto", path)


def test_bad_rate_window_and_missing_file_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--rate-window"):
        read_queries("fast", None)
    with pytest.raises(InputError, match="cannot read --queries file"):
        read_queries("auto", tmp_path / "missing.yaml")


def test_resume_queries_like_the_run_did() -> None:
    custom = GateQueries(net_in="a_in{{{selector}}}", broker_label="node", window="2m")
    config = ExecutorConfig(max_bytes_per_sec=2_000_000, queries=custom)
    plan = ExecutionPlan((Move("t", 0, (1, 2), (1, 3), 10),))
    settings = header_record(plan, config.to_journal())["settings"]
    assert ExecutorConfig.from_journal(settings, overrides=RunOverrides()).queries == custom
    # a journal written before the queries were kept resumes with the defaults
    old = {k: v for k, v in config.to_journal().items() if k != "queries"}
    assert ExecutorConfig.from_journal(old, overrides=RunOverrides()).queries == GateQueries()
