"""Subcommands and options built when the command runs: `git $x`, `git pu${e}sh`, `git reset --ha$e`,
`git "$(echo cHVzaA== | base64 -d)"`.

The command name is already known; a word after it that holds a part only known at run time may
turn into a subcommand or option a rule acts on. Each such word is tried as every word the rules
of that command act on that fits its known parts (`pu…sh` fits `push`, `--ha…` fits `--hard`), and
the command so formed goes to the rules. A word that is wholly unknown is tried only where the
subcommand stands (its first operand): elsewhere it is data, a branch or a file name (`git log $range`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Sequence

from kilo_loop.guard.shell.model import HOME, READ, SHELL_PID, UNKNOWN, SimpleCommand

_VALUE_GLOBALS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "-n", "--context", "--kubeconfig", "-H", "--host", "--config", "--profile", "--region",
                            "-f", "--file", "-p", "--project-name", "--project"})
"""Global options whose value is the next word, so the subcommand comes after it (`git -C dir $x`)."""


def fitting(word: str, acted_on: Collection[str]) -> list[str]:
    """The words of `acted_on` that `word` may turn into; [] when all of `word` is known."""
    pattern = _pattern(word)
    if pattern is None:
        return []
    return [w for w in acted_on if pattern.fullmatch(w)]


def _pattern(word: str) -> re.Pattern[str] | None:
    text = word.replace(HOME, "~").replace(SHELL_PID, "1").replace(READ, UNKNOWN)
    if UNKNOWN not in text:
        return None
    return re.compile(".*".join(re.escape(part) for part in text.split(UNKNOWN)), re.DOTALL)


def _subcommand_at(args: Sequence[str]) -> int:
    """Where the first operand (the subcommand) stands, global options and their values skipped."""
    index = 0
    while index < len(args) and args[index].startswith("-") and args[index] != "--":
        index += 2 if args[index] in _VALUE_GLOBALS else 1
    return index


def built_at_run_time(cmd: SimpleCommand, acted_on: Collection[str]) -> Iterator[tuple[str, SimpleCommand]]:
    """For each word of `cmd` built at run time that may be a subcommand or option the rules act on:
    the word, and `cmd` with it replaced by that subcommand or option."""
    args = cmd.args
    if not any(UNKNOWN in arg for arg in args):
        return
    at = _subcommand_at(args)
    for index, arg in enumerate(args):
        if UNKNOWN not in arg:
            continue
        for candidate in _candidates(args, index, at, acted_on):
            yield arg, cmd._replace(argv=(cmd.argv[0], *args[:index], candidate, *args[index + 1:]))


def _candidates(args: Sequence[str], index: int, at: int, acted_on: Collection[str]) -> list[str]:
    """What the word at `index` may be: a subcommand where the subcommand stands (`at`), the second
    word of one after a known first (`docker system $x`), an option anywhere it has a known part."""
    arg = args[index]
    if index == at:
        return fitting(arg, [w.split(" ", 1)[0] for w in acted_on])
    if index == at + 1 and UNKNOWN not in args[at]:
        lead = args[at] + " "
        seconds = fitting(arg, [w[len(lead):] for w in acted_on if w.startswith(lead)])
        if seconds:
            return seconds
    known = arg.replace(HOME, "").replace(SHELL_PID, "").replace(READ, "").replace(UNKNOWN, "")
    return [w for w in fitting(arg, acted_on) if w.startswith("-")] if known else []
