"""Log dirs of JBOD brokers: arriving replicas placed, dirs levelled by moves within a broker."""

from __future__ import annotations

from pathlib import Path

from planner.goals import Budget, Goals
from planner.log_dirs import plan_dirs
from planner.result import Move
from planner.solve import plan
from topology.model import Broker, Capacity, LogDir, Partition, TopicPartition, Topology
from topology.synthetic import generate_cluster

CAP = Capacity(10**12, 10**8, 10**8)
MB = 10**6


def _jbod(sizes_in_dir_a: list[int], sizes_in_dir_b: list[int],
          cordon_b: bool = False) -> Topology:
    """Broker 1 with dirs /a and /b holding the given replicas (MB); brokers 2 and 3 plain."""
    brokers = (Broker(1, "r1", CAP, log_dirs=(LogDir("/a", 10**12),
                                              LogDir("/b", 10**12, cordon_b))),
               Broker(2, "r2", CAP), Broker(3, "r3", CAP))
    parts, dirs = [], {}
    for path, sizes in (("/a", sizes_in_dir_a), ("/b", sizes_in_dir_b)):
        for size in sizes:
            p = Partition(f"t{len(parts)}", 0, (1, 2), size * MB)
            parts.append(p)
            dirs[(p.key, 1)] = path
    return Topology(brokers, tuple(parts), (), dirs)


def test_a_topology_without_jbod_brokers_plans_exactly_as_before() -> None:
    topology = generate_cluster(brokers=6, new_brokers=3, racks=3, partitions=300, seed=3)
    goals = Goals(add_brokers=frozenset({7, 8, 9}))
    result = plan(topology, goals, Budget(time_limit_s=2))
    assert result.log_dirs is None
    assert plan_dirs(topology, result.moves, 0.1).empty


def test_a_skewed_broker_gives_its_fullest_dir_the_replicas_that_level_it() -> None:
    topology = _jbod([50, 40, 30, 20, 10, 5], [5])
    dirs = plan_dirs(topology, (), 0.10)
    assert dirs.before.outside == 2 and dirs.before.worst > 0.8
    assert dirs.after.outside == 0 and dirs.after.worst <= 0.10
    assert {m.source for m in dirs.moves} == {"/a"} and {m.target for m in dirs.moves} == {"/b"}
    assert all(m.broker == 1 for m in dirs.moves)
    # /a holds 155 MB and /b 5: /a is in band at 88 MB, so at least 67 MB move; no more than
    # the 75 that level them exactly, and in few moves
    assert 67 * MB <= dirs.bytes_moved <= 75 * MB and len(dirs.moves) <= 2


def test_dirs_in_band_are_left_alone() -> None:
    dirs = plan_dirs(_jbod([50, 10], [55]), (), 0.10)
    assert not dirs.moves and dirs.before.outside == 0 and dirs.after == dirs.before


def test_arriving_replicas_go_to_the_emptiest_dir_and_never_to_a_cordoned_one() -> None:
    topology = _jbod([30], [10])
    arriving = Partition("new", 0, (2, 3), 20 * MB)
    topology = topology.with_partitions((*topology.partitions, arriving))
    move = Move("new", 0, (2, 3), (2, 1), 20 * MB)
    dirs = plan_dirs(topology, (move,), 0.10, move_between_dirs=False)
    assert dirs.placements == {(TopicPartition("new", 0), 1): "/b"} and not dirs.moves

    cordoned = plan_dirs(_jbod([30], [10], cordon_b=True).with_partitions(
        (*topology.partitions,)), (move,), 0.10)
    assert cordoned.placements == {(TopicPartition("new", 0), 1): "/a"}
    assert all(m.target != "/b" for m in cordoned.moves)


def test_a_plan_that_moves_no_data_places_but_moves_nothing_between_dirs() -> None:
    topology = _jbod([50, 40, 30], [5])
    result = plan(topology, Goals(), Budget(max_bytes=0, time_limit_s=2))
    assert result.log_dirs is not None and not result.log_dirs.moves
    full = plan(topology, Goals(), Budget(time_limit_s=2))
    assert full.log_dirs is not None and full.log_dirs.moves
    assert full.log_dirs.after.worst < full.log_dirs.before.worst


def test_without_log_dir_moves_the_plan_places_and_its_file_says_so(tmp_path: Path) -> None:
    from kafka_rebalance.files.planfile import read_plan, write_plan
    from kafka_rebalance.usecases.plan import PlanSettings, build_plan

    topology = _jbod([50, 40, 30], [5])
    kept = build_plan(topology, PlanSettings(goals=Goals(level_log_dirs=False),
                                             budget=Budget(time_limit_s=2)))
    assert kept.log_dirs is not None and not kept.log_dirs.moves
    write_plan(tmp_path / "plan.json", kept)
    again = read_plan(tmp_path / "plan.json")
    assert again.goals.level_log_dirs is False and again.log_dirs == kept.log_dirs
    levelled = build_plan(topology, PlanSettings(goals=Goals(), budget=Budget(time_limit_s=2)))
    assert levelled.log_dirs is not None and levelled.log_dirs.moves
    write_plan(tmp_path / "levelled.json", levelled)
    assert "level_log_dirs" not in (tmp_path / "levelled.json").read_text()


def test_no_replica_goes_to_a_dir_whose_volume_lacks_room() -> None:
    """/b is the emptier dir but its volume has 12 MB free of 100 MB (5 MB kept free): the
    20 MB replica arriving goes to /a, and levelling moves nothing into /b that would not
    fit; with no room anywhere, the plan says so and leaves the choice to the broker."""
    def cluster(free_a: int, free_b: int) -> Topology:
        brokers = (Broker(1, "r1", CAP, log_dirs=(LogDir("/a", 100 * MB, free_bytes=free_a),
                                                  LogDir("/b", 100 * MB, free_bytes=free_b))),
                   Broker(2, "r2", CAP), Broker(3, "r3", CAP))
        parts = (Partition("old", 0, (1, 2), 30 * MB), Partition("old", 1, (1, 2), 9 * MB),
                 Partition("new", 0, (2, 3), 20 * MB))
        dirs = {(TopicPartition("old", 0), 1): "/a", (TopicPartition("old", 1), 1): "/b"}
        return Topology(brokers, parts, (), dirs)

    move = Move("new", 0, (2, 3), (2, 1), 20 * MB)
    tight = plan_dirs(cluster(60 * MB, 12 * MB), (move,), 0.10)
    assert tight.placements == {(TopicPartition("new", 0), 1): "/a"} and not tight.warnings
    assert all(m.target != "/b" or m.size_bytes <= 7 * MB for m in tight.moves)

    full = plan_dirs(cluster(4 * MB, 4 * MB), (move,), 0.10)
    assert not full.placements and not full.moves
    assert full.warnings == (
        "log dirs: no open dir of broker 1 has room for 1 replica(s) the plan brings (e.g. "
        "new-0, 20,000,000 bytes, with 5% of each volume kept free): the broker picks their "
        "dir; free space on its volumes first",)
