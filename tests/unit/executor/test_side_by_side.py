"""Moves side by side (--concurrency N or auto): each broker sends for at most one move and
receives for at most one, a broker that only keeps its replica is free, and a broker rate two
moves set is put back to the operator's value by the last of them, on success, cancel or after
a crash (clear-throttles)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from executor.config import AUTO, Event, EventKind
from executor.flows import busiest_first, remaining_load
from executor.records import RunOutcome
from executor.runner import Executor, clear_throttles_from
from executor.throttle import FOLLOWER_RATE, LEADER_RATE
from planner.result import Move
from tests.unit.executor.fakes import MB, Crash, MemorySink, World, make_world
from topology.model import TopicPartition

SHARED = 2  # in the standard moves, orders-0 keeps its replica on broker 2 and orders-1 sends


def start(world: World) -> Executor:
    return Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                          reporter=world.reporter)


def _watch_ends(world: World, peak: list[int]) -> None:
    """No broker sends for, or receives for, two moves at once, but while one of them is in
    its last seconds (handing its ends over: the copies then share the broker's quota)."""
    lead = 3 * world.config.poll_seconds * world.config.max_bytes_per_sec

    def watch(w: World, e: Event) -> None:
        ending = {tp for tp, r in w.admin.moving.items()
                  if w.admin.parts[tp].size - r.copied <= lead}
        for role in ("sender", "receiver"):
            seen: dict[int, list[TopicPartition]] = {}
            for tp, r in w.admin.moving.items():
                for b in ([w.admin.parts[tp].leader] if role == "sender" else r.adding):
                    seen.setdefault(b, []).append(tp)
            for b, tps in seen.items():
                assert len(tps) <= 2 and (len(tps) == 1 or set(tps) & ending), (role, b, tps)
        peak.append(len(w.admin.moving))
    world.hooks.append(watch)


@pytest.mark.parametrize("concurrency", [2, 3, AUTO])
def test_no_broker_sends_or_receives_for_two_moves_but_keeping_a_replica_is_free(
        concurrency: int | str) -> None:
    world = make_world(concurrency=concurrency)
    before = world.admin.configs()
    peak: list[int] = []
    _watch_ends(world, peak)
    assert start(world).run().outcome is RunOutcome.COMPLETED
    # orders-0 (1 -> 3) beside orders-1 (2 -> 4); events-0 (3 -> 4) only takes 4 over from
    # orders-1 as its copy ends
    assert max(peak) >= 2
    assert world.admin.configs() == before


def test_one_at_a_time_overlaps_only_to_hand_a_broker_over() -> None:
    world = make_world()
    overlaps: list[tuple[str, ...]] = []

    def watch(w: World, e: Event) -> None:
        moving = sorted(w.admin.moving, key=str)
        assert len(moving) <= 2
        if len(moving) == 2:
            a, b = (w.admin.moving[tp] for tp in moving)
            assert set(a.adding) & set(b.adding) or {w.admin.parts[tp].leader for tp in moving} \
                == {w.admin.parts[moving[0]].leader}, moving
            overlaps.append(tuple(str(tp) for tp in moving))
    world.hooks.append(watch)
    assert start(world).run().outcome is RunOutcome.COMPLETED
    assert {o for o in overlaps} == {("events-0", "orders-1")}  # 4 passes from one to the other


def test_a_shared_rate_stays_until_the_last_move_holding_it_is_done() -> None:
    """orders-1 (20 MB) ends before orders-0 (60 MB): broker 2's leader rate, set by both,
    stays while orders-0 copies, then goes back to the operator's value exactly."""
    world = make_world([Move("orders", 0, (1, 2), (3, 2), 60 * MB),
                        Move("orders", 1, (2, 3), (2, 4), 20 * MB)], concurrency=AUTO)
    world.admin.broker_cfg[SHARED] = {LEADER_RATE: "50000000"}  # an operator's looser rate
    before = world.admin.configs()
    seen: list[str | None] = []

    def look(w: World, e: Event) -> None:
        if e.kind is EventKind.STATE and e.message == "orders-1: electing":
            seen.append(w.admin.broker_cfg.get(SHARED, {}).get(LEADER_RATE))
            assert "orders" in {tp.topic for tp in w.admin.moving}  # orders-0 still copies
    world.hooks.append(look)
    assert start(world).run().outcome is RunOutcome.COMPLETED
    assert seen == [str(10 * MB)]
    assert world.admin.configs() == before
    plans = {m: r.throttle for m, r in world_moves(world).items()}
    assert plans["orders-1"] is not None and plans["orders-0"] is not None
    # both moves recorded the value from before the run, not the other's rate
    for name in ("orders-0", "orders-1"):
        assert plans[name].priors.brokers[SHARED][LEADER_RATE] == "50000000"


def world_moves(world: World) -> dict[str, object]:
    from executor.journal import replay
    return dict(replay(world.sink.records).moves)


def test_cancel_with_a_shared_rate_restores_the_operators_value() -> None:
    world = make_world(concurrency=AUTO)
    world.admin.broker_cfg[SHARED] = {LEADER_RATE: "50000000"}
    before = world.admin.configs()

    def cancel(w: World, e: Event) -> None:
        if e.kind is EventKind.PROGRESS and len(w.admin.moving) == 2:
            w.sink.cancel = True
    world.hooks.append(cancel)
    assert start(world).run().outcome is RunOutcome.CANCELLED
    assert world.admin.configs() == before


def test_clear_throttles_after_a_crash_with_a_shared_rate_restores_it() -> None:
    world = make_world(concurrency=AUTO)
    world.admin.broker_cfg[SHARED] = {LEADER_RATE: "50000000", FOLLOWER_RATE: "7"}
    before = world.admin.configs()

    def crash(w: World, e: Event) -> None:
        if e.kind is EventKind.PROGRESS and len(w.admin.moving) == 2:
            raise Crash("killed with two moves copying")
    world.hooks.append(crash)
    with pytest.raises(Crash):
        start(world).run()
    assert world.admin.configs() != before
    problems = clear_throttles_from(world.sink.records, MemorySink(), world.ports(), world.config)
    assert len(problems) == 2 and all("still copying" in p for p in problems)  # kept for now
    world.clock.sleep(3600)  # the copies end
    problems = clear_throttles_from(world.sink.records, MemorySink(), world.ports(), world.config)
    assert problems == [] and world.admin.configs() == before


def test_the_busiest_brokers_moves_go_first() -> None:
    """Broker 5 must receive three moves; a move onto it goes before an earlier, lighter one."""
    light = Move("a", 0, (1, 2), (3, 2), 10 * MB)
    heavy = [Move("b", i, (2, 3), (5, 3), 10 * MB) for i in range(3)]
    order = busiest_first([light, *heavy], remaining_load([light, *heavy]))
    assert order[0] == heavy[0] and order[-1] == light


def test_a_move_adding_two_replicas_splits_the_cap_between_them() -> None:
    world = make_world([Move("a", 0, (1, 2, 4), (1, 3, 4), 10 * MB),
                        Move("a", 1, (1, 2), (3, 4), 10 * MB)])
    rates: list[dict[int, dict[str, str]]] = []

    def look(w: World, e: Event) -> None:
        if w.admin.moving:
            rates.append({b: dict(c) for b, c in w.admin.broker_cfg.items()})
    world.hooks.append(look)
    assert start(world).run().outcome is RunOutcome.COMPLETED
    assert rates[0][3][FOLLOWER_RATE] == str(10 * MB)  # a-0 adds one replica: the whole cap
    assert rates[-1][3][FOLLOWER_RATE] == rates[-1][4][FOLLOWER_RATE] == str(5 * MB)
    assert rates[-1][1][LEADER_RATE] == str(10 * MB)


def test_moves_adding_two_replicas_share_their_receivers() -> None:
    """Each move gives each of its two receivers half the cap, so two of them fit on the same
    two receivers at once: the receivers' rate is then the whole cap, and afterwards the
    operator's configs are back."""
    moves = [Move("a", 0, (1, 2), (3, 4), 20 * MB), Move("b", 0, (2, 1), (4, 3), 20 * MB)]
    world = make_world(moves, concurrency=AUTO)
    before = world.admin.configs()
    both: list[str | None] = []

    def look(w: World, e: Event) -> None:
        if len(w.admin.moving) == 2:
            both.append(w.admin.broker_cfg.get(3, {}).get(FOLLOWER_RATE))
    world.hooks.append(look)
    t0 = world.clock.now()
    assert start(world).run().outcome is RunOutcome.COMPLETED
    assert both and set(both) == {str(10 * MB)}
    assert world.admin.configs() == before
    # 80 MB of copies into two receivers at 10 MB/s each: 4 s of copying, not 8
    copying = [r["at"] for r in world.sink.records if r.get("state") in ("copying", "verifying")]
    assert max(copying) - min(copying) <= 4.0 + 2.0
    assert world.clock.now() - t0 < 4.0 + 11.0 + 8.0


def test_a_shared_receiver_never_goes_above_an_operators_lower_rate() -> None:
    moves = [Move("a", 0, (1, 2), (3, 4), 20 * MB), Move("b", 0, (2, 1), (4, 3), 20 * MB)]
    world = make_world(moves, concurrency=AUTO)
    world.admin.broker_cfg[3] = {FOLLOWER_RATE: "6000000"}  # lower than the 10 MB/s cap
    before = world.admin.configs()
    seen: list[str | None] = []
    world.hooks.append(lambda w, e: seen.append(w.admin.broker_cfg.get(3, {}).get(FOLLOWER_RATE)))
    assert start(world).run().outcome is RunOutcome.COMPLETED
    assert max(int(v) for v in seen if v is not None) <= 6_000_000
    assert world.admin.configs() == before


def test_a_move_into_a_broker_not_scraped_yet_holds_alone() -> None:
    """Side by side, a move whose receiver has no network series yet (Prometheus has not
    scraped it) waits for it, while a move on other brokers starts at once; it starts as soon
    as its receiver is scraped."""
    world = make_world([Move("a", 0, (1, 2), (3, 2), 200 * MB),
                        Move("b", 0, (2, 1), (4, 1), 200 * MB)], concurrency=AUTO)
    world.metrics.unscraped = {3}
    world.metrics.scraped_from = world.clock.now() + 10.0
    started: dict[str, float] = {}

    def note_start(w: World, e: Event) -> None:
        if e.kind is EventKind.STATE and e.message.endswith(": throttling"):
            started[e.move] = w.clock.now()
    world.hooks.append(note_start)
    t0 = world.clock.now()
    assert start(world).run().outcome is RunOutcome.COMPLETED
    assert started["b-0"] - t0 < 2.0  # at once, beside the held move
    assert started["a-0"] - t0 >= 10.0  # not before broker 3 is scraped
    assert started["a-0"] < started["b-0"] + 200 * MB / world.config.max_bytes_per_sec
    held = world.messages(EventKind.HOLD)
    assert held and all("a-0 not started" in m and "[3]" in m for m in held)


@pytest.mark.parametrize("concurrency", [2, 3])
def test_concurrency_n_is_never_exceeded(concurrency: int) -> None:
    """Six moves on seven brokers, none sharing an end: at most N reassignments are in
    flight at any moment, hand-overs included, and N run together."""
    moves = [Move("t", i, (i + 1, 7), (i + 1, (i + 1) % 6 + 1), 30 * MB) for i in range(6)]
    world = make_world(moves, concurrency=concurrency)
    world.admin.broker_ids = (1, 2, 3, 4, 5, 6, 7)
    world.metrics.base.update({b: 100_000.0 for b in (5, 6, 7)})
    peak: list[int] = []

    def watch(w: World, e: Event) -> None:
        peak.append(len(w.admin.moving))
    world.hooks.append(watch)
    assert start(world).run().outcome is RunOutcome.COMPLETED
    assert max(peak) == concurrency


@given(st.dictionaries(st.sampled_from("abcd"), st.sampled_from([0.25, 1 / 3, 0.5, 1.0]),
                       max_size=3),
       st.sets(st.sampled_from("abcd")), st.integers(min_value=0, max_value=3))
def test_a_full_end_refuses_every_move_fits_would_refuse(
        held: dict[str, float], ending: set[str], added: int) -> None:
    """flows.full lets the ETA's schedule skip every move queued on an end: whenever it says
    an end is full, fits refuses a move that needs that end, whatever the move adds."""
    from executor.flows import Direction, fits, full

    target = (1, 2, 3)[:added] + (7, 8, 9)[added:] if added else (8, 7, 9)
    move = Move("t", 0, (7, 8, 9), target, 100)
    ends = [(7, Direction.OUT)] + ([(1, Direction.IN)] if added else [])
    for end in ends:
        if full(held, ending):
            assert fits(move, frozenset({end}), {end: held}, ending) == (False, None)
