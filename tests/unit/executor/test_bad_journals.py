"""Corrupt or edited journals and bad execute/auto flags: a one-line error with the right exit
code, raised before any connection to the cluster (the bootstrap here refuses connections, so
reaching it would be exit code 3)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from executor.journal import header_record
from executor.plan import ExecutionPlan
from planner.result import Move

Rebalance = Callable[..., tuple[int, str]]
Record = dict[str, Any]
CONN = ["--bootstrap", "127.0.0.1:1", "--prometheus", "http://127.0.0.1:1"]
MOVE = "t-0"


def header() -> Record:
    plan = ExecutionPlan.of([Move("t", 0, (1, 2), (1, 3), 5_000_000)])
    return header_record(plan, {"max_bytes_per_sec": 2_000_000, "concurrency": 1})


def _state(state: str, **extra: object) -> Record:
    return {"kind": "state", "move": MOVE, "state": state, "at": 1.0, **extra}


def _header_move(**changes: object) -> list[Record]:
    record = header()
    record["moves"][0].update(changes)
    return [record]


def _header_without(key: str) -> list[Record]:
    record = header()
    del record["moves"][0][key]
    return [record]


JOURNAL_CASES: dict[str, tuple[list[Record], str]] = {
    "header without moves": ([{k: v for k, v in header().items() if k != "moves"}],
                             "the run header has no list of 'moves'"),
    "header move lacks target": (_header_without("target"),
                                 "malformed (moves[0]: missing 'target')"),
    "header move with a word for partition": (_header_move(partition="x"),
                                              "a move in the run header is malformed"),
    "header move changes RF": (_header_move(target=[3]), "replication factor changes"),
    "unknown state": ([header(), _state("flying")], "record 2 ('state') is malformed"),
    "cordon priors not an object": ([header(), {"kind": "cordon", "priors": [4],
                                                "present": True, "at": 1}],
                                    "record 2 ('cordon') is malformed"),
    "cordon presence a word": ([header(), {"kind": "cordon", "priors": {"4": None},
                                           "present": "yes", "at": 1}],
                               "record 2 ('cordon') is malformed"),
    "state without move": ([header(), {"kind": "state", "state": "throttling", "at": 1}],
                           "malformed (missing 'move')"),
    "throttle without fields": ([header(), _state("throttling", throttle={"x": 1})],
                                "malformed (missing 'prior_brokers')"),
    "baseline not an object": ([header(), _state("throttling", baseline={"in": 1})],
                               "record 2 ('state') is malformed"),
    "cooldown time as a word": ([header()] + [_state(s) for s in (
        "throttling", "submitted", "copying", "verifying", "unthrottling")]
        + [_state("cooling_down", at="x")], "record 7 ('state') is malformed"),
    "unknown outcome": ([header(), {"kind": "end", "outcome": "meh", "at": 1}],
                        "record 2 ('end') is malformed"),
    "rates without throttle": ([header(), {"kind": "rates", "move": MOVE}],
                               "record 2 ('rates') is malformed (missing 'throttle')"),
    "throttles without present": ([header(), {"kind": "throttles", "move": MOVE}],
                                  "malformed (missing 'present')"),
    "time as a word": ([header(), _state("throttling", at="yesterday")],
                       "record 2 ('state') is malformed ('at' must be a time in seconds, got "
                       "'yesterday')"),
    "time NaN": ([header(), {"kind": "note", "message": "x", "at": math.nan}],
                 "record 2 ('note') is malformed ('at' must be a time in seconds, got nan)"),
    "time past any date": ([header(), {"kind": "note", "message": "x", "at": 3e11}],
                           "record 2 ('note') is malformed ('at' 3e+11 is after the year 9999)"),
    "time missing": ([header(), {"kind": "resume"}], "record 2 ('resume') is malformed "
                                                      "(missing 'at')"),
    "header partition Infinity": (_header_move(partition=math.inf),
                                  "malformed (moves[0]: 'partition' must be an integer, got inf)"),
    "header partition 2**63": (_header_move(partition=2**63), "malformed (moves[0]: "
                               "'partition' must be at most 2147483647"),
    "header partition as digits": (_header_move(partition="0"),
                                   "malformed (moves[0]: 'partition' must be an integer"),
    "header topic with a space": (_header_move(topic="a b"),
                                  "malformed (moves[0]: 'topic' must be a Kafka topic name"),
    "header move with an unknown key": (_header_move(sizebytes=1), "malformed (moves[0]: "
                                        "unknown key 'sizebytes' (did you mean 'size_bytes'?))"),
    "header topic with a lone surrogate": (_header_move(topic="\udc80"),
                                           "first line is not a JSON record (lone leading "
                                           "surrogate"),
    "baseline NaN": ([header(), _state("throttling", baseline={"in": {"1": math.nan},
                                                               "out": {}})],
                     "malformed (baseline rate nan of broker '1' must be a number >= 0)"),
    "baseline rate as text": ([header(), _state("throttling", baseline={"in": {}, "out": {
        "2": "5"}})], "malformed (baseline rate '5' of broker '2' must be a number >= 0)"),
}


RAW_JOURNALS = {
    "nested 100,000 deep": (lambda: json.dumps(header()) + "\n" + "[" * 100_000 + "]" * 100_000
                            + "\n" + json.dumps(_state("throttling")) + "\n",
                            "line 2 is not a JSON record (nested too deeply at line 1 column"),
    "nested first line": (lambda: "[" * 100_000 + "]" * 100_000 + "\n",
                          "first line is not a JSON record (nested too deeply"),
}


@pytest.mark.parametrize("content, message", RAW_JOURNALS.values(), ids=RAW_JOURNALS.keys())
@pytest.mark.parametrize("command", ["status", "resume", "cancel", "clear-throttles"])
def test_undecodable_journals_are_refused(tmp_path: Path, rebalance: Rebalance, command: str,
                                          content: Callable[[], str], message: str) -> None:
    journal = tmp_path / "p.json.journal"
    journal.write_text(content())
    before = journal.read_bytes()
    args = ["--journal", str(journal)] + ([] if command == "status" else CONN)
    code, error = rebalance(command, *args)
    assert (code, "\n" in error, message in error) == (6, False, True), error
    assert journal.read_bytes() == before


def write_journal(path: Path, records: list[Record]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.mark.parametrize("records, message", JOURNAL_CASES.values(), ids=JOURNAL_CASES.keys())
@pytest.mark.parametrize("command", ["status", "resume", "cancel", "clear-throttles"])
def test_corrupt_journals_are_refused_before_the_cluster(tmp_path: Path, rebalance: Rebalance,
                                                         command: str, records: list[Record],
                                                         message: str) -> None:
    journal = write_journal(tmp_path / "p.json.journal", records)
    before = journal.read_bytes()
    args = ["--journal", str(journal)] + ([] if command == "status" else CONN)
    code, error = rebalance(command, *args)
    assert code == 6, error
    assert message in error and "journal" in error
    assert journal.read_bytes() == before


@pytest.mark.parametrize("command", ["status", "resume", "cancel", "clear-throttles"])
def test_a_directory_as_journal_is_named(tmp_path: Path, rebalance: Rebalance,
                                         command: str) -> None:
    args = ["--journal", str(tmp_path)] + ([] if command == "status" else CONN)
    code, error = rebalance(command, *args)
    assert (code, "Is a directory; give the journal file" in error) == (6, True), error


@pytest.mark.parametrize("command", ["resume", "cancel", "clear-throttles"])
def test_empty_journal_says_so_rather_than_asking_for_a_cap(tmp_path: Path,
                                                            rebalance: Rebalance,
                                                            command: str) -> None:
    journal = tmp_path / "p.json.journal"
    journal.write_text("")
    code, error = rebalance(command, "--journal", str(journal), *CONN)
    assert code == 6 and "holds no complete journal record" in error, error
    assert "never wrote its header changed nothing" in error


NOT_JOURNALS = {
    "cut inside the header": lambda: json.dumps(header())[:60],
    "one JSON object, no newline": lambda: json.dumps({"version": 1, "partitions": []}),
    "JSON lines of something else": lambda: '{"a": 1}\n{"b": 2}\n{"c": 3}',
}


@pytest.mark.parametrize("content", NOT_JOURNALS.values(), ids=NOT_JOURNALS.keys())
@pytest.mark.parametrize("command", ["status", "resume", "cancel", "clear-throttles"])
def test_a_refused_journal_is_never_written(tmp_path: Path, rebalance: Rebalance, command: str,
                                            content: Callable[[], str]) -> None:
    """The torn-tail repair runs only on a file proven to be a journal (a valid header):
    a refusal leaves every byte of the file as it was."""
    journal = tmp_path / "p.json.journal"
    journal.write_text(content())
    before = journal.read_bytes()
    args = ["--journal", str(journal)] + ([] if command == "status" else CONN)
    code, error = rebalance(command, *args)
    assert code == 6, error
    assert journal.read_bytes() == before


@pytest.mark.parametrize("command", ["resume", "cancel", "clear-throttles"])
def test_a_journal_with_a_torn_tail_refused_later_keeps_its_bytes(
        tmp_path: Path, rebalance: Rebalance, command: str) -> None:
    """A valid journal whose last line was cut, refused after it was opened (here the
    cluster does not answer): the torn tail is still there, every byte as it was."""
    journal = write_journal(tmp_path / "p.json.journal", [header(), _state("throttling")])
    with journal.open("ab") as f:
        f.write(b'{"kind":"state","move":"t-0","sta')
    before = journal.read_bytes()
    code, error = rebalance(command, "--journal", str(journal), *CONN)
    assert code != 0, error
    assert journal.read_bytes() == before


@pytest.mark.parametrize("command", ["resume", "cancel", "clear-throttles"])
def test_malformed_settings_in_the_header(tmp_path: Path, rebalance: Rebalance,
                                          command: str) -> None:
    record = header()
    record["settings"] = {"max_bytes_per_sec": 2_000_000, "concurrency": "two"}
    journal = write_journal(tmp_path / "p.json.journal", [record])
    code, error = rebalance(command, "--journal", str(journal), *CONN)
    assert (code, "the run header's settings are malformed" in error) == (6, True), error


def _plan_file(tmp_path: Path) -> Path:
    from kafka_rebalance.files.planfile import write_plan
    from planner.goals import Budget, Goals
    from planner.planfile import SolverInfo, make_plan_file
    from planner.result import SolverStatus
    from topology.snapshot import topology_from_dict

    cap = {"disk_bytes": 1000, "net_in_bytes_per_sec": 1000, "net_out_bytes_per_sec": 1000}
    topology = topology_from_dict({
        "version": 1, "brokers": [{"id": i, "rack": None, "capacity": cap} for i in (1, 2, 3)],
        "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2], "size_bytes": 10}]})
    plan = make_plan_file(topology, (Move("t", 0, (1, 2), (1, 3), 10),), Goals(), Budget(),
                          SolverInfo(SolverStatus.OPTIMAL, 10), "2026-01-01T00:00:00+00:00")
    path = tmp_path / "plan.json"
    write_plan(path, plan)
    return path


@pytest.mark.parametrize("flags, message", [
    (["--max-mbps", "nan"], "--max-mbps must be a finite number"),
    (["--max-mbps", "inf"], "--max-mbps must be a finite number"),
    (["--max-mbps", "5", "--cooldown", "nan"], "--cooldown must be a finite number"),
    (["--max-mbps", "5", "--gate-floor-mbps", "nan"], "--gate-floor-mbps must be a finite"),
    (["--max-mbps", "5", "--gate-timeout", "inf"], "--gate-timeout must be a finite number"),
    (["--max-mbps", "5", "--metrics-port", "99999"], "--metrics-port must be between 1"),
    (["--max-mbps", "5", "--metrics-port", "-1"], "--metrics-port must be between 1"),
], ids=["max-mbps NaN", "max-mbps infinite", "cooldown NaN", "gate floor NaN",
        "gate timeout infinite", "port too big", "negative port"])
def test_bad_execute_flags_are_refused_before_the_cluster(tmp_path: Path, rebalance: Rebalance,
                                                          flags: list[str],
                                                          message: str) -> None:
    journal = tmp_path / "run.journal"
    code, error = rebalance("execute", str(_plan_file(tmp_path)), *CONN, "--journal",
                            str(journal), *flags)
    assert (code, message in error) == (2, True), error
    assert not journal.exists()


def test_resume_refuses_a_bad_metrics_port_first(tmp_path: Path, rebalance: Rebalance) -> None:
    journal = write_journal(tmp_path / "p.json.journal", [header()])
    code, error = rebalance("resume", "--journal", str(journal), *CONN, "--metrics-port", "0")
    assert (code, "--metrics-port must be between 1 and 65535" in error) == (2, True), error


@pytest.mark.parametrize("content, message", [
    ("default:\n  disk_bytes: .inf\n", "not a finite number"),
    ("default:\n  disk: 1TB\n", "unknown key 'disk'"),
], ids=["infinite capacity", "unknown key"])
def test_auto_checks_capacities_at_start(tmp_path: Path, rebalance: Rebalance, content: str,
                                         message: str) -> None:
    caps = tmp_path / "caps.yaml"
    caps.write_text(content)
    code, error = rebalance("auto", "--once", *CONN, "--max-mbps", "5", "--window",
                            "daily 00:00-24:00", "--state-dir", str(tmp_path / "state"),
                            "--capacities", str(caps))
    assert (code, message in error) == (2, True), error


@pytest.mark.parametrize("interval", ["nan", "inf"])
def test_auto_interval_must_be_finite(tmp_path: Path, rebalance: Rebalance,
                                      interval: str) -> None:
    code, error = rebalance("auto", *CONN, "--max-mbps", "5", "--window", "daily 00:00-24:00",
                            "--state-dir", str(tmp_path / "state"), "--interval", interval)
    assert (code, "--interval must be minutes between 0 and a week" in error) == (2, True), error


def test_resume_max_mbps_must_be_finite(tmp_path: Path, rebalance: Rebalance) -> None:
    journal = write_journal(tmp_path / "p.json.journal", [header()])
    code, error = rebalance("resume", "--journal", str(journal), *CONN, "--max-mbps", "nan")
    assert (code, "--max-mbps must be a finite number" in error) == (2, True), error


@pytest.mark.parametrize("command", ["status", "resume", "cancel", "clear-throttles"])
def test_a_plan_file_given_as_journal_is_named(tmp_path: Path, rebalance: Rebalance,
                                               command: str) -> None:
    plan = _plan_file(tmp_path)
    before = plan.read_bytes()
    args = ["--journal", str(plan)] + ([] if command == "status" else CONN)
    code, error = rebalance(command, *args)
    assert (code, f"{plan} is not a rebalance journal" in error) == (6, True), error
    assert plan.read_bytes() == before
