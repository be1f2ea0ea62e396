"""`rebalance plan` and `rebalance diff`: make, validate, order and review a plan.

The commands parse flags into the use case's settings (`kafka_rebalance.usecases.plan`: read the
cluster, then solve, validate and order) and render what comes back: the plan file and the dry-run
review (`kafka_rebalance.report.review`). Notes are held so that a refusal's error line comes first
on stderr.
"""

from __future__ import annotations

import json
import shlex
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kafka_rebalance.commands.render import (
    FORCE_HELP,
    console,
    err_console,
    note,
    notes_held,
    say,
)
from kafka_rebalance.commands.report_cmd import HtmlOption, check_html, write_plan_html
from kafka_rebalance.core.errors import InputError
from kafka_rebalance.core.names import visible
from kafka_rebalance.files.outputs import (
    check_output,
    plan_output,
)
from kafka_rebalance.report.review import replicas_text, review, review_document
from kafka_rebalance.usecases.plan import (
    PlanInputs,
    PlanSettings,
    build_demotion,
    build_plan,
    check_plan_journal,
    read_cluster,
    recheck,
)
from kafka_rebalance.usecases.signals import interrupts_end_solving
from planner.goals import Budget, Goals
from planner.ordering import MoveOrder
from planner.result import SolverStatus
from topology.capacities import read_capacities
from topology.model import INT32_MAX, Topology, is_kafka_id
from topology.snapshot import read_snapshot
from topology.units import MAX_QUANTITY, parse_bytes

if TYPE_CHECKING:
    from planner.planfile import PlanFile

JSON_HELP = ("Print the review as one JSON document on stdout instead (goals, brokers before and "
             "after, moves, totals, ETA, warnings).")


def added_broker_notes(topology: Topology, add: Sequence[int]) -> list[str]:
    """A note for each --add-broker id that already holds replicas: the flag names it as added,
    but it is not new (the planner balances every live broker either way)."""
    held = Counter(broker for p in topology.partitions for broker in p.replicas)
    return [f"--add-broker {broker_id}: broker {broker_id} already holds "
            f"{replicas_text(held[broker_id])}, so it is not a new broker; the plan balances "
            "it like the others"
            for broker_id in sorted(set(add)) if held[broker_id]]


# The words `execute` uses for its throttle: "plan with my throttle" is `--max-mbps N` on both.
RateMbps = Annotated[float, typer.Option(
    "--max-mbps", "--rate-mbps", metavar="MB/s",
    help="The throttle you will execute with (execute --max-mbps), in MB/s (10^6 bytes per "
         "second): the review's ETA copies at it. --rate-mbps is the older name.")]


def check_review_flags(rate_mbps: float, show_moves: int) -> None:
    """--max-mbps (the ETA's copy rate) and --show-moves, checked before any file is read."""
    from kafka_rebalance.usecases.run_settings import check_mbps

    check_mbps(rate_mbps)
    if show_moves < 0:
        raise InputError(f"--show-moves must not be negative, got {show_moves}")


def _optional_bytes(value: str | None, flag: str) -> int | None:
    """A byte count given by a person (a size, not a rate): whole bytes, below 1e24 (a larger
    one is a unit slip, and no solver counts that high)."""
    if value is None:
        return None
    number = parse_bytes(value, flag, size=True)
    if number > MAX_QUANTITY:
        raise InputError(f"{flag} {value}: implausibly large (over {MAX_QUANTITY:.0e} bytes); "
                         "check its unit")
    if 0 < number < 1:
        raise InputError(f"{flag} {value}: less than one byte allows no move; give a size "
                         "such as 500GB, or leave the flag out")
    return int(number)


def _say_outcome(plan_file: PlanFile, out: Path | None) -> None:
    status = plan_file.solver.status
    if status is SolverStatus.ALREADY_BALANCED:
        wrote = (f"Wrote an empty plan to {visible(str(out))}." if out is not None
                 else "Nothing written (a preview).")
        say(f"The cluster is already balanced within +/-{plan_file.goals.tolerance:.0%} and "
            f"meets every hard goal: nothing to move. {wrote}")
        return
    if out is None:
        console.print(f"A preview of {len(plan_file.moves)} move(s); nothing was written. Give "
                      "--out PLAN.json to keep the plan for `rebalance execute`.",
                      highlight=False)
        return
    # soft wrap: the terminal folds a long path, no newline is put into it (it stays copyable)
    shown = visible(str(out))  # a newline in a path is shown, not obeyed
    say(f"Wrote {len(plan_file.moves)} move(s) to {shown}; review it again with "
        f"`rebalance diff {visible(shlex.quote(str(out)))}`.")  # pasted as it is shown


def plan(
    out: Annotated[Path | None, typer.Option(
        "--out", metavar="PATH", help="Where to write the plan (JSON). Without it the plan is "
        "only reviewed (a preview), nothing is written.")] = None,
    snapshot: Annotated[Path | None, typer.Option(help="Topology snapshot file (JSON v1).")
                        ] = None,
    bootstrap: Annotated[str | None, typer.Option(help="Read the live cluster: HOST:PORT,...")
                         ] = None,
    prometheus: Annotated[str | None, typer.Option(
        help="Prometheus URL for partition byte rates (with --bootstrap).")] = None,
    command_config: Annotated[Path | None, typer.Option(
        help="Kafka client security settings (.properties or YAML).")] = None,
    add_broker: Annotated[list[str] | None, typer.Option(
        metavar="ID", help="A newly added broker to fill (repeat the flag, or give a comma "
        "list: 13,14,15).")] = None,
    demote_broker: Annotated[list[str] | None, typer.Option(
        metavar="ID", help="Take every preferred leadership off this broker (to patch or watch "
        "it), moving no data: each partition it leads gets another live replica as leader. "
        "Planned on its own (repeat, or a comma list).")] = None,
    remove_broker: Annotated[list[str] | None, typer.Option(
        metavar="ID", help="A broker to drain completely, alive or dead (repeat, or a comma "
        "list).")] = None,
    capacities: Annotated[Path | None, typer.Option(help="Capacities YAML.")] = None,
    weights: Annotated[Path | None, typer.Option(
        help="Partition weights (Parquet or JSON lines) replacing the snapshot's rates.")] = None,
    horizon: Annotated[float, typer.Option(help="Project sizes DAYS ahead (with --weights).")
                       ] = 0.0,
    tolerance: Annotated[float, typer.Option(help="Balance tolerance around the average.")
                         ] = 0.10,
    max_utilization: Annotated[float, typer.Option(help="Hard cap of load / capacity.")] = 0.95,
    topic_spread: Annotated[float | None, typer.Option(
        help="Also spread each topic: no broker holds more of one topic's replicas (or "
        "leaders) than its fair share (by capacity; its rack's share where the rack rule forces "
        "one) x (1 + this), rounded up; e.g. 0.5. Costs moves; the review shows how many "
        "topics crowd a broker before and after. Off by default.")] = None,
    leader_balance: Annotated[float | None, typer.Option(
        help="Also level leaders: each broker leads its fair share of partitions and of "
        "produce bytes in (the partitions it holds, each split over its replicas) within "
        "+/- this fraction, e.g. 0.1; reached by reordering replicas only, never by copying, "
        "and never at net out's cost. With --max-bytes 0 the whole plan moves no data. Off by "
        "default.")] = None,
    request_balance: Annotated[float | None, typer.Option(
        help="Also level requests: each broker serves its fair share (by the capacities' "
        "requests_per_sec; equal without) of produce and fetch requests, those of the "
        "partitions it leads, within +/- this fraction, e.g. 0.2. Leadership switches first, "
        "then leader moves, never at the bytes' balance. Needs request rates in the snapshot "
        "(a live snapshot reads them from Prometheus). Off by default.")] = None,
    log_dir_moves: Annotated[bool, typer.Option(
        "--log-dir-moves/--no-log-dir-moves",
        help="On brokers with several log dirs (JBOD), also move replicas between a broker's "
        "dirs to bring each within --tolerance of its share (copied on the broker's own "
        "disks, after the partition moves). Without, only arriving replicas get a chosen "
        "dir.")] = True,
    max_bytes: Annotated[str | None, typer.Option(
        help="Cap on bytes moved (e.g. 500GB). 0: move no data, only reorder leaders (net "
        "out, and --leader-balance).")] = None,
    max_moves: Annotated[int | None, typer.Option(help="Cap on partitions moved.")] = None,
    time_limit: Annotated[float, typer.Option(help="Solver time limit, seconds.")] = 60.0,
    order: Annotated[MoveOrder, typer.Option(help="Execution order of the moves.")
                     ] = MoveOrder.SMALLEST_FIRST,
    rate_mbps: RateMbps = 50.0,
    show_moves: Annotated[int, typer.Option(help="How many moves the review lists.")] = 30,
    json_output: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
    force: Annotated[bool, typer.Option("--force", help=FORCE_HELP.format(what="plan"))
                     ] = False,
    html: HtmlOption = None,
) -> None:
    """Plan a rebalance, validate it, write the plan file and show the dry-run review.

    An existing --out file is replaced only if it is a plan (or with --force), and never while
    its run's journal (PLAN.json.journal) exists.
    """
    from kafka_rebalance.files.planfile import write_plan

    check_review_flags(rate_mbps, show_moves)
    if out is not None:
        check_output(plan_output(out), {"--snapshot": snapshot, "--capacities": capacities,
                                        "--weights": weights, "--command-config": command_config},
                     force)
        check_plan_journal(out)
    check_html(html, {"--out": out, "--snapshot": snapshot, "--capacities": capacities,
                      "--weights": weights, "--command-config": command_config})
    budget = Budget(_optional_bytes(max_bytes, "--max-bytes"), max_moves, time_limit)
    if budget.max_moves == 0:
        raise InputError("--max-moves 0 allows no move, so the plan would be empty; give a "
                         "positive limit, or leave the flag out for none (--max-bytes 0 "
                         "moves leadership only)")
    adds = broker_ids(add_broker or (), "--add-broker")
    removes = broker_ids(remove_broker or (), "--remove-broker")
    demotes = broker_ids(demote_broker or (), "--demote-broker")
    if budget.max_bytes == 0 and removes:
        raise InputError(f"--max-bytes 0 moves no data, so it cannot drain --remove-broker "
                         f"{removes[0]}: give the bytes the drain may copy, or leave "
                         "--max-bytes out")
    if demotes and (adds or removes or max_bytes or max_moves or topic_spread is not None
                    or leader_balance is not None or request_balance is not None):
        raise InputError("--demote-broker moves leadership only, planned on its own: leave out "
                         "--add-broker, --remove-broker, --max-bytes, --max-moves, "
                         "--topic-spread, --leader-balance and --request-balance (plan those "
                         "in a second plan)")
    inputs = PlanInputs(snapshot=snapshot, bootstrap=bootstrap, prometheus=prometheus,
                        command_config=command_config, capacities=capacities, weights=weights,
                        horizon_days=horizon, add_brokers=adds, remove_brokers=removes)
    with notes_held():  # a refusal's error line comes before the notes
        topology = read_cluster(inputs, note=note)
        for message in added_broker_notes(topology, adds):
            note(message, label="warning")
        if request_balance is not None and not any(p.requests_per_sec
                                                   for p in topology.partitions):
            note("--request-balance: no partition in the snapshot has request rates, so there "
                 "is nothing to level; a live snapshot (--bootstrap with --prometheus) reads "
                 "them from the brokers' per-topic request metrics", label="warning")
        settings = PlanSettings(
            goals=Goals(tolerance, max_utilization, frozenset(adds), frozenset(removes),
                        topic_spread=topic_spread, leader_balance=leader_balance,
                        request_balance=request_balance, level_log_dirs=log_dir_moves),
            budget=budget, order=order)
        with (interrupts_end_solving("the plan was not made"),
              err_console.status(f"planning {len(topology.partitions)} partitions on "
                                 f"{len(topology.brokers)} brokers ...")):
            plan_file = (build_demotion(topology, demotes, settings) if demotes
                         else build_plan(topology, settings))
    if out is not None:
        write_plan(out, plan_file)
    _show(plan_file, show_moves, rate_mbps, json_output)
    if not json_output:
        _say_outcome(plan_file, out)
    if html is not None:
        title = f"Plan review: {out.name}" if out is not None else "Plan review (preview)"
        write_plan_html(html, plan_file, rate_mbps * 1e6, title)


def _show(plan_file: PlanFile, show_moves: int, rate_mbps: float, json_output: bool) -> None:
    if json_output:
        typer.echo(json.dumps(review_document(plan_file, rate_mbps * 1e6), indent=1,
                              allow_nan=False))
    else:
        console.print(review(plan_file, show_moves, rate_mbps * 1e6, console.width))


def diff(
    plan_path: Annotated[Path, typer.Argument(metavar="PLAN.json", help="A saved plan file.")],
    snapshot: Annotated[Path | None, typer.Option(
        help="Check the plan against this snapshot (current sizes, replica placement).")] = None,
    capacities: Annotated[Path | None, typer.Option(help="Capacities YAML.")] = None,
    rate_mbps: RateMbps = 50.0,
    show_moves: Annotated[int, typer.Option(help="How many moves the review lists.")] = 30,
    json_output: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
    html: HtmlOption = None,
) -> None:
    """Show the review of a saved plan again; with --snapshot, check it still applies."""
    from kafka_rebalance.files.planfile import read_plan

    check_review_flags(rate_mbps, show_moves)
    check_html(html, {"PLAN.json": plan_path, "--snapshot": snapshot,
                      "--capacities": capacities})
    if capacities is not None and snapshot is None:
        raise InputError("--capacities applies to --snapshot: give both, or neither")
    plan_file = read_plan(plan_path)
    if snapshot is not None:
        topology = read_snapshot(snapshot, read_capacities(capacities) if capacities else None)
        with notes_held():
            plan_file = recheck(plan_file, topology,
                                warn=lambda message: note(message, label="warning"))
    _show(plan_file, show_moves, rate_mbps, json_output)
    if html is not None:
        write_plan_html(html, plan_file, rate_mbps * 1e6, f"Plan review: {plan_path.name}")


def broker_ids(values: Sequence[str], flag: str) -> tuple[int, ...]:
    """Broker ids from a repeated flag, each value one id or a comma list (`13,14,15`, the
    habit of Kafka's own tools); anything else is an InputError naming the flag."""
    ids: list[int] = []
    for value in values:
        for part in value.split(","):
            text = part.strip()
            if not (text.isascii() and text.isdigit()) or not is_kafka_id(int(text)):
                raise InputError(f"{flag} {value!r}: give broker ids (0 to {INT32_MAX}, in "
                                 "ASCII digits), one per flag or separated by commas (13,14,15)")
            ids.append(int(text))
    return tuple(ids)
