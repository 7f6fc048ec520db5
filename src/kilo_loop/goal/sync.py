"""Write progress back into goal files: tick checkboxes, mark a whole plan, set verify commands.

Markdown edits, and JSON `done` edits, touch only the characters they change:
line endings (LF or CRLF), a missing trailing newline, a BOM, the author's
indentation and any unicode text survive byte for byte (see json_edit). JSON
verify edits re-serialise the document with a 2-space indent (keys keep their
order; CRLF files stay CRLF). Every write goes to a temp file
in the same directory, is fsynced and renamed over the target, keeping the
file's mode; a symlinked goal is written through to its target.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kilo_loop.goal.json_edit import with_stage_done
from kilo_loop.goal.model import Goal, GoalError, Stage
from kilo_loop.goal.parse import (
    DIRECTIVE_PATTERN,
    DIRECTIVE_SEP,
    JSON_SUFFIXES,
    MARKDOWN_SUFFIXES,
    ChecklistItem,
    iter_items,
    load_json_object,
    parse_json_goal,
    read_goal_text,
    split_lines,
)
from kilo_loop.run.files import write_bytes_atomic

_BOM = "\ufeff"


# ---------------------------------------------------------------- file I/O


def _save(path: Path, data: bytes, durable: bool = True) -> None:
    try:
        write_bytes_atomic(path, data, durable)
    except OSError as exc:
        raise GoalError(f"cannot write the goal file ({exc.strerror or exc}): check its permissions",
                        path) from None


class _MarkdownDoc:
    """A markdown file as `\\n`-separated segments that reassemble to the exact original text."""

    def __init__(self, path: Path) -> None:
        text = read_goal_text(path)
        self.path = path
        self.bom = _BOM if text.startswith(_BOM) else ""
        self.segments = text[len(self.bom) :].split("\n")
        self.lines = split_lines(text[len(self.bom) :])
        self.items = list(iter_items(self.lines))

    def set_mark(self, item: ChecklistItem, done: bool) -> None:
        segment = self.segments[item.line - 1]
        mark = "x" if done else " "
        self.segments[item.line - 1] = segment[: item.mark_column] + mark + segment[item.mark_column + 1 :]

    def save(self, durable: bool = True) -> None:
        _save(self.path, (self.bom + "\n".join(self.segments)).encode("utf-8"), durable)


def _kind(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    if suffix in JSON_SUFFIXES:
        return "json"
    raise GoalError(f"unsupported goal file type {suffix or '(none)'!r}: only .json and .md goals can be "
                    "edited", path)


def _edit_json(path: Path, change: Callable[[dict[str, Any]], int]) -> int:
    """Validate the JSON goal, apply `change` to its document and save it if anything changed."""
    text = read_goal_text(path)
    parse_json_goal(text, path)
    document = load_json_object(text, path)
    changed = change(document)
    if changed:
        output = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
        if "\r\n" in text:
            output = output.replace("\n", "\r\n")
        _save(path, output.encode("utf-8"))
    return changed


def _check_index(stage_index: int, count: int, path: Path) -> None:
    if not 0 <= stage_index < count:
        raise GoalError(f"stage index {stage_index} is out of range: this plan has {count} stage(s), "
                        f"numbered 0 to {count - 1}", path)


# ---------------------------------------------------------------- ticking stages


def _locate(items: list[ChecklistItem], stage: Stage) -> ChecklistItem | None:
    """The item on the stage's recorded line if it still has the stage's title, else the item with
    that title nearest to the recorded line."""
    same_title = [item for item in items if item.title == stage.title]
    if not same_title:
        return None
    origin = stage.line or 0
    return min(same_title, key=lambda item: (abs(item.line - origin), item.line))


def mark_markdown_stage_done(path: Path, stage: Stage, done: bool = True, durable: bool = True) -> bool:
    """Tick (or untick) the stage's checkbox in place.

    Returns False, writing nothing, when no item with the stage's title is left in the file;
    True when the checkbox now has the requested state. Raises GoalError when the file cannot
    be read or written.
    """
    doc = _MarkdownDoc(path)
    item = _locate(doc.items, stage)
    if item is None:
        return False
    if item.done != done:
        doc.set_mark(item, done)
        doc.save(durable)
    return True


def _json_stage_index(goal: Goal, stage: Stage) -> int | None:
    return next((index for index, candidate in enumerate(goal.stages) if candidate.id == stage.id), None)


def mark_json_stage_done(path: Path, stage: Stage, done: bool = True, durable: bool = True) -> bool:
    """Set `"done"` on the stage with this id in the JSON goal, editing only that value.

    Returns False, writing nothing, when no stage with the id is left in the file; True when
    the stage now has the requested state. A file that is no longer a valid goal raises
    GoalError and is left as it is.
    """
    text = read_goal_text(path)
    goal = parse_json_goal(text, path)
    index = _json_stage_index(goal, stage)
    if index is None:
        return False
    edited = with_stage_done(text, index, done)
    if edited != text:
        _save(path, edited.encode("utf-8"), durable)
    return True


def mark_stage_done(goal: Goal, stage: Stage, done: bool = True, durable: bool = True) -> bool:
    """Record a passed stage in its goal file, markdown or JSON (False: no file, or the stage is gone).
    `durable=False` skips the fsyncs (the write is still atomic, so a kill -9 cannot tear it)."""
    if goal.source is None or goal.kind == "text":
        return False
    if goal.kind == "json":
        return mark_json_stage_done(goal.source, stage, done, durable)
    return mark_markdown_stage_done(goal.source, stage, done, durable)


def set_all_done(path: Path, done: bool) -> int:
    """Mark every stage done (or not done); returns how many stages changed state.

    Markdown: `- [x]` / `- [ ]` in place. JSON: each stage's `"done"` value, edited in place.
    Nothing is written when nothing changes.
    """
    if _kind(path) == "json":
        return _set_all_json_done(path, done)
    doc = _MarkdownDoc(path)
    changed = [item for item in doc.items if item.done != done]
    for item in changed:
        doc.set_mark(item, done)
    if changed:
        doc.save()
    return len(changed)


def _set_all_json_done(path: Path, done: bool) -> int:
    text = read_goal_text(path)
    goal = parse_json_goal(text, path)
    changed = [index for index, stage in enumerate(goal.stages) if stage.done != done]
    for index in changed:
        text = with_stage_done(text, index, done)
    if changed:
        _save(path, text.encode("utf-8"))
    return len(changed)


# ---------------------------------------------------------------- verify commands


def set_stage_verify(path: Path, stage_index: int | None, verify: str) -> None:
    """Set, replace or (with an empty string) remove a verify command.

    `stage_index` is 0-based in file order. Markdown keeps it as the item's `:: verify: …`
    directive; JSON as `stages[i].verify`, or the top-level `"verify"` when `stage_index`
    is None (JSON goals only).
    """
    command = verify.strip()
    if _kind(path) == "json":
        _edit_json(path, lambda document: _set_json_verify(document, stage_index, command, path))
        return
    if stage_index is None:
        raise GoalError("a markdown plan has no plan-wide verify: set it on a stage, or set the default "
                        "verify for all runs in .kilocode-loop/config.json", path)
    _check_markdown_command(command, path)
    doc = _MarkdownDoc(path)
    _check_index(stage_index, len(doc.items), path)
    item = doc.items[stage_index]
    segment = doc.segments[item.line - 1]
    head, body = segment[: item.text_column], segment[item.text_column :]
    new_body = with_verify_directive(body, command)
    if new_body != body:
        doc.segments[item.line - 1] = head + new_body
        doc.save()


def _check_markdown_command(command: str, path: Path) -> None:
    if "\n" in command or "\r" in command:
        raise GoalError("a markdown verify command must be one line: join the commands with '&&'", path)
    if DIRECTIVE_SEP.search(command):
        raise GoalError("a markdown verify command cannot contain ' :: ' (it separates directives): "
                        "move it into a script and verify with that", path)


def with_verify_directive(text: str, command: str) -> str:
    """`text` (an item's title and directives) with its verify directive set to `command`,
    or removed when `command` is empty. Other directives and separators are kept as written."""
    core = text.rstrip()
    trail = text[len(core) :]
    separators = list(DIRECTIVE_SEP.finditer(core))
    starts = [0] + [sep.end() for sep in separators]
    ends = [sep.start() for sep in separators] + [len(core)]
    pieces = [core[: ends[0]]]
    placed = not command
    for index, sep in enumerate(separators, start=1):
        segment = core[starts[index] : ends[index]]
        found = DIRECTIVE_PATTERN.match(segment.strip())
        if found is None or found.group("key").lower() != "verify":
            pieces.append(sep.group() + segment)
        elif not placed:
            pieces.append(sep.group() + f"verify: {command}")
            placed = True
    if not placed:
        pieces.append(f" :: verify: {command}")
    return "".join(pieces) + trail


def _set_json_verify(document: dict[str, Any], stage_index: int | None, command: str, path: Path) -> int:
    if stage_index is None:
        holder = document
    else:
        _check_index(stage_index, len(document["stages"]), path)
        holder = document["stages"][stage_index]
    before = holder.get("verify")
    if command:
        holder["verify"] = command
    else:
        holder.pop("verify", None)
    return int(holder.get("verify") != before)
