"""Every exception class kilo-loop defines is a `KiloLoopError` (one root carrying the exit code and the
headline, reported in one place), except the few that never reach a person: signals between two
functions, caught where they are raised."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "kilo_loop"
ROOT = "KiloLoopError"
# Internal signals, each caught by its caller; none is ever shown to the user as it is.
INTERNAL = {
    "Unwatchable": "treewatch: the tree cannot be watched; the loop falls back to full reads",
    "TooDeep": "guard/shell/parse: nesting past the parser's limit; the guard denies the command",
    "LeaseBusy": "fleet/jobrun: another worker holds the job's lease; the job is skipped",
}
_BUILTIN_ROOTS = {"Exception", "BaseException", "ValueError", "RuntimeError", "LookupError", "OSError",
                  "ConnectionError", "TypeError", "KeyError"}


def _bases() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                names = [b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else ""
                         for b in node.bases]
                found[node.name] = names
    return found


def _reaches(name: str, target: set[str], bases: dict[str, list[str]], seen: frozenset[str] = frozenset()) -> bool:
    if name in target:
        return True
    if name in seen:
        return False
    return any(_reaches(base, target, bases, seen | {name}) for base in bases.get(name, []))


def test_every_exception_is_a_kilo_loop_error() -> None:
    bases = _bases()
    exceptions = {name for name in bases if name != ROOT and _reaches(name, _BUILTIN_ROOTS, bases)}
    outside = {name for name in exceptions if not _reaches(name, {ROOT}, bases)}
    assert outside == set(INTERNAL), "derive user-facing errors from kilo_loop.errors.KiloLoopError"
    assert len(exceptions) > 25  # the walk found them
