"""`protect`, `size` and `auto-fix` on goals and stages (markdown directives, JSON fields)."""

from __future__ import annotations

import json

import pytest

from kilo_loop.goal.model import GoalError
from kilo_loop.goal.parse import parse_json_goal, parse_markdown_goal


def test_markdown_directives_and_lines() -> None:
    goal = parse_markdown_goal(
        "# Auth\nProtect: .github/**, verify.sh\n\n"
        "- [ ] Rate limit :: protect: tests/**, fixtures/ :: size: Large :: auto-fix: 2\n"
        "- [ ] Docs\n  Auto-fix: 0\n"
    )
    first, second = goal.stages
    assert goal.protect == [".github/**", "verify.sh"]
    assert (first.protect, first.size, first.auto_fix) == (["tests/**", "fixtures/"], "large", 2)
    assert (second.protect, second.size, second.auto_fix) == ([], None, 0)
    assert goal.protected_for(first) == [".github/**", "verify.sh", "tests/**", "fixtures/"]


@pytest.mark.parametrize(("item", "problem"), [
    ("- [ ] A :: auto-fix: 4", "0 to 3"),
    ("- [ ] A :: auto-fix: two", "0 to 3"),
    ("- [ ] A :: size: huge", "size must be one of"),
    ("- [ ] A :: protect: ../outside", "leaves the project"),
])
def test_bad_markdown_review_fields_name_the_line(item: str, problem: str) -> None:
    with pytest.raises(GoalError, match=problem) as caught:
        parse_markdown_goal(f"# G\n\n{item}\n")
    assert caught.value.line == 3


def test_json_fields() -> None:
    goal = parse_json_goal(json.dumps({
        "title": "G", "protect": ["tests/**"],
        "stages": [{"title": "A", "protect": "ci.yml, *.snap", "size": "small", "autoFix": 3}, {"title": "B"}],
    }))
    first, second = goal.stages
    assert goal.protect == ["tests/**"]
    assert (first.protect, first.size, first.auto_fix) == (["ci.yml", "*.snap"], "small", 3)
    assert second.protect == [] and second.auto_fix is None


@pytest.mark.parametrize(("stage", "problem"), [
    ({"title": "A", "protect": [1]}, "list of glob strings"),
    ({"title": "A", "autoFix": True}, "0 to 3"),
    ({"title": "A", "size": 2}, "size must be one of"),
])
def test_bad_json_review_fields(stage: dict[str, object], problem: str) -> None:
    with pytest.raises(GoalError, match=problem):
        parse_json_goal(json.dumps({"title": "G", "stages": [stage]}))
