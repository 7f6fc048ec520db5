"""A goal from an issue: `--goal github:OWNER/REPO#N` (also `gitlab:HOST/GROUP/REPO#N`,
`gitea:HOST/OWNER/REPO#N`, and `github:HOST/OWNER/REPO#N` for GitHub Enterprise).

The issue's task list (`- [ ] …`) becomes the stages — or, without one, the whole issue is one stage —
and a ```` ```verify ```` block or a `verify: <command>` line gives the verify command. The issue is turned
into a markdown plan saved under `.kilocode-loop/goals/`, so the run reads, ticks and resumes it like any
plan, with no network after the first fetch. Pure, apart from `fetch_issue_goal`."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from kilo_loop.forge.api import Forge, ForgeError, Issue
from kilo_loop.forge.remote import TOKEN_VARIABLES, ForgeKind, ForgeTarget, default_api
from kilo_loop.goal.model import GoalError

MAX_BODY = 256 * 1024  # an issue body past this is not a plan
_REF = re.compile(r"^(?P<kind>github|gitlab|gitea):(?P<path>[\w.-]+(?:/[\w.-]+)+)#(?P<number>\d+)$")
_TASK = re.compile(r"^\s*[-*]\s+\[(?P<mark>[ xX])\]\s+(?P<text>.+?)\s*$")
_VERIFY_LINE = re.compile(r"^\s*verify:\s*`?(?P<command>[^`\n]+?)`?\s*$", re.IGNORECASE | re.MULTILINE)
_VERIFY_BLOCK = re.compile(r"^```verify\s*\n(?P<command>.*?)\n```", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class IssueRef:
    kind: ForgeKind
    host: str
    repo: str
    number: int

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.repo}#{self.number}"

    def file_name(self) -> str:
        return f"issue-{self.kind}-{re.sub(r'[^A-Za-z0-9]+', '-', self.repo)}-{self.number}.md"


def parse_issue_ref(text: str) -> IssueRef | None:
    """The issue a `--goal` names, or None when it names a file."""
    match = _REF.match(text.strip())
    if not match:
        return None
    kind, parts = cast(ForgeKind, match["kind"]), match["path"].split("/")
    if kind == "github" and len(parts) == 2:
        host, repo = "github.com", "/".join(parts)
    elif len(parts) >= 3 and "." in parts[0]:
        host, repo = parts[0], "/".join(parts[1:])
    else:
        raise GoalError(f"{text}: name the host of a {kind} issue, e.g. {kind}:git.example.com/OWNER/REPO#N")
    return IssueRef(kind, host, repo, int(match["number"]))


def issue_plan(ref: IssueRef, issue: Issue) -> str:
    """The issue as a markdown plan: its tasks as stages (or the issue as one), with the verify it names."""
    if len(issue.body.encode()) > MAX_BODY:
        raise GoalError(f"{ref.label}: the issue body is over {MAX_BODY // 1024} KB: too large to be a plan")
    verify = _verify_of(issue.body)
    suffix = f" :: verify: {verify}" if verify else ""
    title = " ".join(issue.title.split()) or ref.label
    tasks = _tasks(issue.body)
    stages = [line for task, details in tasks for line in (f"- {task}{suffix}", *details)]
    if not tasks:  # the whole issue is the one stage; its text is the stage's details
        stages = [f"- [ ] {title}{suffix}", *(f"  {line}".rstrip() for line in issue.body.strip().splitlines())]
    return f"# {title}\n\nFrom {ref.label}: {issue.url}\n\n" + "\n".join(stages) + "\n"


def _tasks(body: str) -> list[tuple[str, list[str]]]:
    """Each task of the task list (`[ ] text`, `[x] text` when ticked: done already) with the lines indented
    under it (its details, kept indented)."""
    tasks: list[tuple[str, list[str]]] = []
    indent = 0
    for line in body.splitlines():
        task = _TASK.match(line)
        if task:
            tasks.append((f"[{'x' if task['mark'] != ' ' else ' '}] {task['text']}", []))
            indent = len(line) - len(line.lstrip())
        elif tasks and line.strip() and len(line) - len(line.lstrip()) > indent:
            tasks[-1][1].append("  " + line.strip())
        elif tasks and line.strip():
            indent = 10**6  # text after the list: no longer any task's details
    return tasks


def _verify_of(body: str) -> str | None:
    block = _VERIFY_BLOCK.search(body)
    if block:
        lines = [line.strip() for line in block["command"].splitlines() if line.strip()]
        return " && ".join(lines) if lines else None
    line = _VERIFY_LINE.search(body)
    return line["command"].strip() if line else None


def fetch_issue_goal(ref: IssueRef, goals_dir: Path, env: Mapping[str, str] | None = None,
                     forge: Forge | None = None) -> Path:
    """The plan file for `ref`: the one saved by an earlier run if there is one (no network), else the
    issue fetched now and saved. GoalError for a closed issue or one that cannot be read."""
    path = goals_dir / ref.file_name()
    if path.is_file():
        return path
    client = forge or issue_forge(ref, env)
    try:
        issue = client.issue(ref.number)
    except ForgeError as exc:
        raise GoalError(f"{ref.label}: cannot read the issue: {exc}") from None
    if issue.state != "open":
        raise GoalError(f"{ref.label} is closed: reopen it, or write the plan as a file")
    goals_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(issue_plan(ref, issue), encoding="utf-8")
    return path


def issue_forge(ref: IssueRef, env: Mapping[str, str] | None = None) -> Forge:
    """The API of the issue's forge, with the token its variable holds (none: a public issue)."""
    environ = os.environ if env is None else env
    target = ForgeTarget(ref.kind, default_api(ref.kind, ref.host, environ), ref.repo)
    return Forge(target, environ.get(TOKEN_VARIABLES[ref.kind], ""))
