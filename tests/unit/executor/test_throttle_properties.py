"""Property: for any prior configs and any move, apply then restore gives back every value."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from executor.throttle import (
    BROKER_THROTTLE_CONFIGS,
    TOPIC_THROTTLE_CONFIGS,
    ThrottlePriors,
    apply_changes,
    check_applied,
    check_restored,
    plan_throttle,
    restore_changes,
    uniform_rates,
)
from planner.result import Move

BROKERS = list(range(1, 7))
entry = st.builds(lambda p, b: f"{p}:{b}", st.integers(0, 3), st.sampled_from(BROKERS))
topic_value = st.one_of(
    st.none(), st.just("*"), st.just(""),
    st.lists(entry, min_size=1, max_size=5, unique=True).map(",".join),
    st.lists(entry, min_size=1, max_size=3, unique=True).map(", ".join),
)
rate_value = st.one_of(st.none(), st.integers(1, 10**9).map(str), st.just("oops"))


@st.composite
def moves(draw: st.DrawFn) -> Move:
    rf = draw(st.integers(1, 3))
    current = tuple(draw(st.permutations(BROKERS))[:rf])
    target = tuple(draw(st.permutations(BROKERS))[:rf])
    if target == current:
        target = current[1:] + current[:1] if rf > 1 else (7,)
    return Move("t", draw(st.integers(0, 3)), current, target, 100)


def apply(configs: dict[str, dict[str, str | None]], changes: dict[str, object]) -> None:
    for key, values in changes.items():
        configs.setdefault(key, {}).update(values)  # type: ignore[call-overload]


@settings(max_examples=300, deadline=None)
@given(moves(), st.dictionaries(st.sampled_from(TOPIC_THROTTLE_CONFIGS), topic_value),
       st.dictionaries(st.sampled_from([*BROKERS, 7]),
                       st.dictionaries(st.sampled_from(BROKER_THROTTLE_CONFIGS), rate_value)),
       st.integers(1, 10**9))
def test_apply_then_restore_is_the_identity(
    move: Move, topic: dict[str, str | None], brokers: dict[int, dict[str, str | None]],
    cap: int,
) -> None:
    touched = sorted(set(move.current) | set(move.added_brokers))
    priors = ThrottlePriors(
        {b: {n: brokers.get(b, {}).get(n) for n in BROKER_THROTTLE_CONFIGS} for b in touched},
        "t", {n: topic.get(n) for n in TOPIC_THROTTLE_CONFIGS})
    plan = plan_throttle(move, priors, uniform_rates(move, cap))
    broker_cfg = {str(b): dict(v) for b, v in priors.brokers.items()}
    topic_cfg = {"t": dict(priors.topic_values)}
    original = ({k: dict(v) for k, v in broker_cfg.items()}, {"t": dict(topic_cfg["t"])})

    b_changes, t_changes = apply_changes(plan, topic_cfg["t"])
    apply(broker_cfg, {str(b): v for b, v in b_changes.items()})
    apply(topic_cfg, dict(t_changes))
    as_int = {int(b): v for b, v in broker_cfg.items()}
    assert check_applied(plan, as_int, topic_cfg["t"]) == []
    for rates in plan.broker_rates.values():
        assert all(r <= cap for r in rates.values())

    b_changes, t_changes = restore_changes(plan, topic_cfg["t"])
    apply(broker_cfg, {str(b): v for b, v in b_changes.items()})
    apply(topic_cfg, dict(t_changes))
    assert check_restored(plan, {int(b): v for b, v in broker_cfg.items()}, topic_cfg["t"]) == []
    assert (broker_cfg, topic_cfg) == original
