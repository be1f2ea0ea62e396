"""Move ordering: a permutation, size order, broker-disjoint rounds, leadership last."""

from __future__ import annotations

import itertools
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from planner.ordering import MoveOrder, changed_brokers, order_moves, rounds_of
from planner.result import Move


def mv(index: int, current: tuple[int, ...], target: tuple[int, ...], size: int) -> Move:
    return Move("t", index, current, target, size)


def two_pairs() -> list[Move]:
    """Three moves 1->2 and three moves 3->4, sizes 10, 20, 30 on each pair."""
    return [mv(i, (1, 9), (2, 9), 10 * (i % 3 + 1)) for i in range(3)] + [
        mv(i + 3, (3, 9), (4, 9), 10 * (i % 3 + 1)) for i in range(3)]


def test_consecutive_moves_alternate_between_broker_pairs() -> None:
    ordered = order_moves(two_pairs())
    assert [m.size_bytes for m in ordered] == [10, 10, 20, 20, 30, 30]
    for first, second in itertools.pairwise(ordered):
        assert changed_brokers(first).isdisjoint(changed_brokers(second))


def test_largest_first_reverses_size_order() -> None:
    ordered = order_moves(two_pairs(), MoveOrder.LARGEST_FIRST)
    assert [m.size_bytes for m in ordered] == [30, 30, 20, 20, 10, 10]


def test_leadership_only_moves_go_last() -> None:
    moves = [mv(0, (1, 2), (2, 1), 10**9), mv(1, (1, 2), (1, 3), 5), mv(2, (3, 4), (4, 3), 1)]
    ordered = order_moves(moves)
    assert [m.partition for m in ordered] == [1, 0, 2]


def test_one_busy_pair_starts_a_new_round_each_time() -> None:
    moves = [mv(i, (1,), (2,), i + 1) for i in range(4)]
    ordered = order_moves(moves)
    assert [m.size_bytes for m in ordered] == [1, 2, 3, 4]
    assert len(rounds_of(ordered)) == 4


def test_changed_brokers_are_those_that_gain_or_lose_a_replica() -> None:
    assert changed_brokers(mv(0, (1, 2, 3), (4, 5, 3), 7)) == {1, 2, 4, 5}
    assert changed_brokers(mv(1, (1, 2), (2, 1), 7)) == frozenset()  # leadership only


moves_strategy = st.lists(
    st.tuples(st.permutations(range(1, 7)), st.integers(1, 3), st.integers(0, 1000),
              st.booleans()),
    min_size=0, max_size=40,
)


def build(raw: list[tuple[list[int], int, int, bool]]) -> list[Move]:
    moves = []
    for index, (perm, rf, size, reorder) in enumerate(raw):
        current = tuple(perm[:rf])
        target = tuple(reversed(current)) if reorder and rf > 1 else (perm[rf], *current[1:])
        moves.append(mv(index, current, target, size))
    return moves


@settings(max_examples=60, deadline=None)
@given(moves_strategy, st.sampled_from(list(MoveOrder)), st.integers(0, 2**16))
def test_order_properties(raw: list[tuple[list[int], int, int, bool]], order: MoveOrder,
                          seed: int) -> None:
    moves = build(raw)
    ordered = order_moves(moves, order)
    assert sorted(ordered, key=lambda m: m.partition) == sorted(moves, key=lambda m: m.partition)
    shuffled = list(moves)
    random.Random(seed).shuffle(shuffled)
    assert order_moves(shuffled, order) == ordered
    flags = [m.leadership_only for m in ordered]
    assert flags == sorted(flags)
    for round_ in rounds_of(ordered):
        busy: set[int] = set()
        for move in round_:
            assert busy.isdisjoint(changed_brokers(move))
            busy |= changed_brokers(move)


def test_full_lookahead_packs_rounds_as_matchings() -> None:
    # 6 brokers, moves between all pairs: every round of data moves is a matching (<= 3 moves).
    moves = [mv(i, (a,), (b,), 1) for i, (a, b) in enumerate(
        (a, b) for a in range(1, 7) for b in range(1, 7) if a != b)]
    rounds = rounds_of(order_moves(moves))
    assert all(len(r) <= 3 for r in rounds)
    assert sum(len(r) for r in rounds) == 30
    # Each broker is in 10 moves: at least 10 rounds, and greedy matching needs < 2 * 10.
    assert 10 <= len(rounds) <= 19


def test_spreading_never_pulls_a_much_larger_move_ahead() -> None:
    # Every small move touches broker 7 (a new broker); one big move elsewhere waits its turn.
    moves = [mv(i, (1, 5), (7, 5), 100 + i) for i in range(5)] + [mv(9, (2, 3), (4, 3), 10**6)]
    ordered = order_moves(moves)
    assert ordered[-1].partition == 9
    largest = order_moves(moves, MoveOrder.LARGEST_FIRST)
    assert largest[0].partition == 9


def test_order_is_by_bytes_copied_not_partition_size() -> None:
    two_copies = mv(0, (1, 2, 3), (4, 5, 3), 60)  # copies 120 bytes
    one_copy = mv(1, (1, 2, 3), (1, 2, 6), 100)
    assert [m.partition for m in order_moves([two_copies, one_copy])] == [1, 0]


def test_moves_healing_partitions_short_of_live_replicas_go_first_fewest_left_first() -> None:
    """Broker 9 is offline: partitions 3 and 4 lost a replica there (4 keeps one live, 3
    keeps two). Their moves go before every other, whatever their size, 4's first; the
    rest keep their size order."""
    moves = [mv(0, (1, 2), (5, 2), 10), mv(1, (2, 3), (6, 3), 20), mv(2, (3, 1), (7, 1), 30),
             mv(3, (9, 1, 2), (5, 1, 2), 500), mv(4, (9, 8, 1), (6, 7, 1), 900)]
    from topology.model import TopicPartition
    ordered = order_moves(moves, live_replicas={TopicPartition("t", 3): 2,
                                                TopicPartition("t", 4): 1})
    assert [m.partition for m in ordered] == [4, 3, 0, 1, 2]
    assert order_moves(moves, live_replicas={}) == order_moves(moves)
