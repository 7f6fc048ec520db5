"""Files a SQL client reads as SQL: `psql -f FILE`, `sqlite3 -init FILE`, mongosh's script files, and
the clients' include commands in SQL text (psql `\\i FILE`, mysql `source FILE` / `\\. FILE`, sqlite3
`.read FILE`, sqlcmd `:r FILE`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from kilo_loop.guard.lazy_regex import LazyRegex

SQL_CLIENTS = frozenset({"psql", "mysql", "mariadb", "sqlite3", "sqlcmd", "mongo", "cqlsh", "mongosh", "cockroach",
                         "clickhouse-client", "duckdb"})
"""Clients the databases pack judges: they read SQL from stdin, from their options, and from files."""
_FILE_OPTIONS: dict[str, tuple[str, ...]] = {
    "psql": ("-f", "--file"), "duckdb": ("-f", "-init"), "cockroach": ("-f", "--file"), "sqlite3": ("-init",),
    "sqlcmd": ("-i",), "cqlsh": ("-f", "--file"), "clickhouse-client": ("--queries-file",),
    "mongosh": ("-f", "--file"), "mongo": ("-f", "--file"),
}
_INCLUDE = LazyRegex(r"(?:^|[;\n])[ \t]*(?:\\i|\\ir|\\include|\\include_relative|\\\.|source|\.read|:r)[ \t]+"
                     r"(?:'([^'\n]*)'|\"([^\"\n]*)\"|([^\s;'\"|][^\s;]*))", re.IGNORECASE)


def option_files(client: str, args: Sequence[str]) -> list[str]:
    """The SQL files named by the client's options (`-f FILE`, `--file=FILE`, `-fFILE`)."""
    options = _FILE_OPTIONS.get(client, ())
    found: list[str] = []
    for index, arg in enumerate(args):
        following = args[index + 1] if index + 1 < len(args) else ""
        if arg in options:
            found.append(following)
        elif arg.startswith("--") and arg.partition("=")[0] in options:
            found.append(arg.partition("=")[2])
        elif client == "psql":  # getopt: flags cluster (`-qAtf FILE`); other clients take long one-dash words
            found += _clustered(arg, following, options)
    if client in ("mongosh", "mongo"):  # `mongosh DB drop.js`: each .js operand is run
        found += [a for a in args if a.endswith(".js") and not a.startswith("-")]
    return [f for f in found if f and f != "-"]


def _clustered(arg: str, following: str, options: tuple[str, ...]) -> list[str]:
    """`-qf FILE` / `-qfFILE`: a one-letter option at the end of, or inside, a cluster of flags."""
    if not arg.startswith("-") or arg.startswith("--") or len(arg) < 3:
        return []
    for option in (o for o in options if len(o) == 2):
        at = arg.find(option[1], 1)
        if at > 0 and arg[1:at].isalpha():
            return [arg[at + 1:] or following]
    return []


def word_text(arg: str) -> str:
    """The SQL in one of a client's command words: the word, or the text attached to its option
    (`--execute=source f.sql`, `-esource f.sql`)."""
    if not arg.startswith("-"):
        return arg
    return arg.partition("=")[2] if arg.startswith("--") else arg[2:]


def included_files(text: str) -> list[str]:
    """Files SQL text tells the client to read and run."""
    return [m.group(1) or m.group(2) or m.group(3) for m in _INCLUDE.finditer(text)
            if m.group(1) or m.group(2) or m.group(3)]
