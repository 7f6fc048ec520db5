"""Refuse a file-writing tool call on a `protect`ed path before it runs.

Two callers: the serve transport's permission broker (kilo / opencode ask before every edit when
the run has protect globs) and the pre-tool hook of Claude Code, Codex and Gemini CLI, which
learns the current stage's globs from `KILO_LOOP_PROTECT` in the agent's environment (set per
session by the loop: `{"root": <project>, "globs": [...]}`). Kept free of heavy imports: the
hook runs on every tool call.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from kilo_loop.goal.protect import matching_glob

PROTECT_ENV = "KILO_LOOP_PROTECT"
# The agent CLIs' own project config: a file that says `{"permission": {"bash": "allow"}}` would beat the
# loop's deny rules in the next session. Protected in every guarded run (read-only in the jail too;
# these globs also cover the files that do not exist yet, which the jail cannot bind).
AGENT_CONFIG_GLOBS = (".kilo/**", "kilo.json", "kilo.jsonc", ".kilocode/**", "opencode.json", "opencode.jsonc",
                      ".opencode/**", ".claude/settings*.json", ".mcp.json", ".codex/**", ".gemini/**", ".cursor/**")
RULE = "protect"
FILE_TOOLS = frozenset({"write", "edit", "multiedit", "patch", "apply_patch", "notebookedit", "write_file",
                        "replace"})
_SHELL_TOOLS = frozenset({"bash", "shell", "exec_command", "run_shell_command"})
_PATH_KEYS = ("filePath", "file_path", "path", "notebook_path")
_PATCH_FILE = re.compile(r"^(?:\*\*\* (?:Add|Update|Delete) File: |\+\+\+ (?:b/)?)(.+)$", re.MULTILINE)


class Refusal(NamedTuple):  # not a dataclass: the hook process must not import dataclasses
    path: str  # relative to the project
    glob: str

    @property
    def reason(self) -> str:
        return (f"{self.path} is protected for this stage (protect glob {self.glob!r}); "
                "reach the goal without changing it")


def protect_env(root: str, globs: Sequence[str]) -> dict[str, str]:
    """The child-environment entry that hands the stage's globs to the pre-tool hook (none without globs)."""
    return {PROTECT_ENV: json.dumps({"root": root, "globs": list(globs)})} if globs else {}


def file_paths(tool_input: Mapping[str, Any]) -> list[str]:
    """The paths a file tool's input names: its path fields and the files a patch text touches."""
    paths = [v for k in _PATH_KEYS if isinstance(v := tool_input.get(k), str) and v]
    for key in ("patch", "patchText", "input"):
        text = tool_input.get(key)
        if isinstance(text, str):
            paths += patch_paths(text)
    return paths


def patch_paths(text: str) -> list[str]:
    return [m.group(1).strip() for m in _PATCH_FILE.finditer(text)]


def relative(path: str, root: str, cwd: str | None = None) -> str | None:
    """`path` relative to the project root, or None when it lies outside."""
    absolute = path if path.startswith("/") else posixpath.join(cwd or root, path)
    normal, top = posixpath.normpath(absolute), posixpath.normpath(root)
    if not normal.startswith(top.rstrip("/") + "/"):
        return None
    return normal[len(top.rstrip("/")) + 1:]


def refused_path(paths: Iterable[str], root: str, globs: Sequence[str], cwd: str | None = None) -> Refusal | None:
    """The first of `paths` a glob protects."""
    for path in paths:
        rel = relative(path, root, cwd)
        glob = matching_glob(rel, globs) if rel else None
        if rel and glob:
            return Refusal(rel, glob)
    return None


def refused_tool(tool: str, tool_input: Mapping[str, Any], root: str, globs: Sequence[str],
                 cwd: str | None = None) -> Refusal | None:
    """A file tool (or a shell `apply_patch`) that would write a protected path."""
    if not globs:
        return None
    name = tool.lower()
    if name in FILE_TOOLS:
        return refused_path(file_paths(tool_input), root, globs, cwd)
    command = tool_input.get("command")
    if name in _SHELL_TOOLS and isinstance(command, str) and "apply_patch" in command:
        return refused_path(patch_paths(command), root, globs, cwd)
    return None


def hook_refusal(payload: Mapping[str, Any], environ: Mapping[str, str]) -> Refusal | None:
    """For the pre-tool hook: the call in `payload` (`tool_name`, `tool_input`, `cwd`) checked against
    the globs in `environ`; None when there are none or the input is not understood."""
    raw = environ.get(PROTECT_ENV, "")
    if not raw:
        return None
    try:
        spec = json.loads(raw)
        root, globs = str(spec["root"]), [str(g) for g in spec["globs"]]
    except (ValueError, KeyError, TypeError):
        return None
    tool, tool_input, cwd = payload.get("tool_name"), payload.get("tool_input"), payload.get("cwd")
    if not isinstance(tool, str) or not isinstance(tool_input, Mapping):
        return None
    return refused_tool(tool, tool_input, root, globs, cwd if isinstance(cwd, str) and cwd else None)


def hook_denial(raw: str, environ: Mapping[str, str]) -> str | None:
    """The pre-tool hook's refusal text for the call in `raw` (its stdin), or None to go on to the guard."""
    if PROTECT_ENV not in environ:
        return None
    try:
        payload: Any = json.loads(raw) if raw.strip() else None
    except ValueError:
        return None
    refusal = hook_refusal(payload, environ) if isinstance(payload, dict) else None
    return None if refusal is None else f"denied by the loop's guard ({RULE}): {refusal.reason}"
