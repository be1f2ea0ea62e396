"""The run as a log (kafka_rebalance.report.run_lines): events that repeat every poll add a line
only when something changed, in human units; a resumed move is timed from the journal."""

from __future__ import annotations

from executor.config import Event, EventKind
from executor.decide import COPY_ENDED_UNSEEN
from executor.milestones import MoveTiming, RunTimeline
from kafka_rebalance.report.run_lines import RunLines
from planner.result import Move

MB = 1_000_000
MOVE = Move("t", 0, (1, 2), (1, 3), 10 * MB)


def state(name: str, value: str, reason: str = "") -> Event:
    message = f"{name}: {value}" + (f" ({reason})" if reason else "")
    return Event(EventKind.STATE, message, name, 1, 2, 0, 10 * MB, value)


def gate(verdict: str, reason: str) -> Event:
    return Event(EventKind.GATE, f"gate after t-0: {verdict}, {reason}", "t-0", 1, 2, 0,
                 10 * MB, verdict)


def progress(done: int) -> Event:
    return Event(EventKind.PROGRESS, "t-0: copying", "t-0", 1, 2, done, 10 * MB)


def test_a_gate_sampled_every_second_says_wait_once_and_open_once() -> None:
    lines = RunLines(2 * MB)
    said: list[str] = []
    for second in range(12):  # busy, then settling, with new numbers every sample
        said += lines.lines(gate("wait", f"waiting: broker 3 network in "
                                         f"{1.1 + second / 100:.2f} MB/s > 1.00 MB/s"),
                            100.0 + second)
    said += lines.lines(gate("wait", "settled 1/3 consecutive samples"), 112.0)
    for second in range(13, 20):  # the gate stays open while the quota window runs
        said += lines.lines(gate("open", "settled for 3 consecutive sample(s)"), 100.0 + second)
    assert said == [
        "[1/2] gate after t-0: wait (waiting: broker 3 network in 1.10 MB/s > 1.00 MB/s)",
        "[1/2] gate after t-0: open after 13s (settled for 3 consecutive sample(s))"]


def test_a_held_start_is_said_once_until_the_move_starts() -> None:
    lines = RunLines(2 * MB)
    hold = Event(EventKind.HOLD, "t-0 not started: metrics unavailable (timeout); holding",
                 "t-0", 1, 2, 0, 10 * MB)
    said = [line for at in range(30) for line in lines.lines(hold, float(at))]
    assert said == ["[1/2] t-0 not started: metrics unavailable (timeout); holding"]
    assert lines.lines(state("t-0", "throttling"), 31.0) == [
        "[1/2] t-0: started (10.0 MB to copy)"]


def test_a_copy_is_told_at_each_quarter_with_its_rate_against_the_cap() -> None:
    lines = RunLines(2 * MB, {"t-0": MOVE})
    said = lines.lines(state("t-0", "throttling"), 0.0)
    said += lines.lines(state("t-0", "submitted"), 0.0)
    said += lines.lines(state("t-0", "copying"), 1.0)
    for second, done in enumerate((1, 2, 3, 4, 5, 6, 7, 8, 9, 10), start=2):
        said += lines.lines(progress(done * MB), float(second))
    said += lines.lines(state("t-0", "verifying"), 6.0)
    said += lines.lines(state("t-0", "unthrottling"), 6.0)
    said += lines.lines(state("t-0", "cooling_down", "preferred leader election failed"), 6.0)
    said += lines.lines(state("t-0", "done"), 17.0)
    assert said == [
        "[1/2] t-0: started (10.0 MB to copy, replicas [1, 2] -> [1, 3])",
        "[1/2] t-0: throttle set (2.00 MB/s cap per broker), reassignment submitted; copying "
        "10.0 MB",
        "[1/2] t-0: 30% copied (3.00 MB of 10.0 MB, 1.00 MB/s, about 7s left)",
        "[1/2] t-0: 50% copied (5.00 MB of 10.0 MB, 1.00 MB/s, about 5s left)",
        "[1/2] t-0: 80% copied (8.00 MB of 10.0 MB, 1.00 MB/s, about 2s left)",
        "[1/2] t-0: copied 10.0 MB in 5s (2.00 MB/s, 100% of the cap); checking replicas and ISR",
        "[1/2] t-0: replicas in sync, throttle cleared; cooling down (preferred leader election "
        "failed)",
        "[1/2] t-0: done in 17s"]


def test_without_progress_lines_a_terminal_gets_the_changes_only() -> None:
    lines = RunLines(2 * MB, progress_lines=False)
    lines.lines(state("t-0", "copying"), 0.0)
    assert [line for d in range(1, 11) for line in lines.lines(progress(d * MB), float(d))] == []


def test_a_resumed_move_is_timed_from_the_journal_and_failures_stand_out() -> None:
    times = RunTimeline(900.0, None, 950.0, {"t-0": MoveTiming(900.0, 901.0)})
    lines = RunLines(1 * MB, times=times)
    assert lines.lines(state("t-0", "verifying"), 911.0) == [
        "[1/2] t-0: copied 10.0 MB in 10s (1.00 MB/s, 100% of the cap); checking replicas and "
        "ISR"]
    assert lines.lines(state("t-0", "failed", "broker 4: could not restore"), 912.0) == [
        "[1/2] t-0: FAILED (broker 4: could not restore)"]
    ended = RunLines(1 * MB, times=times)  # it ended before this process looked: when is
    assert ended.lines(state("t-0", "verifying", COPY_ENDED_UNSEEN), 3600.0) == [  # unknown
        "[1/2] t-0: copy of 10.0 MB ended while no executor was running (its rate is "
        "unknown); checking replicas and ISR"]
    fresh = RunLines(1 * MB)  # no journal: the copy's start is unknown, nothing is made up
    assert fresh.lines(state("t-0", "verifying"), 911.0) == [
        "[1/2] t-0: copy of 10.0 MB ended; checking replicas and ISR"]


def test_notes_pass_through_as_written() -> None:
    note = Event(EventKind.NOTE, "cancel requested: [bold]x")
    assert RunLines(MB).lines(note, 0.0) == ["cancel requested: [bold]x"]


def test_the_end_of_a_run_is_left_to_the_summary_and_notes_are_shown() -> None:
    lines = RunLines(2 * MB)
    assert lines.lines(Event(EventKind.END, "run completed: 2 of 2 moves done"), 0.0) == []
    assert lines.lines(Event(EventKind.NOTE, "preflight: 1 topic has a follower list"),
                       0.0) == ["preflight: 1 topic has a follower list"]


def test_a_leadership_only_move_is_one_line_when_done() -> None:
    """A demotion is hundreds of them: each says only that it is done, and with what."""
    lead = Move("t", 0, (1, 2), (2, 1), 10 * MB)
    lines = RunLines(2 * MB, moves={"t-0": lead})
    said: list[str] = []
    for value in ("throttling", "submitted", "copying", "verifying", "unthrottling",
                  "electing", "cooling_down"):
        said += lines.lines(state("t-0", value), 100.0)
    said += lines.lines(state("t-0", "done", "leadership only: it copied nothing, no gate"),
                        101.0)
    assert said == ["[1/2] t-0: done, replicas [1, 2] -> [2, 1] (leadership only: it copied "
                    "nothing, no gate)"]
    failed = RunLines(2 * MB, moves={"t-0": lead})
    failed.lines(state("t-0", "throttling"), 100.0)
    assert failed.lines(state("t-0", "failed", "election failed"), 101.0) == [
        "[1/2] t-0: FAILED (election failed)"]


def test_an_empty_partitions_new_replicas_are_not_called_leadership_only() -> None:
    """A move of an empty partition to new brokers copies no bytes but is no leadership
    move: it is throttled and copied like any other."""
    empty = Move("t", 0, (1, 2), (3, 4), 0)
    lines = RunLines(2 * MB, moves={"t-0": empty})
    event = Event(EventKind.STATE, "t-0: throttling", "t-0", 1, 2, 0, 0, "throttling")
    (started,) = lines.lines(event, 100.0)
    assert "leadership only" not in started
    assert started == ("[1/2] t-0: started (new replicas of an empty partition, replicas "
                       "[1, 2] -> [3, 4])")
