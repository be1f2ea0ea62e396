"""Every command's --help: flags take no value, repeatable options say so, defaults survive."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Annotated

import pytest
import typer
import typer.main
from typer.core import TyperCommand, TyperGroup
from typer.testing import CliRunner

import cli

ANSI = re.compile(r"\x1b\[[0-9;]*m")
BOX = re.compile(r"[│╭╮╰╯─]")


def command_paths(command: TyperCommand | TyperGroup,
                  path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The path of every command and group under `command`, the root included."""
    yield path
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        assert isinstance(sub, TyperCommand | TyperGroup)
        yield from command_paths(sub, (*path, name))


def help_text(app: typer.Typer, *path: str) -> str:
    """The --help page as a user reads it: no colour codes, no panel borders, one line."""
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    return " ".join(BOX.sub(" ", ANSI.sub("", result.output)).split())


ROOT = typer.main.get_command(cli.app)
assert isinstance(ROOT, cli.RebalanceGroup)
PATHS = list(command_paths(ROOT))


def test_the_walk_reaches_every_command_and_group() -> None:
    names = {" ".join(path) for path in PATHS}
    assert {"", "plan", "diff", "execute", "status", "sandbox", "sandbox up",
            "history export"} <= names


@pytest.mark.parametrize("path", PATHS, ids=lambda path: " ".join(path) or "rebalance")
def test_no_flag_shows_a_value_and_no_option_a_python_type(path: tuple[str, ...]) -> None:
    text = help_text(cli.app, *path)
    assert "Usage:" in text
    assert "<bool>" not in text and "<list[" not in text, text
    assert "[[" not in text and "--help Show this message and exit." in text, text
    # a type in angle brackets (<path>, <int>) nowhere; a required argument unbracketed
    assert not re.search(r"<[a-z][a-z_\[\]|, ]*>", text), text
    usage = text.split("Usage:", 1)[1].split("  ")[0].split(" [OPTIONS]")[-1][:40]
    assert "{" not in usage, text


@pytest.mark.parametrize("columns", ["80", "160"])
def test_a_positional_argument_is_shown_by_its_name_as_click_shows_it(columns: str) -> None:
    result = CliRunner().invoke(cli.app, ["status", "--help"], env={"COLUMNS": columns})
    text = " ".join(BOX.sub(" ", ANSI.sub("", result.output)).split())
    assert "rebalance status [OPTIONS] [PLAN.json]" in text.replace("root", "rebalance"), text
    execute = CliRunner().invoke(cli.app, ["execute", "--help"], env={"COLUMNS": columns})
    assert "[OPTIONS] PLAN.json" in ANSI.sub("", execute.output), execute.output


def test_plan_help_shows_ids_for_repeatable_broker_options() -> None:
    text = help_text(cli.app, "plan")
    assert ("--add-broker ID A newly added broker to fill (repeat the flag, or give a comma "
            "list: 13,14,15).") in text, text
    assert ("--remove-broker ID A broker to drain completely, alive or dead (repeat, or a "
            "comma list).") in text, text
    assert "--json Print the review as one JSON document" in text, text
    assert "[default: smallest-first]" in text and "[default: 0.1]" in text, text


def test_plan_help_joins_the_docstrings_wrapped_lines() -> None:
    text = CliRunner().invoke(cli.app, ["plan", "--help"], env={"COLUMNS": "200"}).output
    assert "and never while its run's journal (PLAN.json.journal) exists" in ANSI.sub("", text)


def test_root_help_keeps_the_exit_code_table_on_separate_lines() -> None:
    raw = ANSI.sub("", CliRunner().invoke(cli.app, ["--help"], env={"COLUMNS": "120"}).output)
    rows = [line.strip() for line in raw.splitlines()]
    assert "2    bad input (a file, flag or output path); nothing written or changed" in rows
    assert "130  interrupted (Ctrl-C or SIGTERM)" in rows


def test_sandbox_up_help_keeps_its_defaults() -> None:
    text = help_text(cli.app, "sandbox", "up")
    assert re.search(r"Number of brokers\. \[default: 4[;\]]", text), text  # plain or panels
    assert "[default: 29090]" in text, text
    assert "default: $REBALANCE_SANDBOX_DIR, else ./.sandbox" in text, text
    assert "--json Print JSON instead of text." in text, text


def test_help_text_in_brackets_is_printed_as_written() -> None:
    """A help text with `[default: ...]` or `[bold]` in it is text, never rich markup."""
    app = typer.Typer(cls=cli.RebalanceGroup, add_completion=False)

    @app.command()
    def go(where: Annotated[str, typer.Option(help="Where to go [default: ./here].")] = "",
           loud: Annotated[bool, typer.Option("--loud", help="Shout [bold]now[/].")] = False,
           tag: Annotated[list[str] | None, typer.Option(help="A tag.")] = None) -> None:
        """Go somewhere [default: home].

        A second paragraph,
        wrapped in the source.
        """

    @app.command()
    def stay() -> None:
        """Stay."""

    text = help_text(app, "go")
    assert "Where to go [default: ./here]." in text, text
    assert "--loud Shout [bold]now[/]." in text, text
    assert "--tag TEXT A tag (repeatable)." in text, text
    assert "--where TEXT Where to go" in text, text
    assert "Go somewhere [default: home]." in text, text
    assert "A second paragraph, wrapped in the source." in text, text
