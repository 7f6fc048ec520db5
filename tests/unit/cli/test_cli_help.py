"""`kilo-loop --help` reads: subcommands first with their whole line, options in panels, and a
"did you mean" for a mistyped subcommand."""

from __future__ import annotations

import click
from click.testing import CliRunner

from kilo_loop.cli import SUBCOMMANDS, main
from kilo_loop.cli_help import PANELS, did_you_mean, unplaced


def help_text() -> str:
    result = CliRunner().invoke(main, ["--help"], terminal_width=200)
    assert result.exit_code == 0
    return result.output


def test_every_option_of_the_run_has_a_panel() -> None:
    ctx = click.Context(main)
    assert unplaced(main.get_params(ctx), ctx) == []


def test_commands_come_first_then_the_panels_in_order() -> None:
    text = help_text()
    headings = [line.rstrip(":") for line in text.splitlines() if line.endswith(":") and not line.startswith(" ")]
    assert headings == ["Commands", *(f"{title} options" for title, _names in PANELS)]


def test_each_subcommand_shows_its_whole_line() -> None:
    text = help_text()
    for name, (_target, line) in SUBCOMMANDS.items():
        assert f"  {name}" in text and line in text, name


def test_a_mistyped_subcommand_gets_a_suggestion() -> None:
    for typed, expected in (("docter", "Did you mean 'doctor'?"), ("reprot", "Did you mean 'report'?"),
                            ("list-goals", "Did you mean the flag --list-goals?")):
        result = CliRunner().invoke(main, [typed])
        assert result.exit_code == 2 and expected in result.output, result.output


def test_no_suggestion_for_a_word_like_nothing() -> None:
    assert did_you_mean("zzz", ["doctor"], ["--goal"]) == "No such command 'zzz'. See kilo-loop --help for the commands."
