"""databases: SQL that drops or empties tables/databases, given on the command line or on stdin;
dropping databases and flushing key-value stores."""

from __future__ import annotations

import re

from kilo_loop.guard.lazy_regex import LazyRegex
from kilo_loop.guard.packs.paths import PathPolicy, in_git_dir, sensitive_file, system_file
from kilo_loop.guard.packs.rules import Pack, Rule, operands
from kilo_loop.guard.shell.model import UNKNOWN, SimpleCommand

_DESTRUCTIVE_SQL = LazyRegex(
    r"\b(drop\s+(table|database|schema|index|view|user|role|collection|owned|materialized\s+view|sequence|function"
    r"|trigger|type|extension|tablespace)|truncate\b|delete\s+from\s+[\w.\"`\[\]]+"
    r"\s*(;|$)|alter\s+table\s+\S+\s+drop\b|dropDatabase\s*\(|\.drop\s*\(|deleteMany\s*\(\s*\{\s*\}\s*\)"
    r"|flushall|flushdb|delete\s+from\s+[\w.\"`\[\]]+\s+where\s+(true|1\s*=\s*1|'1'\s*=\s*'1'|not\s+false)\b"
    r"|\.(remove|deleteMany)\s*\(\s*(\{\s*\})?\s*\)|drop\s+keyspace"
    r"|\bupdate\s+[\w.\"`\[\]]+\s+set\b(?![\s\S]*\bwhere\b))", re.IGNORECASE)
# Client commands that run a shell command: psql `\!`, mysql `system`/`\!`, sqlite3 `.shell`/`.system`.
# Also output piped to a command (psql `\o |cmd`, `\g |cmd`; sqlite3 `.output |cmd`, `.once |cmd`) and
# `COPY … FROM/TO PROGRAM 'cmd'`, which the database server runs; sqlite3 `.read |cmd` runs cmd for its SQL.
_CLIENT_SHELL = LazyRegex(r"(?:^|[\s;])\\!|^\s*system\s|(?:^|\n)\s*\.(?:shell|system)\b|\\[og]\s*\|"
                          r"|(?:^|\n)\s*\.(?:output|once|read)\s+['\"]?\||\bprogram\s+['\"$]", re.MULTILINE | re.IGNORECASE)
_SQL_COMMENT = LazyRegex(r"/\*.*?\*/|--[^\n]*|#[^\n]*", re.DOTALL)
_SQL_STRING = LazyRegex(r"'(?:[^']|'')*'")
"""A SQL string literal: data, not a statement (`SELECT 'DROP TABLE' AS word`)."""
_DYNAMIC_SQL = LazyRegex(r"\b(?:execute|exec|prepare|dblink\w*|do|eval|call|sp_executesql|query_to_xml)\b",
                         re.IGNORECASE)
"""SQL that runs a string as a statement (`EXECUTE 'DROP TABLE x'`, `PREPARE s FROM '…'`, `DO $$ … $$`)."""
_SQL_CLIENTS = {
    "psql": ("c", frozenset({"command"})), "mysql": ("e", frozenset({"execute"})),
    "mariadb": ("e", frozenset({"execute"})), "sqlite3": ("", frozenset()), "sqlcmd": ("Q", frozenset()),
    "mongo": ("", frozenset({"eval"})), "cqlsh": ("e", frozenset({"execute"})), "mongosh": ("", frozenset({"eval"})), "cockroach": ("e", frozenset(
        {"execute"})), "clickhouse-client": ("q", frozenset({"query"})), "duckdb": ("c", frozenset()),
}
_VALUE_SHORT = "UhpdfWPoSvFTLn"


_SQL_FILE_WRITE = LazyRegex(r"(?:\bcopy\b[^;]*?\bto\s+|\binto\s+(?:out|dump)file\s+|^\s*\.(?:output|once|save|backup"
                            r"|excel)\s+(?:main\s+)?)['\"]?([^'\"\s;]+)", re.IGNORECASE | re.MULTILINE)


def _sql_writes(text: str) -> str | None:
    """A file the SQL or the client writes that is a start-up, ssh, .git or system file."""
    for found in _SQL_FILE_WRITE.finditer(text):
        target = found.group(1)
        if target.lower() in ("stdout", "stdin", "program") or target.startswith("|"):
            continue
        if sensitive_file(target) or system_file(target) or in_git_dir(target):
            return f"the SQL writes {target!r}, a start-up, ssh, .git or system file"
    return None


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
        i = 0
        while i < len(args) and args[i].startswith("-"):
            if args[i] in ("-cmd", "--cmd", "-separator", "-newline", "-nullvalue", "-init"):
                if args[i] in ("-cmd", "--cmd") and i + 1 < len(args):
                    texts.append(args[i + 1])
                i += 1
            i += 1
        texts += args[i + 1:]
    files = [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-f", "--file", "-i", "--init")]
    if any(UNKNOWN in f for f in files):
        return "the SQL file is only known when the command runs; write the statements out literally"
    for text in texts:
        if _CLIENT_SHELL.search(text):
            return "the client or server runs a shell command (\\!, system, .shell, a pipe, COPY … PROGRAM)"
        if UNKNOWN in text:  # (stdin from a pipe of unknown data is not text here: `pg_dump | psql` restores)
            return "the SQL is only known when the command runs; write the statement out literally"
        written = _sql_writes(text)
        if written:
            return written
        statements = _SQL_COMMENT.sub(" ", text)
        if not _DYNAMIC_SQL.search(statements):  # a string EXECUTE runs is a statement, not data
            statements = _SQL_STRING.sub("''", statements)
        found = _DESTRUCTIVE_SQL.search(statements)
        if found:
            return f"the SQL drops or empties data ({found.group(0).strip()})"
    return None


def _redis_admin(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    words = [w.lower() for w in operands(cmd.args, ("-h", "-p", "-a", "-n", "-u", "--user", "--pass", "-s"))]
    text = " ".join(words + (cmd.stdin or "").lower().split())
    found = re.search(r"\b(shutdown|config set (?:dir|dbfilename)|function flush|cluster reset|debug "
                      r"(?:segfault|crash-and-recover|reload))\b", text)
    return f"`{found.group(1).upper()}`" if found else None


def _django_reset(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    found = operands(cmd.args)
    if cmd.name in ("python", "python3"):
        if not found or not found[0].endswith("manage.py"):
            return None
        found = found[1:]
    return "" if found[:1] and found[0] in ("flush", "reset_db", "sqlflush") else None


def _http_delete(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    """An HTTP DELETE (`curl -X DELETE URL`, `wget --method=DELETE`, `http DELETE URL`), or a query that
    deletes what it matches (Elasticsearch/OpenSearch `_delete_by_query`)."""
    args = cmd.args
    if any("_delete_by_query" in a for a in args):
        return "it deletes every document the query matches"
    if cmd.name in ("http", "https", "xh", "xhs"):
        methods = [a for a in args if not a.startswith("-")][:1]
    elif cmd.name == "wget":
        methods = _values(args, "", ("--method",))
    else:
        methods = _values(args, "X", ("--request",))
    method = next((m for m in methods if m.upper() == "DELETE" or UNKNOWN in m), None)
    if method is None:
        return None
    if UNKNOWN in method:
        return "its HTTP method is only known when it runs and may be DELETE; write the method out literally"
    return "it sends an HTTP DELETE, which deletes what the URL names in the service or data store"


def _values(args: tuple[str, ...], letter: str, long: tuple[str, ...]) -> list[str]:
    """The values of `-X VALUE` / `-XVALUE` and `--long VALUE` / `--long=VALUE`."""
    found: list[str] = []
    for index, arg in enumerate(args):
        following = args[index + 1] if index + 1 < len(args) else ""
        name, eq, value = arg.partition("=")
        if name in long:
            found.append(value if eq else following)
        elif letter and arg.startswith("-" + letter):
            found.append(arg[2:] or following)
    return found


PACK = Pack(
    name="databases",
    title="databases: DROP/TRUNCATE/unfiltered DELETE via psql/mysql/sqlite3/mongo, dropdb, FLUSHALL, HTTP DELETE",
    rules=(
        Rule("database-drop", "drops or empties database data", tuple(_SQL_CLIENTS), check=_sql),
        Rule("database-drop", "drops a database", ("dropdb", "dropuser")),
        Rule("http-delete", "an HTTP DELETE to a data store or API", ("curl", "wget", "http", "https", "xh", "xhs"),
             check=_http_delete),
        Rule("database-drop", "drops a database", ("mysqladmin",), words=("drop",)),
        Rule("database-drop", "flushes every key", ("redis-cli", "valkey-cli", "keydb-cli"),
             check=lambda c, p: "" if any(w in a.lower() for a in (*c.args, c.stdin or "") for w in (
                 "flushall", "flushdb")) else None),
        Rule("database-drop", "stops the server (NOSAVE drops what was not saved) or points its data file anywhere",
             ("redis-cli", "valkey-cli", "keydb-cli"), check=_redis_admin),
        Rule("database-drop", "deletes every key under a prefix", ("etcdctl",), words=("del",),
             flags=("--prefix", "--from-key")),
        Rule("database-drop", "deletes a key tree", ("consul",), words=("kv", "delete"), flags=("-recurse",)),
        Rule("database-drop", "resets the database", ("rails", "rake", "bin/rails"),
             check=lambda c, p: "" if any(a in ("db:drop", "db:reset", "db:schema:load", "db:migrate:reset",
                                               "db:purge", "db:truncate_all", "db:seed:replant") for a in c.args)
             else None),
        Rule("database-drop", "resets the database", ("prisma",), words=("migrate", "reset")),
        Rule("database-drop", "resets the database", ("prisma",), words=("db", "push"), flags=("--force-reset",)),
        Rule("database-drop", "empties or resets the database", ("python", "python3", "manage.py", "django-admin"),
             check=_django_reset),
        Rule("database-drop", "drops every table", ("php", "artisan"), check=lambda c, p: "" if set(operands(
            c.args)[:2]) & {"migrate:fresh", "migrate:reset", "migrate:refresh", "db:wipe"} else None),
        Rule("database-drop", "migrates the database down to nothing", ("alembic",), words=("downgrade", "base")),
        Rule("database-drop", "migrates the database down to nothing", ("flask",), words=("db", "downgrade")),
        Rule("database-drop", "drops or resets the database", ("mix",), check=lambda c, p: "" if set(operands(
            c.args)[:1]) & {"ecto.drop", "ecto.reset", "ecto.rollback"} else None),
        Rule("database-drop", "drops every object in the schema", ("flyway",), words=("clean",)),
        Rule("database-drop", "drops every object in the schema", ("liquibase",),
             check=lambda c, p: "" if set(operands(c.args)[:1]) & {"drop-all", "dropAll", "rollback-count",
                                                                     "rollbackCount"} else None),
        Rule("database-drop", "drops or resets the database", ("dbmate", "goose", "migrate"),
             check=lambda c, p: "" if set(operands(c.args, ("-d", "--url", "-dir", "-database", "-path",
                                                             "--migrations-dir"))[:2]) & {"drop", "reset", "down-to"}
             else None),
        Rule("database-drop", "drops or resets the database", ("diesel", "sqlx", "sea-orm-cli"),
             check=lambda c, p: "" if operands(c.args)[:2] in (["database", "drop"], ["database", "reset"],
                                                              ["migrate", "reset"], ["migrate", "fresh"],
                                                              ["migrate", "down"]) else None),
        Rule("database-drop", "drops the schema", ("typeorm", "sequelize", "sequelize-cli", "knex"), check=lambda c, p: "" if set(
            operands(c.args)[:1]) & {"schema:drop", "db:drop", "migrate:rollback"} else None),
    ),
    # what a redis command built at run time (`redis-cli "$CMD"`) is tried as
    vocabulary={name: ("flushall", "flushdb", "shutdown", "config") for name in ("redis-cli", "valkey-cli",
                                                                            "keydb-cli")},
)
