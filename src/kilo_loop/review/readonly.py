"""Reviewer sessions only read: a guard that denies any write outside `.kilocode-loop/`.

File tools (write, edit, patch) may only target the loop's folder, where the reviewer writes
its verdict. Shell commands may not redirect output elsewhere nor run a command that changes
the tree (rm, mv, sed -i, git add/checkout/…, package installs). Everything else is judged by the
run's own destructive-command guard.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kilo_loop.agent.protect_check import file_paths
from kilo_loop.guard.shell import OutputRedirect, SimpleCommand, analyze, parse_git_argv
from kilo_loop.guard.shell.model import command_name
from kilo_loop.run.guard_decision import GuardDecision, GuardLike
from kilo_loop.run.layout import LOOP_DIR

RULE = "review-read-only"
_FILE_TOOLS = frozenset({"write", "edit", "multiedit", "patch", "apply_patch", "notebookedit"})
_SHELL_TOOLS = frozenset({"bash", "shell", "exec_command"})
_CHANGING = frozenset({"rm", "rmdir", "mv", "cp", "touch", "mkdir", "ln", "chmod", "chown", "truncate", "dd",
                       "patch", "install", "unlink", "shred", "rsync"})
_READ_ONLY_GIT = frozenset({"status", "diff", "log", "show", "blame", "grep", "ls-files", "rev-parse", "branch",
                            "describe", "shortlog", "cat-file", "ls-tree", "config"})
_INSTALLERS = frozenset({"npm", "pnpm", "yarn", "pip", "pip3", "uv", "poetry", "cargo", "go", "bun"})
_HARMLESS_TARGETS = ("/dev/null", "/dev/stdout", "/dev/stderr")


def _deny(reason: str) -> GuardDecision:
    return GuardDecision("deny", RULE, f"a reviewer only reads: {reason}")


class ReadOnlyGuard:
    def __init__(self, base: GuardLike | None, project: Path) -> None:
        self._base = base
        self._loop_dir = posixpath.join(str(project), LOOP_DIR)
        self._project = str(project)

    @property
    def temp_roots(self) -> tuple[str, ...]:
        roots = getattr(self._base, "temp_roots", ())
        return tuple(roots) if isinstance(roots, (tuple, list)) else ()

    def _inside_loop_dir(self, path: str, cwd: str | None) -> bool:
        absolute = path if path.startswith("/") else posixpath.join(cwd or self._project, path)
        normal = posixpath.normpath(absolute)
        return normal == self._loop_dir or normal.startswith(self._loop_dir + "/")

    def check_tool_use(self, tool: str, tool_input: Any, cwd: str | None = None) -> Any:
        name = str(tool).lower()
        if isinstance(tool_input, Mapping):
            if name in _FILE_TOOLS:
                outside = [p for p in file_paths(tool_input) if not self._inside_loop_dir(p, cwd)]
                if outside or not file_paths(tool_input):
                    return _deny(f"{tool} would write {', '.join(outside) or 'a file'} outside {LOOP_DIR}/")
            elif name in _SHELL_TOOLS and isinstance(tool_input.get("command"), str):
                denied = self._check_command(tool_input["command"], cwd)
                if denied is not None:
                    return denied
        if self._base is None:
            return GuardDecision("allow", None, "read-only check passed")
        return self._base.check_tool_use(tool, tool_input, cwd)

    def _check_command(self, command: str, cwd: str | None) -> GuardDecision | None:
        try:
            analysis = analyze(command, cwd or self._project, "/tmp")
        except Exception as exc:  # noqa: BLE001 — what cannot be analysed is not known to be read-only
            return _deny(f"the command could not be analysed ({type(exc).__name__})")
        for item in analysis.executed:
            if isinstance(item, OutputRedirect):
                target = item.target
                if target not in _HARMLESS_TARGETS and not self._inside_loop_dir(target, next(iter(item.cwds), cwd)):
                    return _deny(f"output redirected to {target}")
            elif isinstance(item, SimpleCommand) and item.argv and item.remote is None:
                why = _changing(item.argv)
                cwd = next(iter(item.cwds), cwd)
                if why and not self._writes_review_files_only(item.argv, cwd):
                    return _deny(why)
        return None

    def _writes_review_files_only(self, argv: tuple[str, ...], cwd: str | None) -> bool:
        """`tee .kilocode-loop/review.json`, `cp /tmp/r.json .kilocode-loop/review-x.json`, `mkdir -p
        .kilocode-loop`: a command whose only targets are review files (or the loop's folder itself) writes
        the reviewer's verdict, which is no change to the tree."""
        targets = _write_targets(command_name(argv[0]), argv[1:])
        return bool(targets) and all(self._review_target(t, cwd) for t in targets)

    def _review_target(self, path: str, cwd: str | None) -> bool:
        absolute = posixpath.normpath(path if path.startswith("/") else posixpath.join(cwd or self._project, path))
        if absolute == self._loop_dir:
            return True
        name = posixpath.basename(absolute)
        return self._inside_loop_dir(absolute, cwd) and name.startswith("review") and name.endswith(".json")


def _write_targets(name: str, args: tuple[str, ...]) -> list[str]:
    """The files a writing command writes ([] when it is not one of these or its targets are unclear)."""
    operands = [a for a in args if not a.startswith("-")]
    if name in ("tee", "touch", "mkdir"):
        return operands
    if name in ("cp", "mv", "install") and len(operands) >= 2 and "-t" not in args:
        return operands[-1:]
    if name == "dd":
        return [a[3:] for a in args if a.startswith("of=")]
    return []


def _changing(argv: tuple[str, ...]) -> str | None:
    name = command_name(argv[0])
    if name in _CHANGING:
        return f"`{name}` changes files"
    if name == "sed" and any(a.startswith("-i") or a == "--in-place" for a in argv[1:]):
        return "`sed -i` edits files in place"
    if name == "tee" and len(argv) > 1:
        return "`tee` writes files"
    if name == "git":
        sub = parse_git_argv(argv[1:]).subcommand
        if sub is not None and sub not in _READ_ONLY_GIT:
            return f"`git {sub}` may change the tree"
    if name in _INSTALLERS and any(a in ("install", "add", "i", "remove", "uninstall", "get") for a in argv[1:3]):
        return f"`{name}` installs or removes packages"
    return None

