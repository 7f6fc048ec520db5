"""The loop as the permission broker: decide one `permission.asked` before the tool runs.

Under the serve transport the server asks before every bash call, and before
a tool touches a path outside the project (`external_directory`). The answer
comes from, in order:

1. the user's own deny rules (`permission.bash` in kilo.json / opencode.json or
   in their inline config) — they still apply first;
2. the loop's full guard (`Guard.check_tool_use`) on the command;
3. for paths outside the project: reading is allowed (not /proc, where the server's
   own environment holds its password), writing only inside a temp directory (the
   guard's temp roots);
4. for an edit (asked only when the run has `protect` globs or reviewers): a
   path the current stage protects is refused, naming the glob.

A reviewer's session (`read_only`) is judged by the reviewers' guard instead
of the run's: it refuses writes outside the loop's folder before they happen.

A denial is a `reject` with a message the agent reads and can act on; it
never ends the session.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from kilo_loop.agent.protect_check import RULE as PROTECT_RULE
from kilo_loop.agent.protect_check import refused_path
from kilo_loop.agent.serve.mapping import PermissionAsk
from kilo_loop.run.guard_decision import GuardDecision, GuardLike, checked

_READ_ONLY_TOOLS = frozenset({"read", "glob", "grep", "list", "ls", "view", "lsp", "codesearch", "webfetch"})


@dataclass(frozen=True)
class Verdict:
    """What the loop answers about `subject` (the command or path asked about): the guard's decision,
    as the CLI's reply (`once` or `reject`) and, for a rejection, the message the agent reads."""

    subject: str
    decision: GuardDecision

    @classmethod
    def allow(cls, subject: str) -> Verdict:
        return cls(subject, GuardDecision("allow", None, "allowed"))

    @classmethod
    def deny(cls, subject: str, rule: str, reason: str) -> Verdict:
        return cls(subject, GuardDecision("deny", rule, reason))

    @property
    def rejected(self) -> bool:
        return self.decision.denied

    @property
    def reply(self) -> Literal["once", "reject"]:
        return "reject" if self.rejected else "once"

    @property
    def rule(self) -> str:
        return self.decision.rule_name if self.rejected else ""

    @property
    def reason(self) -> str:
        return self.decision.reason if self.rejected else ""

    @property
    def message(self) -> str:
        return rejection_message(self.rule, self.reason)


def rejection_message(rule: str, reason: str) -> str:
    return f"denied by the loop's guard: {rule} — {reason}; reach the goal another way"


@lru_cache(maxsize=512)
def _wildcard(pattern: str) -> re.Pattern[str]:
    """The CLIs' permission patterns: `*` any run of characters, `?` one; whole-string match."""
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(body, re.DOTALL)


def user_rule_for(command: str, rules: Sequence[tuple[str, str]]) -> tuple[str, str] | None:
    """The last of the user's (pattern, action) bash rules that matches `command` (last match wins)."""
    found = None
    for pattern, action in rules:
        if _wildcard(pattern).fullmatch(command.strip()):
            found = (pattern, action)
    return found


def _inside(path: str, roots: Sequence[str]) -> bool:
    normal = posixpath.normpath(path)
    return any(normal.startswith(root.rstrip("/") + "/") for root in roots if root)


@dataclass(frozen=True)
class PermissionBroker:
    guard: GuardLike | None
    project: str
    user_bash_rules: tuple[tuple[str, str], ...] = ()
    reviewer_guard: GuardLike | None = None  # judges read-only (reviewer) sessions in place of `guard`

    def decide(self, ask: PermissionAsk, tool: str = "", protect: Sequence[str] = (),
               read_only: bool = False) -> Verdict:
        """The reply to one ask; `protect` holds the current stage's protect globs, `read_only`
        says the session is a reviewer's."""
        guard = self.reviewer_guard if read_only and self.reviewer_guard is not None else self.guard
        if ask.permission == "edit" and protect:
            refused = self._protected(ask, protect)
            if refused is not None:
                return refused
        if ask.permission == "bash":
            return self._bash(ask.command or " ".join(ask.patterns), guard)
        if ask.permission == "external_directory":
            return self._outside(ask, tool)
        return self._other(ask, tool, guard)

    def _bash(self, command: str, guard: GuardLike | None) -> Verdict:
        user = user_rule_for(command, self.user_bash_rules)
        if user is not None and user[1] == "deny":
            return Verdict.deny(command, f"your permission rule {user[0]!r}", "the project's config denies it")
        if guard is None:
            return Verdict.allow(command)
        decision = checked(guard.check_tool_use("bash", {"command": command}, self.project))
        return Verdict(command, decision) if decision.denied else Verdict.allow(command)

    def _protected(self, ask: PermissionAsk, protect: Sequence[str]) -> Verdict | None:
        files = ask.metadata.get("files")
        paths = [*ask.patterns, str(ask.metadata.get("filepath") or "")]
        paths += [str(f.get("filePath") or f.get("path") or "") for f in files if isinstance(f, dict)] \
            if isinstance(files, list) else []
        refusal = refused_path([p for p in paths if p], self.project, protect)
        if refusal is None:
            return None
        return Verdict.deny(refusal.path, f"{PROTECT_RULE} {refusal.glob}", refusal.reason)

    def _outside(self, ask: PermissionAsk, tool: str) -> Verdict:
        path = str(ask.metadata.get("filepath") or ask.metadata.get("parentDir") or " ".join(ask.patterns))
        if _inside(path, ("/proc",)) or posixpath.normpath(path or "/") == "/proc":
            return Verdict.deny(path, "process-files", "the processes' own files (/proc) hold the agent server's "
                                "secrets; read the project instead")
        if tool.lower() in _READ_ONLY_TOOLS or tool.lower() == "bash":
            return Verdict.allow(path)  # reading is harmless; a bash call is judged on its own ask
        roots = self.guard.temp_roots if self.guard is not None else ()
        if path and _inside(path, roots):
            return Verdict.allow(path)
        where = ", ".join(roots) or "a temp directory"
        return Verdict.deny(path, "outside-project",
                       f"{tool or 'the tool'} would change {path}, outside the project {self.project}; "
                       f"keep changes inside the project (or a temp directory: {where})")

    def _other(self, ask: PermissionAsk, tool: str, guard: GuardLike | None) -> Verdict:
        """Any other permission the server asks about (edit, webfetch, …): the guard sees the tool's input."""
        if guard is None:
            return Verdict.allow(ask.permission)
        patterns = " ".join(ask.patterns) if ask.permission == "edit" else ""
        filepath = ask.metadata.get("filepath") or patterns
        tool_input = {"filePath": filepath} if filepath else {}
        decision = checked(guard.check_tool_use(tool or ask.permission, tool_input, self.project))
        if decision.denied:
            return Verdict(str(filepath or ask.permission), decision)
        return Verdict.allow(ask.permission)
