"""A unified diff (git's, or plain `diff -u`) read into files, hunks and numbered lines. Pure.

Only what the tamper rules need: each file's old and new path, whether it was added, deleted or
renamed, and every hunk line with its kind and its line number on the side it belongs to."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

LineKind = Literal["+", "-", " "]

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_GIT_HEADER = re.compile(r"^diff --git a/(.*) b/(.*)$")
DEV_NULL = "/dev/null"


@dataclass(frozen=True)
class DiffLine:
    kind: LineKind
    text: str
    number: int  # in the new file for "+" and " ", in the old file for "-"


@dataclass
class Hunk:
    lines: list[DiffLine] = field(default_factory=list)

    def added(self) -> list[DiffLine]:
        return [line for line in self.lines if line.kind == "+"]

    def removed(self) -> list[DiffLine]:
        return [line for line in self.lines if line.kind == "-"]


@dataclass
class FileDiff:
    old_path: str | None = None  # None: the file is new
    new_path: str | None = None  # None: the file was deleted
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""

    @property
    def deleted(self) -> bool:
        return self.new_path is None and self.old_path is not None

    @property
    def added_file(self) -> bool:
        return self.old_path is None and self.new_path is not None

    def lines(self, kind: LineKind) -> list[DiffLine]:
        return [line for hunk in self.hunks for line in hunk.lines if line.kind == kind]


def _strip_prefix(path: str) -> str | None:
    path = path.split("\t", 1)[0].strip()
    if path == DEV_NULL:
        return None
    if path.startswith('"') and path.endswith('"'):
        path = path[1:-1]
    return path[2:] if path[:2] in ("a/", "b/") else path


class _Reader:
    def __init__(self) -> None:
        self.files: list[FileDiff] = []
        self.current: FileDiff | None = None
        self.hunk: Hunk | None = None
        self.old_no = self.new_no = 0
        self.old_left = self.new_left = 0  # lines the current hunk still counts on each side

    def start_file(self, old: str | None, new: str | None) -> FileDiff:
        self.current = FileDiff(old_path=old, new_path=new)
        self.files.append(self.current)
        self.hunk = None
        return self.current

    def header(self, line: str) -> bool:
        """A file header line (outside a hunk's counted lines); True when it was one."""
        git = _GIT_HEADER.match(line)
        if git:
            self.start_file(git.group(1), git.group(2))
            return True
        current = self.current
        if line.startswith("--- ") and (self.hunk is None or current is None):
            if current is None or current.hunks:
                current = self.start_file(None, None)
            current.old_path = _strip_prefix(line[4:])
            return True
        if current is None:
            return False
        if line.startswith("+++ ") and self.hunk is None:
            current.new_path = _strip_prefix(line[4:])
            return True
        if self.hunk is None:
            return self._git_extended(current, line)
        return False

    def _git_extended(self, current: FileDiff, line: str) -> bool:
        if line.startswith("new file mode"):
            current.old_path = None
        elif line.startswith("deleted file mode"):
            current.new_path = None
        elif line.startswith("rename from "):
            current.old_path = line[len("rename from "):]
        elif line.startswith("rename to "):
            current.new_path = line[len("rename to "):]
        else:
            return line.startswith(("index ", "old mode", "new mode", "similarity", "dissimilarity", "copy ",
                                    "Binary files"))
        return True

    def feed(self, line: str) -> None:
        match = _HUNK.match(line)
        if match and self.current is not None:
            self.hunk = Hunk()
            self.current.hunks.append(self.hunk)
            self.old_no, self.new_no = int(match.group(1)), int(match.group(3))
            self.old_left = 1 if match.group(2) is None else int(match.group(2))
            self.new_left = 1 if match.group(4) is None else int(match.group(4))
            return
        if self.hunk is not None and (self.old_left > 0 or self.new_left > 0) and line[:1] in ("+", "-", " ", ""):
            self._hunk_line(self.hunk, line)
            return
        if line.startswith("\\"):  # "\ No newline at end of file"
            return
        self.hunk = None
        self.header(line)

    def _hunk_line(self, hunk: Hunk, line: str) -> None:
        kind, text = line[:1], line[1:]
        if kind == "+":
            hunk.lines.append(DiffLine("+", text, self.new_no))
            self.new_no, self.new_left = self.new_no + 1, self.new_left - 1
        elif kind == "-":
            hunk.lines.append(DiffLine("-", text, self.old_no))
            self.old_no, self.old_left = self.old_no + 1, self.old_left - 1
        else:  # context (an empty line is a context line whose space was stripped)
            hunk.lines.append(DiffLine(" ", text, self.new_no))
            self.old_no, self.new_no = self.old_no + 1, self.new_no + 1
            self.old_left, self.new_left = self.old_left - 1, self.new_left - 1


def parse_diff(text: str) -> list[FileDiff]:
    """Every file of a unified diff; lines that belong to none are ignored, never an error."""
    reader = _Reader()
    for line in text.splitlines():
        reader.feed(line)
    return [f for f in reader.files if f.old_path or f.new_path]
