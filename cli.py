"""`rebalance`: the command-line entry point. Parses flags, calls the core, renders results.

Every user-facing failure is a RebalanceError; `main` is the one handler that maps it to a
one-line message and the error's exit code. Any other exception is a bug (or an input nothing
anticipated): one line and exit code 70, the traceback only with --debug or REBALANCE_DEBUG=1.
"""

from __future__ import annotations

import inspect
import os
import re
import sys
import traceback
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

import typer
from rich.markup import escape
from rich.text import Text
from typer.core import HAS_RICH, TyperArgument, TyperCommand, TyperGroup, TyperOption

from kafka_rebalance.commands import (
    auto_cmd,
    dashboard_cmd,
    execute_cmd,
    history_cmd,
    plan_cmd,
    snapshot_cmd,
)
from kafka_rebalance.commands.render import (
    console,
    err_console,
    note,
    say,
    stdout_width,
)
from kafka_rebalance.commands.sandbox_cmd import app as sandbox_app
from kafka_rebalance.core.errors import RebalanceError
from kafka_rebalance.core.names import visible
from kafka_rebalance.report.cluster_tables import spread_table, topology_table
from kafka_rebalance.usecases.signals import (
    INTERRUPTED_EXIT_CODE,
    output_may_close,
    reader_may_go,
)
from topology.capacities import read_capacities
from topology.snapshot import read_snapshot

UNEXPECTED_EXIT_CODE = 70  # EX_SOFTWARE (sysexits.h): an internal error, not the user's input

HELP = ("Plan and execute throttled partition rebalances for Apache Kafka.\n\n"
        "Typical loop: `snapshot` the cluster, `plan` a rebalance and review it, `execute` it "
        "under a replication throttle one partition at a time, and watch `status`.\n\n"
        """\b
Exit codes (an error is one line on stderr; --debug adds the traceback):
  0    success
  1    `sandbox status`: no sandbox, or one of its processes is down
  2    bad input (a file, flag or output path); nothing written or changed
  3    Kafka unreachable or unusable
  4    Prometheus unreachable or without the series
  5    no valid plan: infeasible, or the plan fails validation
  6    a run refused, stopped or leaving throttles, or a damaged journal (status too)
  7    the sandbox could not be started, found or stopped
  8    the run was cancelled as asked (`rebalance cancel`), throttles restored, no move failed
  70   unexpected internal error
  130  interrupted (Ctrl-C or SIGTERM)""")


def tidy_help(command: TyperCommand | TyperGroup, parent: typer.Context | None = None) -> None:
    """Make `command`'s --help (and its subcommands') say what the flags take.

    Typer's rich help prints every option's type, so a flag reads as if it took a value
    (`--json <bool>`, `--help <bool>`) and a repeatable option shows `<list[int]>`; and it reads
    help text as rich markup, so a `[default: ...]` in it vanishes. Here a flag gets an empty
    metavar, a repeatable option its element type (or its own metavar) and "(repeatable)", and
    a docstring's line wrapping is undone: done once for every command, before any help is
    shown. The help texts are kept as written in _HELP; `help_style` escapes them for rich's
    panels or leaves them for click's plain help, per invocation.
    """
    ctx = typer.Context(command, info_name=command.name, parent=parent,
                        **command.context_settings)
    help_option = command.get_help_option(ctx)  # made on first use and kept by the command
    rich = HAS_RICH and getattr(command, "rich_markup_mode", None) == "rich"
    for param in [*command.params, *([help_option] if help_option else [])]:
        if isinstance(param, TyperOption):
            _tidy_option(param)
        if isinstance(param, TyperArgument):
            if param.metavar and param.metavar[0] == "[":
                param.metavar = param.metavar.strip("[]")  # typer brackets an optional one
            param.__class__ = _NamedArgument
        if isinstance(param, TyperOption | TyperArgument) and param.help:
            _HELP.params.append((param, param.help, rich))
    _HELP.commands.append((command, _reflow(command.help) if command.help else None, rich))
    for sub in getattr(command, "commands", {}).values():
        if isinstance(sub, TyperCommand | TyperGroup):
            tidy_help(sub, ctx)
            if sub.help and not sub.short_help:
                # click would cut the listed summary at ~45 characters ("..."): wrap it
                sub.short_help = re.split(r"(?<=\.)\s", _reflow(sub.help).strip(), maxsplit=1)[0]


class _NamedArgument(TyperArgument):
    """A positional argument shown by its name alone, as click shows one: `PLAN.json` in the
    usage line (`[PLAN.json]` when optional), not typer's `{PLAN.json}`, and no `<path>` type
    beside a name that already says what it is."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None

    def _usage_display_name(self) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return name + ("..." if self.nargs != 1 else "")


@dataclass
class _HelpTexts:
    """Help as written, with whether typer renders its command with rich markup."""

    commands: list[tuple[TyperCommand | TyperGroup, str | None, bool]] = field(
        default_factory=list)
    params: list[tuple[TyperOption | TyperArgument, str, bool]] = field(default_factory=list)


_HELP = _HelpTexts()


def help_style(narrow: bool) -> None:
    """Click's plain, wrapped help when `narrow` (rich's panels cut long flag names in a
    terminal narrower than HELP_PANELS_WIDTH); typer's rich panels, the help text escaped as
    rich markup, when wider."""
    for command, text, rich in _HELP.commands:
        panels = rich and not narrow
        command.rich_markup_mode = "rich" if panels else None
        if text is not None:  # rich keeps a paragraph's lines as written: click's mark goes
            command.help = escape(text.replace("\b\n", "")) if panels else text
    for param, text, rich in _HELP.params:
        param.help = escape(text) if rich and not narrow else text


HELP_PANELS_WIDTH = 140  # narrower, rich's help panels cut long flag names ("--allow-und…")


def _narrow() -> bool:
    """The terminal (or COLUMNS, or 120 in a pipe) is narrower than HELP_PANELS_WIDTH."""
    return stdout_width() < HELP_PANELS_WIDTH


# One style for what an option takes: upper case, the words of the options that name their
# own (PATH, ID, MB/s); a choice lists its values as they are typed.
_METAVARS: dict[object, str] = {Path: "PATH", str: "TEXT", int: "N", float: "NUMBER"}
# Text options whose form says more than TEXT, the same in every command.
_FLAG_METAVARS = {"--bootstrap": "HOST:PORT", "--prometheus": "URL", "--concurrency": "N|auto",
                  "--finish-by": "TIME", "--rate-window": "DURATION", "--since": "DURATION",
                  "--step": "DURATION", "--max-bytes": "SIZE", "--window": "WINDOW"}


def _metavar(annotation: object) -> str:
    """The metavar of an option's value type (`X | None` read as X; a list as its element)."""
    args = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) is Literal:
        return "|".join(map(str, args))
    if args and get_origin(annotation) is not Annotated:
        return _metavar(args[0])
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return "|".join(str(member.value) for member in annotation)
    return _METAVARS.get(annotation, "TEXT")


def _tidy_option(option: TyperOption) -> None:
    if option.is_flag or option.count:
        option.metavar = ""  # a flag takes no value: nothing in the type column
        return
    if option.metavar is None:
        named = next((_FLAG_METAVARS[o] for o in option.opts if o in _FLAG_METAVARS), None)
        option.metavar = named or _metavar(option.type_descriptor.annotation)
    if option.multiple:
        text = (option.help or "").strip()
        if "repeat" not in text.lower():
            option.help = (f"{text[:-1]} (repeatable)." if text.endswith(".") else
                           f"{text} (repeatable)".strip())


def _reflow(text: str) -> str:
    """A docstring's lines joined within each paragraph (rich help would keep every break);
    indented lines, such as the rows of a table, stay on lines of their own."""
    return re.sub(r"(?<=[^\s\x08])\n(?=[^\s\x08])", " ", inspect.cleandoc(text))


try:  # Typer 0.2x carries its own copy of Click
    from typer._click.exceptions import UsageError
except ImportError:  # pragma: no cover (older Typer on Click itself)
    from click.exceptions import UsageError  # type: ignore[no-redef,import-not-found]


class _CauseFirst(UsageError):
    """A bad flag or command said as every other error is: `error: ...` first, then where the
    help is (Click led with the usage line and said the error three lines down)."""

    def __init__(self, cause: UsageError) -> None:
        super().__init__(cause.format_message(), cause.ctx)
        self.exit_code = cause.exit_code

    def show(self, file: Any = None) -> None:
        stream = file if file is not None else sys.stderr
        stream.write(f"error: {self.format_message()}\n")
        if self.ctx is not None:
            stream.write(f"Try '{self.ctx.command_path} --help' for help.\n")


class RebalanceGroup(TyperGroup):
    """The `rebalance` group: Typer's, with every command's help tidied once it is built."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        _HELP.commands.clear()  # the texts of this group's commands only
        _HELP.params.clear()
        tidy_help(self)

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().make_context(*args, **kwargs)
        except UsageError as exc:
            raise _CauseFirst(exc) from None

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except UsageError as exc:
            raise _CauseFirst(exc) from None

    def main(self, *args: Any, **kwargs: Any) -> Any:
        from kafka_rebalance.files.outputs import refuse_directory_paths

        help_style(narrow=_narrow())  # the width of this invocation's terminal
        given = kwargs.get("args", args[0] if args else None)
        refuse_directory_paths(list(sys.argv[1:] if given is None else given))
        return super().main(*args, **kwargs)


app = typer.Typer(
    name="rebalance",
    cls=RebalanceGroup,
    help=HELP,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@dataclass
class GlobalOptions:
    """Options of `rebalance` itself, read by `main` after the command has ended."""

    debug: bool = False


OPTIONS = GlobalOptions()


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option(
        "--debug", help="On an error, also print the full traceback (or set REBALANCE_DEBUG=1).")
    ] = False,
) -> None:
    # No docstring: the group's help is HELP, given to typer.Typer above.
    OPTIONS.debug = debug


@app.command()
def show(
    snapshot: Annotated[Path, typer.Argument(help="Topology snapshot file (JSON v1).")],
    capacities: Annotated[
        Path | None, typer.Option(help="Capacities YAML; overrides the snapshot's capacities.")
    ] = None,
) -> None:
    """Summarize a snapshot: brokers by rack, utilization per resource, and the spread."""
    caps = read_capacities(capacities) if capacities else None
    topology = read_snapshot(snapshot, caps)
    say(f"{visible(str(snapshot))}: {len(topology.partitions)} partitions, "
        f"{len(topology.brokers)} brokers")
    console.print(topology_table(topology, width=console.width))
    console.print(spread_table(topology))
    for message in topology.notes:
        note(message)


app.command(name="plan")(plan_cmd.plan)
app.command(name="diff")(plan_cmd.diff)
app.command(name="snapshot")(snapshot_cmd.snapshot)
# the commands that change the cluster run to their end (and exit code) if their reader goes
app.command(name="execute")(reader_may_go(execute_cmd.execute))
app.command(name="status")(execute_cmd.status)
app.command(name="cancel")(reader_may_go(execute_cmd.cancel))
app.command(name="resume")(reader_may_go(execute_cmd.resume))
app.command(name="clear-throttles")(reader_may_go(execute_cmd.clear_throttles))
app.command(name="weights")(history_cmd.weights)
app.command(name="auto")(reader_may_go(auto_cmd.auto))
app.command(name="dashboard")(dashboard_cmd.dashboard_cmd)
app.add_typer(history_cmd.history_app, name="history")


app.add_typer(sandbox_app, name="sandbox")


def debugging() -> bool:
    """--debug, or REBALANCE_DEBUG set to anything but '', '0' or 'false'."""
    env = os.environ.get("REBALANCE_DEBUG", "").strip().lower()
    return OPTIONS.debug or env not in ("", "0", "false", "no")


def unexpected_message(exc: BaseException) -> str:
    """One line for an exception no handler anticipated: its type and first line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    detail = f": {lines[0]}" if lines else ""
    hint = "" if debugging() else "; rerun with --debug for the traceback"
    return (f"unexpected {type(exc).__name__}{detail} (an internal error or an input the tool "
            f"does not handle){hint}")


def report_error(message: str, exc: BaseException) -> None:
    """The error line first (as written, never read as markup), then the notes it carries."""
    if debugging():
        traceback.print_exception(exc)
    err_console.print(Text.assemble(("error:", "bold red"), " ", visible(message, lines=True)),
                      highlight=False, soft_wrap=True)
    for extra in getattr(exc, "__notes__", ()):
        err_console.print(Text(visible(str(extra), lines=True)), highlight=False, soft_wrap=True)


def main() -> None:
    """Console-script entry and the one error handler: RebalanceErrors exit with their code,
    anything else with UNEXPECTED_EXIT_CODE; both as one line (see HELP for the codes).

    Usage errors (bad flags) are reported by typer itself with exit code 2.
    """
    try:
        app()
    except RebalanceError as exc:
        with output_may_close():  # a reader gone by now must not turn the code into 1
            report_error(str(exc), exc)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        with output_may_close():
            err_console.print("interrupted", markup=False, highlight=False)
        sys.exit(INTERRUPTED_EXIT_CODE)
    except Exception as exc:  # the last resort: no stack trace for a user
        with output_may_close():
            report_error(unexpected_message(exc), exc)
        sys.exit(UNEXPECTED_EXIT_CODE)


if __name__ == "__main__":
    main()
