"""databases: SQL that drops or empties tables/databases, given on the command line or on stdin;
dropping databases and flushing key-value stores."""

from __future__ import annotations

import re

from kilo_loop.safety.lazy_regex import LazyRegex
from kilo_loop.safety.packs.paths import PathPolicy
from kilo_loop.safety.packs.rules import Pack, Rule
from kilo_loop.safety.shell.model import SimpleCommand, parse_options

_DESTRUCTIVE_SQL = LazyRegex(
    r"\b(drop\s+(table|database|schema|index|view|user|role|collection)|truncate\b|delete\s+from\s+[\w.\"`\[\]]+"
    r"\s*(;|$)|alter\s+table\s+\S+\s+drop\b|dropDatabase\s*\(|\.drop\s*\(|deleteMany\s*\(\s*\{\s*\}\s*\)"
    r"|flushall|flushdb)", re.IGNORECASE)
_SQL_CLIENTS = {
    "psql": ("c", frozenset({"command"})), "mysql": ("e", frozenset({"execute"})),
    "mariadb": ("e", frozenset({"execute"})), "sqlite3": ("", frozenset()), "sqlcmd": ("Q", frozenset()),
    "mongo": ("", frozenset({"eval"})), "mongosh": ("", frozenset({"eval"})), "cockroach": ("e", frozenset(
        {"execute"})), "clickhouse-client": ("q", frozenset({"query"})), "duckdb": ("c", frozenset()),
}
_VALUE_SHORT = "UhpdfWPoSvFTLn"


def _sql(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    short, long = _SQL_CLIENTS[cmd.name]
    texts = [cmd.stdin or ""]
    args = list(cmd.args)
    for index, arg in enumerate(args):
        flag = arg.lstrip("-").split("=", 1)[0]
        if (arg.startswith("--") and flag in long) or (short and arg.startswith("-") and not arg.startswith("--")
                                                        and arg[1:2] == short):
            attached = (arg.partition("=")[2] if arg.startswith("--") else arg[2:])
            texts.append(attached or (args[index + 1] if index + 1 < len(args) else ""))
    if cmd.name in ("sqlite3", "duckdb"):
        _, i = parse_options(args, "", frozenset({"cmd", "separator"}))
        texts += args[i + 1:]
    for text in texts:
        found = _DESTRUCTIVE_SQL.search(text)
        if found:
            return f"the SQL drops or empties data ({found.group(0).strip()})"
    return None


PACK = Pack(
    name="databases",
    title="databases: DROP/TRUNCATE/unfiltered DELETE via psql/mysql/sqlite3/mongo, dropdb, FLUSHALL",
    rules=(
        Rule("database-drop", "drops or empties database data", tuple(_SQL_CLIENTS), check=_sql),
        Rule("database-drop", "drops a database", ("dropdb", "dropuser")),
        Rule("database-drop", "drops a database", ("mysqladmin",), words=("drop",)),
        Rule("database-drop", "flushes every key", ("redis-cli", "valkey-cli", "keydb-cli"),
             check=lambda c, p: "" if {a.lower() for a in c.args} & {"flushall", "flushdb"} else None),
        Rule("database-drop", "resets the database", ("rails", "rake", "bin/rails"),
             check=lambda c, p: "" if any(a in ("db:drop", "db:reset", "db:schema:load") for a in c.args) else None),
        Rule("database-drop", "resets the database", ("prisma",), words=("migrate", "reset")),
    ),
)
