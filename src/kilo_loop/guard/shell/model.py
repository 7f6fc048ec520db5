"""What the shell analysis reports, and the small text helpers every part of it shares.

The guard is imported afresh by a pre-tool hook before every agent tool call, so its records
are NamedTuples (a frozen dataclass costs far more to define at import) and its regular
expressions compile on first use (`guard.lazy_regex`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import Literal, NamedTuple

UNKNOWN = "\x00"
"""Marks text that cannot be known before the command runs."""
HOME = UNKNOWN + "~"
"""The home directory (`~`, `$HOME`): unknown too, but worth naming in messages."""

READ = UNKNOWN + "<data>"
"""Data only known at run time: what `read` takes from stdin or a command substitution prints
(`… | while read f; do rm "$f"; done`, `rm $(git ls-files)`)."""
KEEP = UNKNOWN + "keep"
SHELL_PID = UNKNOWN + "<shell-pid>"
"""`$$` or `$PPID`: the shell running the command, or the agent that started it."""
"""A declared name with no value (`export NAME`): its value is kept."""
LITERALLY = "write the command out literally, with no variables, substitutions or decoding in its name or code"


class SimpleCommand(NamedTuple):
    """One executed command: `argv[0]` is the normalized command name (`/usr/bin/git` → `git`).

    `remote` names the host the command runs on (`ssh host …`), None when it runs here.
    """

    argv: tuple[str, ...]
    cwds: frozenset[str | None]
    remote: str | None = None
    env: tuple[tuple[str, str | None], ...] = ()
    stdin: str | None = None
    """What the command reads on stdin, when that is known (a heredoc, a here-string, `echo … |`)."""
    script: str | None = None
    """The script file on disk this command was read from (`bash x.sh`), None when it is in the command."""

    @property
    def name(self) -> str:
        return self.argv[0]

    @property
    def args(self) -> tuple[str, ...]:
        return self.argv[1:]

    @property
    def text(self) -> str:
        return display(" ".join(self.argv))


class InlineCode(NamedTuple):
    """Program text handed to an interpreter (`python -c CODE`, `node -e CODE`, a heredoc to ruby…)."""

    language: str
    code: str
    cwds: frozenset[str | None]
    remote: str | None = None
    script: str | None = None


class OutputRedirect(NamedTuple):
    """A file the shell opens for writing (`> target`, `>> target`, `&> target`)."""

    target: str
    cwds: frozenset[str | None]
    remote: str | None = None
    script: str | None = None


class Unanalysable(NamedTuple):
    """Something whose effect cannot be known statically: it is denied with `reason`."""

    reason: str
    rule: str = "unanalysable"


class Unread(NamedTuple):
    """Project files a runner executes that the guard does not read (`pytest` runs conftest.py): nothing
    known to be destructive, but the allow says what was not seen (the jail, when on, holds it)."""

    what: str
    remote: str | None = None
    script: str | None = None


Executed = SimpleCommand | InlineCode | OutputRedirect | Unanalysable | Unread


class Analysis(NamedTuple):
    executed: tuple[Executed, ...]
    parser: Literal["tree-sitter"] = "tree-sitter"


def display(text: str) -> str:
    """`text` with the HOME marker shown as `~` and the UNKNOWN marker as `…`."""
    return text.replace(HOME, "~").replace(UNKNOWN, "…")


def command_name(word: str) -> str:
    """Normalize a command word: drop quotes and backslashes, the directory, the case, a Windows `.exe`
    suffix (`git.exe` from WSL), and the `g` of GNU tools installed beside BSD ones (`grm`, `gshred`)."""
    name = word.replace("\\", "").replace("'", "").replace('"', "")
    if "/" in name.rstrip("/"):
        name = name.rstrip("/").rsplit("/", 1)[1]
    name = name.lower().removesuffix(".exe")
    return name[1:] if name in _GNU_PREFIXED else name


_GNU_PREFIXED = frozenset({"grm", "gshred", "gdd", "gtruncate", "gchmod", "gchown", "gchgrp", "gfind", "gxargs",
                           "gln", "gmv", "gcp", "gtee", "ginstall", "gunlink", "grmdir", "gnice", "gnohup", "genv",
                           "gstdbuf", "gsed", "gtar", "gsort", "gsplit", "gcsplit", "gtouch"})


def normalize_path(path: str) -> str:
    """Lexical normalization: `..` and `.` folded, one leading slash, no trailing slash."""
    norm = posixpath.normpath(path)
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    return norm


def split_words(text: str) -> list[str]:
    """Shell-like word splitting that never raises (unbalanced quotes fall back to whitespace)."""
    import shlex  # here, not at the top: few commands need it, and the hook imports this module

    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def long_option_matches(arg: str, option: str) -> bool:
    """`arg` names the long `option` the way getopt_long and git read it: exactly or by a prefix
    (`--har` for `--hard`), with or without `=value`."""
    if not (arg.startswith("--") and option.startswith("--")) or len(arg) < 3:
        return False
    name = arg.split("=", 1)[0]
    return option.startswith(name)


def has_option(args: Sequence[str], *options: str) -> bool:
    """Any of `options` among `args` (before `--`): short letters also inside clusters (`-xfd`),
    long names also as unique prefixes."""
    for arg in args:
        if arg == "--":
            return False
        if arg.split("=", 1)[0] in options:
            return True
        if arg.startswith("--"):
            if any(long_option_matches(arg, o) for o in options if o.startswith("--")):
                return True
        elif arg.startswith("-") and len(arg) > 1:
            letters = arg[1:]
            if any(len(o) == 2 and not o.startswith("--") and o[1] in letters for o in options):
                return True
    return False


def parse_options(
    args: Sequence[str], short_arg: str = "", long_arg: frozenset[str] = frozenset()
) -> tuple[dict[str, str], int]:
    """Options before the first operand: {"-x": value or "", "--name": value}, and the operand index.

    `short_arg` lists the short letters and `long_arg` the long names that take a value.
    """
    seen: dict[str, str] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return seen, i + 1
        if arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            if name in long_arg and not eq:
                value = args[i + 1] if i + 1 < len(args) else ""
                i += 1
            seen["--" + name] = value
        elif arg.startswith("-") and len(arg) > 1:
            for j, letter in enumerate(arg[1:], start=1):
                if letter in short_arg:
                    value = arg[j + 1:]
                    if not value:
                        value = args[i + 1] if i + 1 < len(args) else ""
                        i += 1
                    seen["-" + letter] = value
                    break
                seen["-" + letter] = ""
        else:
            return seen, i
        i += 1
    return seen, i
