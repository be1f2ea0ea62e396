"""The journal's records after its header, as typed values: one frozen class per kind, each
with its JSON line form (`to_json`) and the strict reading of that form (`parse_record`).

A journal line is a JSON object whose "kind" names its record (RecordKind) and whose "at" says
when it was written (seconds since the epoch); the header (kind "run") carries the plan and is
read by executor.journal. A malformed value raises ValueError, KeyError or TypeError; replay
turns those into an error naming the record.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, TypeGuard, TypeVar

from executor.gates import NetworkSample
from executor.state import MoveState
from executor.throttle import ThrottlePlan, plan_from_json, plan_to_json
from kafka_rebalance.core.names import visible

Record = dict[str, Any]  # a record as a JSON line holds it


class RecordKind(StrEnum):
    RUN = "run"  # the header: the plan, the settings, the run id
    STATE = "state"  # a move enters a state (with its throttle and baseline when it starts)
    RATES = "rates"  # new rates for a move's throttle (--adaptive), before they are set
    THROTTLES = "throttles"  # a move's throttles are (about to be) present, or confirmed gone
    GUARD = "guard"  # the SLO guard's levels, before they are set
    CORDON = "cordon"  # drained brokers cordoned (with their priors), or their priors restored
    RETRY = "retry"  # a failed or cancelled move starts again
    NOTE = "note"  # something said during the run
    END = "end"  # the run ended
    RESUME = "resume"  # an ended run goes on
    CANCEL = "cancel"  # the operator cancelled the run (before its moves are reverted)
    DIR_THROTTLE = "dir_throttle"  # the log-dir copy throttle set (with its priors), or restored
    DIR_MOVE = "dir_move"  # a replica reached its new log dir (or was given up, with a reason)


class RunOutcome(StrEnum):
    COMPLETED = "completed"  # every move done
    STOPPED = "stopped"  # a move failed or was cancelled by the executor; resumable
    CANCELLED = "cancelled"  # an operator cancelled the run


@dataclass(frozen=True)
class StateRecord:
    move: str
    state: MoveState
    at: float
    throttle: ThrottlePlan | None = None
    baseline: NetworkSample | None = None
    reason: str | None = None  # None: the move keeps the reason it had

    def to_json(self) -> Record:
        record: Record = {"kind": RecordKind.STATE.value, "move": self.move,
                          "state": self.state.value, "at": self.at}
        if self.throttle is not None:
            record["throttle"] = plan_to_json(self.throttle)
        if self.baseline is not None:
            record["baseline"] = {
                "in": {str(b): v for b, v in sorted(self.baseline.net_in.items())},
                "out": {str(b): v for b, v in sorted(self.baseline.net_out.items())}}
        if self.reason:
            record["reason"] = self.reason
        return record


@dataclass(frozen=True)
class RatesRecord:
    move: str
    throttle: ThrottlePlan
    at: float

    def to_json(self) -> Record:
        return {"kind": RecordKind.RATES.value, "move": self.move,
                "throttle": plan_to_json(self.throttle), "at": self.at}


@dataclass(frozen=True)
class ThrottlesRecord:
    move: str
    present: bool
    at: float

    def to_json(self) -> Record:
        return {"kind": RecordKind.THROTTLES.value, "move": self.move, "present": self.present,
                "at": self.at}


@dataclass(frozen=True)
class GuardRecord:
    levels: Mapping[int, int]  # every broker under the cap
    changes: tuple[str, ...]
    at: float

    def to_json(self) -> Record:
        return {"kind": RecordKind.GUARD.value,
                "levels": {str(b): v for b, v in sorted(self.levels.items())},
                "changes": list(self.changes), "at": self.at}


@dataclass(frozen=True)
class BrokerConfigRecord:
    """A run-wide broker config the run sets and puts back: each broker's value before (None:
    not set); `present` before the config is set, not present once the priors are back."""

    KIND: ClassVar[RecordKind]
    priors: Mapping[int, str | None]
    present: bool
    at: float

    def to_json(self) -> Record:
        return {"kind": self.KIND.value, "present": self.present, "at": self.at,
                "priors": {str(b): v for b, v in sorted(self.priors.items())}}


@dataclass(frozen=True)
class CordonRecord(BrokerConfigRecord):
    """The brokers a drain cordons (KIP-1066) and each one's `cordoned.log.dirs` before."""

    KIND: ClassVar[RecordKind] = RecordKind.CORDON


@dataclass(frozen=True)
class DirThrottleRecord(BrokerConfigRecord):
    """The brokers whose replicas move between log dirs and each one's
    `replica.alter.log.dirs.io.max.bytes.per.second` before."""

    KIND: ClassVar[RecordKind] = RecordKind.DIR_THROTTLE


@dataclass(frozen=True)
class DirMoveRecord:
    """A replica's move between log dirs ended: done, or given up for `reason`."""

    replica: str
    at: float
    reason: str = ""

    def to_json(self) -> Record:
        return {"kind": RecordKind.DIR_MOVE.value, "replica": self.replica, "at": self.at,
                **({"reason": self.reason} if self.reason else {})}


@dataclass(frozen=True)
class RetryRecord:
    move: str
    at: float

    def to_json(self) -> Record:
        return {"kind": RecordKind.RETRY.value, "move": self.move, "at": self.at}


@dataclass(frozen=True)
class NoteRecord:
    message: str
    at: float

    def to_json(self) -> Record:
        return {"kind": RecordKind.NOTE.value, "message": self.message, "at": self.at}


@dataclass(frozen=True)
class EndRecord:
    outcome: RunOutcome
    at: float
    reason: str = ""

    def to_json(self) -> Record:
        return {"kind": RecordKind.END.value, "outcome": self.outcome.value, "at": self.at,
                "reason": self.reason}


@dataclass(frozen=True)
class ResumeRecord:
    """A run goes on: after its end, or under another cap (`resume --max-mbps`, an `auto`
    cycle with its own), which views then time and rate the moves after it with."""

    at: float
    max_bytes_per_sec: int | None = None  # the cap from here on; None: unchanged

    def to_json(self) -> Record:
        record: Record = {"kind": RecordKind.RESUME.value, "at": self.at}
        if self.max_bytes_per_sec is not None:
            record["max_bytes_per_sec"] = self.max_bytes_per_sec
        return record


@dataclass(frozen=True)
class CancelRecord:
    at: float

    def to_json(self) -> Record:
        return {"kind": RecordKind.CANCEL.value, "at": self.at}


RunRecord = (StateRecord | RatesRecord | ThrottlesRecord | GuardRecord | RetryRecord
             | NoteRecord | EndRecord | ResumeRecord | CordonRecord | CancelRecord
             | DirThrottleRecord | DirMoveRecord)


def _cap(value: object) -> int | None:
    """A resume's cap: a whole number of bytes per second, at least 1 (or none given)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"cap {str(value)[:40]!r} is not a whole number of bytes/s >= 1")
    return value


def _said(value: object) -> str:
    """Text a journal says (a reason, a note), to be shown and never obeyed: its control
    characters written out, so that an edited file cannot steer the terminal."""
    return visible(str(value), lines=True)


def parse_record(raw: Mapping[str, Any]) -> RunRecord:
    """The typed record of a journal line after the header (ValueError naming what is wrong;
    KeyError for a missing key). The time is read last: a record without its body is named by
    what it lacks."""
    kind = RecordKind(raw["kind"]) if raw.get("kind") in set(RecordKind) else None

    def at() -> float:
        return _time(raw["at"])

    if kind is RecordKind.STATE:
        return StateRecord(
            move=str(raw["move"]), state=MoveState(raw["state"]),
            throttle=plan_from_json(raw["throttle"]) if "throttle" in raw else None,
            baseline=_baseline(raw["baseline"]) if "baseline" in raw else None,
            reason=_said(raw["reason"]) if "reason" in raw else None, at=at())
    if kind is RecordKind.RATES:
        return RatesRecord(move=str(raw["move"]), throttle=plan_from_json(raw["throttle"]),
                           at=at())
    if kind is RecordKind.THROTTLES:
        return ThrottlesRecord(move=str(raw["move"]), present=bool(raw["present"]), at=at())
    if kind is RecordKind.GUARD:
        changes = raw.get("changes", [])
        if not isinstance(changes, list):
            raise ValueError("the guard's changes are not a list")
        return GuardRecord(levels=_levels(raw["levels"]),
                           changes=tuple(_said(c) for c in changes), at=at())
    if kind is RecordKind.RETRY:
        return RetryRecord(move=str(raw["move"]), at=at())
    if kind is RecordKind.CORDON:
        return _config_record(CordonRecord, raw, at)
    if kind is RecordKind.DIR_THROTTLE:
        return _config_record(DirThrottleRecord, raw, at)
    if kind is RecordKind.DIR_MOVE:
        return DirMoveRecord(replica=str(raw["replica"]), reason=_said(raw.get("reason", "")),
                             at=at())
    if kind is RecordKind.NOTE:
        return NoteRecord(message=_said(raw.get("message", "")), at=at())
    if kind is RecordKind.END:
        return EndRecord(outcome=RunOutcome(raw["outcome"]), reason=_said(raw.get("reason", "")),
                         at=at())
    if kind is RecordKind.RESUME:
        return ResumeRecord(at=at(), max_bytes_per_sec=_cap(raw.get("max_bytes_per_sec")))
    if kind is RecordKind.CANCEL:
        return CancelRecord(at=at())
    raise UnknownKind(raw.get("kind"))


ConfigRecord = TypeVar("ConfigRecord", bound=BrokerConfigRecord)


def _config_record(cls: type[ConfigRecord], raw: Mapping[str, Any],
                   at: Callable[[], float]) -> ConfigRecord:
    return cls(priors=_priors(raw["priors"]), present=_flag(raw["present"]), at=at())


class UnknownKind(ValueError):
    """A line whose kind no version of the journal writes after the header."""

    def __init__(self, kind: object) -> None:
        super().__init__(f"unknown record kind {kind!r}")
        self.kind = kind


def is_number(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) \
        and math.isfinite(value)


# The last second a date can show (9999-12-31T23:59:59Z): a later 'at' is damage, not a time.
LAST_TIME = 253_402_300_799


def _time(value: object) -> float:
    """Every record after the header says when it was written: seconds since the epoch."""
    if not is_number(value) or value < 0:
        raise ValueError(f"'at' must be a time in seconds, got {value!r:.40}")
    if value > LAST_TIME:
        raise ValueError(f"'at' {value:.6g} is after the year 9999")
    return float(value)


def _baseline(data: Mapping[str, Any]) -> NetworkSample:
    return NetworkSample(_rates(data["in"]), _rates(data["out"]))


def _rates(data: Mapping[str, Any]) -> dict[int, float]:
    """Bytes/s per broker id: ids are digits, rates finite numbers >= 0 (else ValueError)."""
    rates = {}
    for broker, rate in data.items():
        if not (str(broker).isascii() and str(broker).isdigit()) or not is_number(rate) \
                or rate < 0:
            raise ValueError(f"baseline rate {rate!r:.40} of broker {broker!r:.20} must be a "
                             "number >= 0")
        rates[int(broker)] = float(rate)
    return rates


def _priors(data: Any) -> dict[int, str | None]:
    if not isinstance(data, Mapping):
        raise ValueError("the priors are not an object")
    priors = {int(b): (None if v is None else str(v)) for b, v in data.items()}
    if any(b < 0 for b in priors):
        raise ValueError("a broker id of the priors is negative")
    return priors


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{value!r} is not true or false")
    return value


def _levels(data: Mapping[str, Any]) -> dict[int, int]:
    levels = {int(b): int(v) for b, v in data.items()}
    if any(v <= 0 for v in levels.values()):
        raise ValueError("a guard level is not positive")
    return levels
