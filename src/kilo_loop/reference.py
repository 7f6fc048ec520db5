"""The generated reference: markdown tables built from the code itself (the settings model, the
CLI's options, the guard's rule packs, the exit codes and the run's events), so the documentation
site cannot drift from what the program does. The MkDocs hook (`scripts/docs_hooks.py`) puts them
into the reference pages; tests check every key and flag has an entry.
"""

from __future__ import annotations

import dataclasses
import json
import re
import types
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin

import click
from pydantic import BaseModel
from pydantic.fields import FieldInfo

# Settings that no flag of the run sets: what each is for (a flag's own help says it for the rest).
KEY_HELP: dict[str, str] = {
    "kilo_bin": "the agent binary (as KILO_BIN; its file name picks the runtime under `auto`)",
    "backend": "`module:attr` of your own agent backend (a class, an instance or a factory)",
    "preflight": "before a real run, check each agent CLI accepts the flags the loop passes",
    "guard_deny": "RE2 patterns searched in each command's text; a match is denied",
    "guard_allow": "RE2 patterns searched in each command's text; a match is allowed",
    "guard_packs": "rule packs switched on or off by name, e.g. `{\"databases\": false}`",
    "review_large_retries": "automatic review fix retries for `:: size: large` stages (asked at pre-flight)",
    "confirm": "ask `Start this run? [Y/n]` on a terminal (`--yes` / `--no-confirm` skip it)",
    "goal": "the goal file: a `.json` goal or a `.md` checklist",
    "mask_files": "globs of the project's env files whose values are masked everywhere (`[]` opts out)",
    "mask_values": "literal values masked everywhere the run writes (see Redaction)",
    "review": "`true`, or `{\"roles\": [\"code\", \"test\", {\"role\": \"security\", \"model\": …}]}`",
}
# Settings whose flag has another name.
FLAG_OF: dict[str, str] = {"confirm": "no_confirm"}
# Options of the run that set no config key (they choose what the command does, or are old names).
COMMAND_ONLY_FLAGS = frozenset({"version", "parallel", "merge", "keep_branches", "mode", "session_mode",
                                "list_goals"})
# Durations: the file and the environment take "90s", "10m", "6h" (or a number of seconds).
DURATIONS = frozenset({"keep_open_for", "answer_timeout", "max_quota_wait"})


@dataclass(frozen=True)
class KeyEntry:
    key: str  # as written in config.json
    type: str
    default: str
    env: str
    flag: str  # "" when no flag of the run sets it
    help: str


def camel(name: str) -> str:
    return re.sub(r"_([a-z])", lambda found: found.group(1).upper(), name)


def type_name(annotation: Any) -> str:
    """A reader's name for a field's type: `int`, `"serve" | "run"`, `list of str`, `float or null`."""
    origin = get_origin(annotation)
    if origin is Literal:
        return " | ".join(json.dumps(value) for value in get_args(annotation))
    if origin in (Union, types.UnionType):
        parts = [arg for arg in get_args(annotation) if arg is not type(None)]
        name = " or ".join(type_name(arg) for arg in parts)
        return f"{name} or null" if len(parts) < len(get_args(annotation)) else name
    if origin is list:
        return f"list of {type_name(get_args(annotation)[0])}"
    if origin is dict:
        return "object"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"{annotation.__name__} object"
    name = getattr(annotation, "__name__", str(annotation))
    return {"Path": "path", "bool": "boolean", "str": "string", "int": "integer", "float": "number",
            "Any": "any"}.get(name, name)


def default_text(field: FieldInfo) -> str:
    value = field.get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        return "{…}"  # an object of its own, with its own table
    return "" if value is None else json.dumps(value)


def option_help(command: click.Command) -> dict[str, tuple[str, str]]:
    """Each option of `command` by its parameter name: (its flags as typed, its help)."""
    found: dict[str, tuple[str, str]] = {}
    for param in command.params:
        if isinstance(param, click.Option) and param.name and not param.hidden:
            flags = " / ".join([*param.opts, *param.secondary_opts])
            found[param.name] = (flags, param.help or "")
    return found


def config_keys(fields: dict[str, FieldInfo], options: dict[str, tuple[str, str]]) -> list[KeyEntry]:
    entries = []
    for name, field in fields.items():
        flags, help_text = options.get(FLAG_OF.get(name, name), ("", ""))
        if name in DURATIONS:
            help_text = f"{help_text} (seconds, or a duration: 90s, 10m, 6h)".strip()
        entries.append(KeyEntry(key=camel(name), type=type_name(field.annotation), default=default_text(field),
                                env=f"KILO_LOOP_{name.upper()}", flag=flags,
                                help=KEY_HELP.get(name) or help_text))
    return entries


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    return f"`{text}`" if text else ""


def markdown_table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def config_table(entries: Iterable[KeyEntry]) -> str:
    return markdown_table(
        ("key", "type", "default", "environment", "flag", "what it does"),
        ((_code(e.key), e.type, _code(e.default), _code(e.env), _code(e.flag), e.help) for e in entries))


def exit_code_table(codes: dict[str, int]) -> str:
    return markdown_table(("exit code", "the run's final status"),
                          ((str(code), f"`{status}`") for status, code in sorted(codes.items(), key=lambda i: i[1])))


def guard_packs_text(packs: Iterable[Any]) -> str:
    """One section per pack (`guard.packs.Pack`): its title and a table of its rules."""
    sections = []
    for pack in packs:
        rows = [(f"`{rule.id}`", ", ".join(f"`{name}`" for name in rule.names), rule.reason) for rule in pack.rules]
        rows += [(f"`{rule.id}`", "(any command text)", rule.reason) for rule in pack.text_rules]
        sections.append(f"## `{pack.name}`\n\n{pack.title}\n\n" + markdown_table(("rule", "commands", "why it denies"), rows))
    return "\n\n".join(sections)


def events_table(event_types: dict[str, Any]) -> str:
    """Every event type of events.jsonl: its `data` keys and whether it is a log line."""
    rows = []
    for name, cls in sorted(event_types.items()):
        keys = [field.name for field in dataclasses.fields(cls)
                if field.name not in ("message", "level", "iteration", "seq", "ts", "extra")]
        doc = (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        rows.append((f"`{name}`", ", ".join(f"`{key}`" for key in keys), "state only" if cls.RECORD_ONLY else "log line",
                     "" if doc.startswith(cls.__name__ + "(") else doc))
    return markdown_table(("type", "data keys", "kind", "what it records"), rows)


def state_tables(models: Iterable[type[BaseModel]]) -> str:
    """state.json's objects (the run state first, then the objects it holds): each key as written on the
    wire (camelCase), its type and its default."""
    sections = []
    for model in models:
        rows = [(f"`{field.alias or name}`", type_name(field.annotation),
                 "" if field.is_required() else _code(default_text(field)))
                for name, field in model.model_fields.items()]
        doc = (model.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        sections.append(f"### `{model.__name__}`\n\n{doc}\n\n" + markdown_table(("key", "type", "default"), rows))
    return "\n\n".join(sections)


def _wire_models(root: type[BaseModel]) -> list[type[BaseModel]]:
    """`root` and every model its fields hold, depth first, each once."""
    found: list[type[BaseModel]] = []

    def visit(model: type[BaseModel]) -> None:
        if model in found:
            return
        found.append(model)
        for field in model.model_fields.values():
            for inner in _models_in(field.annotation):
                visit(inner)

    visit(root)
    return found


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in get_args(annotation) for model in _models_in(arg)]


def generated_sections() -> dict[str, str]:
    """Marker name -> markdown, for `<!-- generated: NAME -->` in the reference pages."""
    from kilo_loop.cli import main
    from kilo_loop.guard.packs import PACKS
    from kilo_loop.run.events import EVENT_TYPES
    from kilo_loop.run.state import RunState
    from kilo_loop.run.status import EXIT_CODES
    from kilo_loop.settings import Settings

    return {
        "configuration keys": config_table(config_keys(dict(Settings.model_fields), option_help(main))),
        "exit codes": exit_code_table(EXIT_CODES),
        "guard packs": guard_packs_text(PACKS),
        "events": events_table(dict(EVENT_TYPES)),
        "state": state_tables(_wire_models(RunState)),
    }


_MARKER = re.compile(r"<!-- generated: ([a-z ]+) -->")


def fill(markdown: str, sections: dict[str, str]) -> str:
    """The page with each marker replaced by its generated section; an unknown marker is an error."""
    def replace(found: re.Match[str]) -> str:
        name = found.group(1)
        if name not in sections:
            raise KeyError(f"no generated section named {name!r}; known: {', '.join(sorted(sections))}")
        return sections[name]

    return _MARKER.sub(replace, markdown)
