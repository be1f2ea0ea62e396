"""Declared schemas of the tool's files (pydantic), and their errors as problems a user can act on.

Each file format declares its entries once (snapshot_schema, planner.planfile_schema, the
journal header) from the annotated types below: strict types (a bool is not an integer, a
string is not a number), Kafka's bounds (int32 ids, topic names), finite numbers and plausible
magnitudes. `describe` turns pydantic's errors into one phrase per problem that names the entry
and the key, and suggests the known key a misspelt one is close to.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import lru_cache
from typing import Annotated, Any, NotRequired, Required, Union, get_args, get_origin

from pydantic import Field, StringConstraints, ValidationError
from pydantic import Strict as _Strict
from pydantic_core import ErrorDetails
from typing_extensions import get_type_hints, is_typeddict

from kafka_rebalance.core.errors import MAX_PROBLEMS
from topology.model import INT32_MAX, TOPIC_CHARS, TOPIC_MAX_LENGTH, TOPIC_NOUN
from topology.units import MAX_QUANTITY

KafkaId = Annotated[int, _Strict(), Field(ge=0, le=INT32_MAX)]
TopicName = Annotated[str, _Strict(), StringConstraints(min_length=1, max_length=TOPIC_MAX_LENGTH,
                                                        pattern=f"^{TOPIC_CHARS}$")]
Integer = Annotated[int, _Strict()]
Count = Annotated[int, _Strict(), Field(ge=0)]
ByteCount = Annotated[int, _Strict(), Field(ge=0, le=int(MAX_QUANTITY))]
Quantity = Annotated[float, _Strict(), Field(ge=0.0, le=MAX_QUANTITY, allow_inf_nan=False)]
Number = Annotated[float, _Strict(), Field(allow_inf_nan=False)]
Positive = Annotated[float, _Strict(), Field(gt=0, le=MAX_QUANTITY, allow_inf_nan=False)]
Flag = Annotated[bool, _Strict()]
Text = Annotated[str, _Strict()]

Loc = tuple[int | str, ...]
Labeler = Callable[[Loc], str | None]
"""Names the entry at a location that ends in a list index (e.g. 'partition orders-3'), or None
for the generic name ('partitions[3]')."""

BROKER_IDS = "a list of broker ids"
STRINGS = "a list of strings"
_OBJECT_ERRORS = frozenset({"dict_type", "model_type", "model_attributes_type",
                            "typed_dict_type"})


def describe(exc: ValidationError, root: object, labeler: Labeler,
             nouns: Mapping[str, str]) -> tuple[list[str], int]:
    """The first MAX_PROBLEMS errors as phrases, and how many errors there are in all.

    `root` is the validated type (to suggest known keys); `nouns` says what a key holds, for
    type errors ('replicas': 'a list of broker ids').
    """
    errors = exc.errors(include_url=False)
    nouns = {"topic": TOPIC_NOUN, **nouns}
    return [_problem(e, root, labeler, nouns) for e in errors[:MAX_PROBLEMS]], len(errors)


def near_misses(keys: Collection[str], known: Sequence[str]) -> list[str]:
    """Problems for keys that are not known but close to one that is (a misspelling)."""
    problems = []
    for key in sorted(str(k) for k in keys if k not in known):
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.8)
        if close:
            problems.append(f"unknown key {key!r} (did you mean {close[0]!r}?)")
    return problems


def _problem(error: ErrorDetails, root: object, labeler: Labeler,
             nouns: Mapping[str, str]) -> str:
    loc = tuple(error["loc"])
    kind, value = error["type"], error["input"]
    if kind in _OBJECT_ERRORS and loc and isinstance(loc[-1], int):
        return f"{_label(loc, labeler)}: expected an object, got {_shown(value)}"
    if kind == "extra_forbidden":
        label = _label(loc[:-1], labeler)
        text = f"unknown key {loc[-1]!r}{_suggestion(str(loc[-1]), root, loc[:-1])}"
        return f"{label}: {text}" if label else text
    cut = max((i for i, step in enumerate(loc) if isinstance(step, str)), default=-1)
    label = _label(loc[:cut], labeler) if cut > 0 else ""
    key = str(loc[cut]) if cut >= 0 else ""
    index = "".join(f"[{i}]" for i in loc[cut + 1:])
    noun = nouns.get(key) if not index else None
    phrase = _phrase(kind, f"'{key}'{index}" if key else "the document", value,
                     error.get("ctx", {}), noun or _KIND_NOUNS.get(kind))
    # a kind of error the schemas do not declare today keeps pydantic's words
    text = phrase or f"'{key}'{index}: {error['msg'][:1].lower()}{error['msg'][1:]}"
    return f"{label}: {text}" if label else text


def _phrase(kind: str, subject: str, value: Any, ctx: Mapping[str, Any],
            noun: str | None) -> str | None:
    got = f", got {_shown(value)}"
    huge_int = isinstance(value, int) and not isinstance(value, bool)
    if kind == "missing":
        return f"missing {subject}"
    if kind in ("finite_number", "float_type") and huge_int:
        return f"{subject} is implausibly large (over {MAX_QUANTITY:.0e}); check its unit"
    if kind == "finite_number":
        return f"{subject} must be a finite number{got}"
    if kind == "greater_than_equal":
        return (f"{subject} is negative ({value})" if isinstance(ctx.get("ge"), float)
                else f"{subject} must be an integer >= {ctx.get('ge')}{got}")
    if kind == "greater_than":
        return f"{subject} must be positive{got}"
    if kind == "less_than_equal":
        return _too_large(subject, value, ctx.get("le"))
    if kind == "string_unicode":
        return f"{subject} is not valid Unicode text (an unpaired surrogate)"
    return f"{subject} must be {noun}{got}" if noun else None


def _too_large(subject: str, value: Any, limit: Any) -> str:
    if limit == INT32_MAX:
        return (f"{subject} must be at most {INT32_MAX} (Kafka ids and partition numbers are "
                f"32-bit integers), got {value}")
    try:
        shown = f"{float(value):.3g}"
    except (OverflowError, TypeError, ValueError):
        shown = "beyond any float"
    return f"{subject} is implausibly large ({shown}, over {limit:.0e}); check its unit"


_KIND_NOUNS = {
    "int_type": "an integer", "int_parsing": "an integer", "int_from_float": "an integer",
    "float_type": "a number", "float_parsing": "a number", "bool_type": "true or false",
    "bool_parsing": "true or false", "string_type": "a string", "list_type": "a list",
    "tuple_type": "a list", "dict_type": "an object", "typed_dict_type": "an object",
    "model_type": "an object", "string_too_short": "a non-empty string",
}


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _label(loc: Loc, labeler: Labeler) -> str:
    """'partition orders-3 capacity' or 'before.brokers[2].load' for a location."""
    label = ""
    named = False
    for depth, step in enumerate(loc):
        if isinstance(step, int):
            name = labeler(loc[: depth + 1])
            label, named = (name, True) if name else (f"{label}[{step}]", False)
        else:
            label = f"{label} {step}" if named else f"{label}.{step}" if label else str(step)
            named = False
    return label


def _suggestion(key: str, root: object, loc: Loc) -> str:
    known = _keys_at(root, loc)
    if not known:
        return ""
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.7)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (expected {', '.join(known)})"


def _keys_at(root: object, loc: Loc) -> tuple[str, ...]:
    """The keys the object at `loc` of a TypedDict schema may have (() when unknown)."""
    kind: object = root
    for step in loc:
        kind = next((inner for arm in _arms(kind)
                     if (inner := _inner(arm, step)) is not None), None)
        if kind is None:
            return ()
    found = [arm for arm in _arms(kind) if is_typeddict(arm)]
    return tuple(_fields(found[0])) if found else ()


def _inner(kind: object, step: int | str) -> object | None:
    if isinstance(step, str) and is_typeddict(kind):
        return _fields(kind).get(step)
    inner: object = None
    if isinstance(step, int) and get_origin(kind) in (list, tuple):
        inner = get_args(kind)[0]
    elif isinstance(step, str) and get_origin(kind) is dict:
        inner = get_args(kind)[1]
    return inner


def _arms(kind: object) -> list[object]:
    """The alternatives of a type, with Annotated, Required and NotRequired taken off."""
    origin = get_origin(kind)
    if origin in (Annotated, Required, NotRequired):
        return _arms(get_args(kind)[0])
    if origin in (Union, types.UnionType):
        return [arm for option in get_args(kind) for arm in _arms(option)]
    return [kind]


@lru_cache(maxsize=64)
def _fields(kind: Any) -> dict[str, object]:
    return dict(get_type_hints(kind, include_extras=True))
