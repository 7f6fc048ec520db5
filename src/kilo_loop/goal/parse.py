"""Read goal files: a JSON goal, a markdown checklist, or inline text.

Markdown grammar (what `parse_markdown_goal` accepts):

- The first `# Heading` (outside fenced code) is the title; without one the
  file stem is used.
- Every task-list item is a stage, at any nesting depth: a bullet `-`, `*`,
  `+` or an ordered marker `1.` / `1)`, then `[ ]` (pending) or `[x]` / `[X]`
  (done), then the title. Stage ids are `stage-1`, `stage-2`, … in file order
  and each stage records its 1-based line so the file can be ticked in place.
- After the title, ` :: name: value` directives set `verify`, `acceptance`,
  `model`, `agent`, `variant` and `runtime` (`mode` is an alias of `agent`), and for the review
  loop `protect` (comma separated globs), `size` (small/medium/large) and
  `auto-fix` (0-3). An `Auto-fix: N` line in an item's details sets its
  budget too; a `Protect: globs` line in the description protects paths for
  every stage.
  A directive value cannot contain ` :: `.
- Lines indented deeper than an item (and not themselves items) are that
  item's `details`. Text before the first item is the goal's description.
- Items inside fenced code blocks (``` or ~~~) are examples, not stages.

Lines are the `\\n`-separated segments of the text (a trailing `\\r` is not
part of the line's content), so `sync` can edit the same lines byte for byte.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kilo_loop.goal.model import Goal, GoalError, Stage
from kilo_loop.goal.protect import ProtectError, validate_patterns

MAX_GOAL_BYTES = 10 * 1024 * 1024
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})
JSON_SUFFIXES = frozenset({".json"})
DIRECTIVES = ("verify", "acceptance", "model", "agent", "variant", "runtime")
DIRECTIVE_ALIASES = {"mode": "agent"}  # seed 001's compatibility name for the agent
# The agent CLIs a stage may name (agent.registry.RUNTIMES; a unit test keeps the two in step).
STAGE_RUNTIMES = ("kilo", "opencode", "claude", "codex", "cursor", "gemini")
REVIEW_DIRECTIVES = ("protect", "size", "auto-fix")
MARKDOWN_DIRECTIVES = (*DIRECTIVES, *REVIEW_DIRECTIVES)
STAGE_FIELDS = ("id", "title", "details", "done", *DIRECTIVES, *DIRECTIVE_ALIASES, "protect", "size", "autoFix")
GOAL_FIELDS = ("title", "description", "stages", "verify", "protect", "$schema")
SIZES = ("small", "medium", "large")
MAX_AUTO_FIX = 3
_AUTO_FIX_LINE = re.compile(r"^[ \t]*(?:[-*][ \t]+)?auto-fix:[ \t]*(?P<n>\S+)[ \t]*$", re.IGNORECASE | re.MULTILINE)
_PROTECT_LINE = re.compile(r"^[ \t]*(?:[-*][ \t]+)?protect:[ \t]*(?P<globs>.+?)[ \t]*$", re.IGNORECASE | re.MULTILINE)
NO_STAGES = "no stages: add '- [ ] …' checklist items"
TITLE_LIMIT = 80

_ITEM = re.compile(
    r"^(?P<indent>[ \t]*)(?P<marker>[-*+]|\d{1,9}[.)])[ \t]+\[(?P<mark>[ xX])\](?:[ \t]+(?P<text>.*))?$"
)
_HEADING = re.compile(r"^ {0,3}#[ \t]+(?P<title>.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})")
DIRECTIVE_SEP = re.compile(r"[ \t]*::(?:[ \t]+|$)")
DIRECTIVE_PATTERN = re.compile(r"^(?P<key>[A-Za-z][\w-]*)[ \t]*:[ \t]*(?P<value>.*?)[ \t]*$", re.DOTALL)


# ---------------------------------------------------------------- line grammar


@dataclass(frozen=True)
class ChecklistItem:
    """One `- [ ] …` line as found in the file, before its directives are validated."""

    line: int  # 1-based
    indent: int  # columns, tabs expanded to 4
    mark_column: int  # index of the ' ' / 'x' inside the brackets
    text_column: int  # index where the title starts (the line's length when there is none)
    done: bool
    text: str  # everything after the checkbox, trimmed

    @property
    def title(self) -> str:
        return split_directives(self.text)[0]


def split_lines(text: str) -> list[str]:
    """The `\\n`-separated lines of `text` without a trailing `\\r`."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def indent_width(line: str) -> int:
    stripped = line.lstrip(" \t")
    return len(line[: len(line) - len(stripped)].expandtabs(4))


def match_item(line: str, number: int) -> ChecklistItem | None:
    found = _ITEM.match(line)
    if found is None:
        return None
    return ChecklistItem(
        line=number,
        indent=indent_width(found.group("indent")),
        mark_column=found.start("mark"),
        text_column=found.start("text") if found.group("text") is not None else len(line),
        done=found.group("mark") != " ",
        text=(found.group("text") or "").strip(),
    )


def split_directives(text: str) -> list[str]:
    """The title, then each raw `name: value` directive, all trimmed."""
    return [segment.strip() for segment in DIRECTIVE_SEP.split(text)]


class _Fences:
    """Tracks whether a line is inside a fenced code block."""

    def __init__(self) -> None:
        self.open: str | None = None

    def step(self, line: str) -> bool:
        """Consume a line; True when it is a fence delimiter or inside a fence."""
        found = _FENCE.match(line)
        if self.open is None:
            if found is None:
                return False
            self.open = found.group("fence")
            return True
        closing = found.group("fence") if found is not None else ""
        if closing.startswith(self.open) and not line.strip().strip(self.open[0]):
            self.open = None
        return True


def iter_items(lines: list[str]) -> Iterator[ChecklistItem]:
    """Every checklist item outside fenced code, in file order."""
    fences = _Fences()
    for number, line in enumerate(lines, start=1):
        if fences.step(line):
            continue
        item = match_item(line, number)
        if item is not None:
            yield item


# ---------------------------------------------------------------- markdown


def parse_directives(item: ChecklistItem, source: Path | None) -> tuple[str, dict[str, str]]:
    """The item's title and its validated `:: name: value` directives."""
    title, *directives = split_directives(item.text)
    if not title:
        raise GoalError("checklist item has no title: write '- [ ] <what to do>'", source, item.line)
    values: dict[str, str] = {}
    for raw in directives:
        if not raw:
            raise GoalError("empty directive after '::': write ':: verify: <command>' or remove the '::'",
                            source, item.line)
        found = DIRECTIVE_PATTERN.match(raw)
        if found is None:
            raise GoalError(
                f"{raw!r} is not a directive: write ':: name: value' with name one of "
                f"{', '.join(MARKDOWN_DIRECTIVES)}",
                source, item.line,
            )
        key, value = found.group("key").lower(), found.group("value")
        key = DIRECTIVE_ALIASES.get(key, key)
        if key not in MARKDOWN_DIRECTIVES:
            raise GoalError(
                f"unknown directive {key!r}: use one of {', '.join(MARKDOWN_DIRECTIVES)} "
                "(e.g. ':: verify: pnpm test')",
                source, item.line,
            )
        if not value:
            raise GoalError(f"directive {key!r} has no value: write ':: {key}: <value>' or remove it",
                            source, item.line)
        if key in values:
            raise GoalError(f"directive {key!r} is given twice on this item: keep one", source, item.line)
        _check_runtime(key, value, source, item.line)
        values[key] = value
    return title, values


def _check_runtime(key: str, value: str | None, source: Path | None, line: int | None, where: str = "") -> None:
    if key == "runtime" and value is not None and value not in STAGE_RUNTIMES:
        raise GoalError(f"{where}unknown runtime {value!r}: use one of {', '.join(STAGE_RUNTIMES)}", source, line)


@dataclass
class _Draft:
    item: ChecklistItem
    details: list[str]


@dataclass
class _Outline:
    title: str = ""
    description: list[str] = field(default_factory=list)
    drafts: list[_Draft] = field(default_factory=list)


def _heading_title(line: str) -> str:
    found = _HEADING.match(line)
    return found.group("title").strip() if found else ""


def _collect(lines: list[str]) -> _Outline:
    """Title, description lines and stage drafts; a text line belongs to the deepest open item
    it is indented under (so details survive a nested item)."""
    fences = _Fences()
    outline = _Outline()
    open_items: list[_Draft] = []
    for number, line in enumerate(lines, start=1):
        in_fence = fences.step(line)
        item = None if in_fence else match_item(line, number)
        if item is not None:
            while open_items and item.indent <= open_items[-1].item.indent:
                open_items.pop()
            open_items.append(_Draft(item, []))
            outline.drafts.append(open_items[-1])
            continue
        if line.strip():
            width = indent_width(line)
            while open_items and width <= open_items[-1].item.indent:
                open_items.pop()
        if open_items:
            open_items[-1].details.append(line)
        elif not in_fence and not outline.title and _heading_title(line):
            outline.title = _heading_title(line)
        elif not outline.drafts:
            outline.description.append(line)
    return outline


def _block(lines: list[str]) -> str:
    text = textwrap.dedent("\n".join(line.rstrip() for line in lines)).strip("\n")
    return re.sub(r"\n{3,}", "\n\n", text)


def parse_markdown_goal(text: str, source: Path | None = None) -> Goal:
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise GoalError("the goal file is empty: add a '# Title' and '- [ ] …' checklist items", source)
    outline = _collect(split_lines(text))
    if not outline.drafts:
        raise GoalError(NO_STAGES, source)
    stages = []
    for number, draft in enumerate(outline.drafts, start=1):
        title, directives = parse_directives(draft.item, source)
        details = _block(draft.details)
        review = review_fields(directives, details, source, draft.item.line)
        stages.append(Stage.model_validate({
            "id": f"stage-{number}", "title": title, "details": details, "done": draft.item.done,
            "line": draft.item.line, **directives, **review,
        }))
    title = outline.title or (source.stem if source is not None else "Untitled plan")
    description = _block(outline.description)
    protect = [glob for found in _PROTECT_LINE.finditer(description) for glob in _globs(found.group("globs"))]
    return Goal(title=title, description=description, stages=stages, source=source,
                kind="markdown", protect=_checked_globs(protect, "goal", source))


# ---------------------------------------------------------------- review fields


def _globs(text: str) -> list[str]:
    return [glob.strip() for glob in re.split(r"[,\s]+", text) if glob.strip()]


def _checked_globs(globs: list[str], where: str, source: Path | None, line: int | None = None) -> list[str]:
    try:
        return validate_patterns(globs)
    except ProtectError as exc:
        raise GoalError(f"{where}: {exc}", source, line) from None


def _auto_fix(value: object, where: str, source: Path | None, line: int | None = None) -> int:
    text = str(value).strip()
    if isinstance(value, bool) or not text.isdigit() or int(text) > MAX_AUTO_FIX:
        raise GoalError(f"{where}: auto-fix must be a whole number from 0 to {MAX_AUTO_FIX}, not {value!r}",
                        source, line)
    return int(text)


def _size(value: object, where: str, source: Path | None, line: int | None = None) -> str:
    if not isinstance(value, str) or value.strip().lower() not in SIZES:
        raise GoalError(f"{where}: size must be one of {', '.join(SIZES)}, not {value!r}", source, line)
    return value.strip().lower()


def review_fields(directives: dict[str, str], details: str, source: Path | None, line: int | None) -> dict[str, Any]:
    """Pop the markdown review directives (protect, size, auto-fix) into Stage fields."""
    fields: dict[str, Any] = {}
    if "protect" in directives:
        fields["protect"] = _checked_globs(_globs(directives.pop("protect")), "protect", source, line)
    if "size" in directives:
        fields["size"] = _size(directives.pop("size"), "size", source, line)
    auto_fix = directives.pop("auto-fix", None)
    if auto_fix is None and (found := _AUTO_FIX_LINE.search(details)):
        auto_fix = found.group("n")
    if auto_fix is not None:
        fields["auto_fix"] = _auto_fix(auto_fix, "auto-fix", source, line)
    return fields


# ---------------------------------------------------------------- json


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise GoalError(f"duplicate key {key!r} in a JSON object: keep only one")
        seen[key] = value
    return seen


def load_json_object(text: str, source: Path | None) -> dict[str, Any]:
    """Decode a JSON goal document; syntax errors carry the line and column."""
    if not text.strip():
        raise GoalError('the goal file is empty: write {"title": …, "stages": [{"title": …}]}', source)
    try:
        data = json.loads(text, object_pairs_hook=_reject_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise GoalError(
            f"invalid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno} "
            "(look for a missing or trailing comma, an unquoted key or an unclosed bracket)",
            source, exc.lineno,
        ) from None
    except GoalError as exc:
        raise GoalError(exc.message, source) from None
    except RecursionError:
        raise GoalError("invalid JSON: nested too deeply", source) from None
    if not isinstance(data, dict):
        raise GoalError(f'the goal must be a JSON object, not {_type_name(data)}: write {{"title": …, '
                        '"stages": […]}', source)
    return data


def _type_name(value: object) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
             int: "a number", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _optional_str(value: object, where: str, field: str, source: Path | None) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise GoalError(f'{where}: "{field}" must be a string, not {_type_name(value)}', source)
    return value.strip() or None


def _stage_from_json(raw: object, index: int, source: Path | None) -> Stage:
    where = f"stage {index + 1}"
    if not isinstance(raw, dict):
        raise GoalError(f'{where} must be an object like {{"title": "…"}}, not {_type_name(raw)}', source)
    if isinstance(raw.get("id"), str) and raw["id"].strip():
        where = f"{where} ({raw['id'].strip()!r})"
    unknown = [key for key in raw if key not in STAGE_FIELDS]
    if unknown:
        raise GoalError(f'{where}: unknown field "{unknown[0]}": stage fields are {", ".join(STAGE_FIELDS)}',
                        source)
    title = raw.get("title")
    if not isinstance(title, str) or not title.strip():
        problem = "is missing" if title is None else f"must be a non-empty string, not {_type_name(title)}"
        raise GoalError(f'{where}: "title" {problem}', source)
    done = raw.get("done", False)
    if not isinstance(done, bool):
        raise GoalError(f'{where}: "done" must be true or false, not {_type_name(done)}', source)
    stage_id = _optional_str(raw.get("id"), where, "id", source) or f"stage-{index + 1}"
    details = _optional_str(raw.get("details"), where, "details", source) or ""
    extras = {key: _optional_str(raw.get(key), where, key, source) for key in DIRECTIVES}
    for alias, key in DIRECTIVE_ALIASES.items():
        value = _optional_str(raw.get(alias), where, alias, source)
        if value is not None and extras[key] is not None:
            raise GoalError(f'{where}: give "{key}" or its alias "{alias}", not both', source)
        extras[key] = extras[key] or value
    _check_runtime("runtime", extras["runtime"], source, None, f"{where}: ")
    review: dict[str, Any] = {}
    if raw.get("protect") is not None:
        review["protect"] = _checked_globs(_json_globs(raw["protect"], where, source), where, source)
    if raw.get("size") is not None:
        review["size"] = _size(raw["size"], where, source)
    if raw.get("autoFix") is not None:
        review["auto_fix"] = _auto_fix(raw["autoFix"], where, source)
    return Stage.model_validate(
        {"id": stage_id, "title": title.strip(), "details": details, "done": done, **extras, **review}
    )


def _json_globs(value: object, where: str, source: Path | None) -> list[str]:
    if isinstance(value, str):
        return _globs(value)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return [item.strip() for item in value if item.strip()]
    raise GoalError(f'{where}: "protect" must be a list of glob strings, not {_type_name(value)}', source)


def _check_unique_ids(stages: list[Stage], source: Path | None) -> None:
    first: dict[str, int] = {}
    for index, stage in enumerate(stages, start=1):
        if stage.id in first:
            raise GoalError(f"duplicate stage id {stage.id!r} (stages {first[stage.id]} and {index}): "
                            "give every stage its own id", source)
        first[stage.id] = index


def parse_json_goal(text: str, source: Path | None = None) -> Goal:
    data = load_json_object(text, source)
    unknown = [key for key in data if key not in GOAL_FIELDS]
    if unknown:
        raise GoalError(f'unknown top-level field "{unknown[0]}": a goal has title, description, stages '
                        "and an optional verify and protect", source)
    raw_stages = data.get("stages")
    if not isinstance(raw_stages, list):
        problem = "is missing" if raw_stages is None else f"must be an array, not {_type_name(raw_stages)}"
        raise GoalError(f'"stages" {problem}: add "stages": [{{"title": "…"}}]', source)
    if not raw_stages:
        raise GoalError('no stages: add at least one {"title": "…"} to "stages"', source)
    stages = [_stage_from_json(raw, index, source) for index, raw in enumerate(raw_stages)]
    _check_unique_ids(stages, source)
    title = _optional_str(data.get("title"), "goal", "title", source)
    description = _optional_str(data.get("description"), "goal", "description", source) or ""
    verify = _optional_str(data.get("verify"), "goal", "verify", source)
    fallback = source.stem if source is not None else "Untitled goal"
    protect = _json_globs(data["protect"], "goal", source) if data.get("protect") is not None else []
    return Goal(title=title or fallback, description=description, stages=stages, source=source,
                kind="json", verify=verify, protect=_checked_globs(protect, "goal", source))


# ---------------------------------------------------------------- entry points


def goal_from_text(text: str) -> Goal:
    """An inline goal (`--goal-text`): one stage whose details are the whole text."""
    body = text.strip()
    if not body:
        raise GoalError("the goal text is empty: describe what the agent should do")
    first = body.splitlines()[0].strip()
    title = first if len(first) <= TITLE_LIMIT else first[: TITLE_LIMIT - 1].rstrip() + "…"
    stage = Stage(id="stage-1", title=title, details=body if body != first else "")
    return Goal(title=title, description=body, stages=[stage], kind="text")


def read_goal_text(path: Path) -> str:
    """The file's text, or a GoalError saying why it cannot be used."""
    try:
        size = path.stat().st_size
        if size > MAX_GOAL_BYTES:
            raise GoalError(f"the file is {size} bytes; goal files are limited to {MAX_GOAL_BYTES}", path)
        data = path.read_bytes()
    except FileNotFoundError:
        raise GoalError("file not found: check the --goal path", path) from None
    except IsADirectoryError:
        raise GoalError("is a directory: pass a .json or .md goal file", path) from None
    except OSError as exc:
        raise GoalError(f"cannot read the file ({exc.strerror or exc}): check its permissions", path) from None
    if b"\0" in data:
        raise GoalError("looks like a binary file (it contains NUL bytes): pass a text goal file", path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise GoalError(f"not UTF-8 text (bad byte at offset {exc.start}): save the file as UTF-8",
                        path, line) from None


def load_goal(path: Path) -> Goal:
    if path.is_dir():  # before the suffix: a directory's name is no file type (`--goal .` read as '.repo')
        raise GoalError("is a directory: pass a .json or .md goal file", path)
    suffix = path.suffix.lower()
    if suffix not in JSON_SUFFIXES | MARKDOWN_SUFFIXES:
        raise GoalError(f"unsupported goal file type {suffix or '(none)'!r}: use a .json goal, a .md "
                        "checklist, or --goal-text for inline text", path)
    text = read_goal_text(path)
    if suffix in JSON_SUFFIXES:
        return parse_json_goal(text, path)
    return parse_markdown_goal(text, path)
