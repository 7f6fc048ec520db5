"""A goal from an issue: the reference, the plan made of its task list, and the bad issues."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from kilo_loop.forge.api import Forge, Issue
from kilo_loop.forge.remote import ForgeTarget
from kilo_loop.goal.issue import IssueRef, fetch_issue_goal, issue_plan, parse_issue_ref
from kilo_loop.goal.model import GoalError
from kilo_loop.goal.parse import parse_markdown_goal

REF = IssueRef("github", "github.com", "acme/app", 12)


def test_issue_references() -> None:
    assert parse_issue_ref("github:acme/app#12") == REF
    assert parse_issue_ref("github:ghe.example.com/acme/app#3") == IssueRef("github", "ghe.example.com", "acme/app", 3)
    assert parse_issue_ref("gitlab:gitlab.com/group/sub/app#7") == IssueRef("gitlab", "gitlab.com", "group/sub/app", 7)
    assert parse_issue_ref("gitea:codeberg.org/acme/app#1") == IssueRef("gitea", "codeberg.org", "acme/app", 1)
    assert parse_issue_ref("plans/work.md") is None and parse_issue_ref("github:acme/app") is None
    with pytest.raises(GoalError, match="name the host"):
        parse_issue_ref("gitlab:group/app#7")


def plan_of(body: str, title: str = "Ship it") -> str:
    return issue_plan(REF, Issue(12, title, body, "open", "https://github.com/acme/app/issues/12"))


def test_the_task_list_becomes_the_stages_with_their_details_and_the_verify_block() -> None:
    body = ("Context first.\n\n- [ ] Parse the input\n  keep the old API\n- [x] Write the docs\n\n"
            "Some closing words.\n\n```verify\npytest -q\nruff check .\n```\n")
    goal = parse_markdown_goal(plan_of(body), None)
    assert [stage.title for stage in goal.stages] == ["Parse the input", "Write the docs"]
    assert goal.stages[0].details.strip() == "keep the old API" and goal.stages[1].details == ""
    assert {stage.verify for stage in goal.stages} == {"pytest -q && ruff check ."}
    assert [stage.done for stage in goal.stages] == [False, True]  # a ticked task is done already


def test_an_issue_without_a_task_list_is_one_stage_with_the_verify_line() -> None:
    goal = parse_markdown_goal(plan_of("Fix the crash on empty input.\n\nverify: `pytest -q tests/x`\n"), None)
    assert [stage.title for stage in goal.stages] == ["Ship it"]
    assert goal.stages[0].verify == "pytest -q tests/x" and "crash on empty input" in goal.stages[0].details


def test_a_huge_issue_is_refused() -> None:
    with pytest.raises(GoalError, match="over 256 KB"):
        plan_of("x" * (1024 * 1024))


def forge_answering(status: int, issue: dict[str, object]) -> Forge:
    transport = httpx.MockTransport(lambda _request: httpx.Response(status, json=issue))
    return Forge(ForgeTarget("github", "https://api.example", "acme/app"), "", httpx.Client(transport=transport))


def test_a_closed_issue_or_one_that_cannot_be_read_says_so(tmp_path: Path) -> None:
    closed = forge_answering(200, {"number": 12, "title": "Old", "body": "", "state": "closed"})
    with pytest.raises(GoalError, match="is closed: reopen it"):
        fetch_issue_goal(REF, tmp_path, forge=closed)
    with pytest.raises(GoalError, match=r"cannot read the issue: .*not found"):
        fetch_issue_goal(REF, tmp_path, forge=forge_answering(404, {"message": "Not Found"}))
    assert list(tmp_path.iterdir()) == []  # nothing saved


def test_the_saved_plan_is_read_again_without_the_network(tmp_path: Path) -> None:
    fine = forge_answering(200, {"number": 12, "title": "New", "body": "- [ ] One", "state": "open"})
    saved = fetch_issue_goal(REF, tmp_path, forge=fine)
    assert saved.name == "issue-github-acme-app-12.md"
    assert fetch_issue_goal(REF, tmp_path, forge=forge_answering(500, {})) == saved
