"""Plan discovery, last-run lookup, safe name resolution, trash and the --list-goals text."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from kilo_loop.goal import registry
from kilo_loop.goal.listing import format_plan_list
from kilo_loop.goal.model import GoalError
from kilo_loop.goal.registry import (
    LastRun,
    PlanInfo,
    discover_plans,
    resolve_plan_file,
    trash_plan,
)
from kilo_loop.goal.sync import set_all_done

CHECKLIST = "# {title}\n\n- [x] One\n- [ ] Two :: verify: true\n- [ ] Three\n"


def put(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def save_run(project: Path, run_id: str, state: object, mtime: int) -> None:
    path = put(project, f".kilocode-loop/runs/{run_id}/state.json", json.dumps(state))
    os.utime(path, (mtime, mtime))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    put(root, ".kilocode-loop/goals/alpha.json",
        json.dumps({"title": "Alpha", "verify": "make", "stages": [{"title": "A", "done": True}, {"title": "B"}]}))
    put(root, ".kilocode-loop/goals/nested/beta.md", CHECKLIST.format(title="Beta"))
    put(root, ".kilocode-loop/goals/broken.json", '{"title": "Broken",\n "stages": [}\n')
    put(root, ".kilocode-loop/goals/notes.txt", "- [ ] not a plan type\n")
    put(root, ".kilocode-loop/goal.json", json.dumps({"title": "Legacy", "stages": [{"title": "L"}]}))
    put(root, ".kilocode-loop/goal.md", "# Legacy md\n- [x] Done already\n")
    put(root, "plans/gamma.md", CHECKLIST.format(title="Gamma"))
    put(root, "plans/prose.md", "# Just notes\n\n- a bullet\n")
    put(root, "plans/deep/er/delta.markdown", "- [ ] Untitled stage\n")
    put(root, "plans/.hidden/secret.md", CHECKLIST.format(title="Hidden"))
    put(root, "plans/.draft.md", CHECKLIST.format(title="Hidden file"))
    put(root, "plans/data.json", json.dumps({"stages": [{"title": "json outside goals"}]}))
    put(root, "plans/huge.md", "# Huge\n- [ ] A\n" + "x" * (registry.MAX_PLAN_BYTES + 1))
    put(root, "plans/latin1.md", "# Caf\xe9\n- [ ] A\n".encode("latin-1"))
    put(root, "plans/bad-directive.md", "# Bad\n- [ ] A :: colour: red\n")
    put(root, ".kilo/plans/1700000000000-epsilon.md", CHECKLIST.format(title="Epsilon"))
    put(root, "docs/elsewhere.md", CHECKLIST.format(title="Not a plan location"))
    outside = put(tmp_path, "outside/secret.md", CHECKLIST.format(title="Outside"))
    (root / "plans/escape.md").symlink_to(outside)
    (root / "plans/linked-dir").symlink_to(outside.parent, target_is_directory=True)
    (root / "plans/alias.md").symlink_to(root / "plans/gamma.md")
    return root


def by_file(plans: list[PlanInfo]) -> dict[str, PlanInfo]:
    return {plan.file: plan for plan in plans}


def test_discovers_every_plan_location_and_nothing_else(project: Path) -> None:
    plans = discover_plans(project)
    assert [plan.file for plan in plans] == [
        ".kilocode-loop/goal.json",
        ".kilocode-loop/goal.md",
        ".kilocode-loop/goals/alpha.json",
        ".kilocode-loop/goals/broken.json",
        ".kilocode-loop/goals/nested/beta.md",
        "plans/alias.md",
        "plans/bad-directive.md",
        "plans/deep/er/delta.markdown",
        ".kilo/plans/1700000000000-epsilon.md",
    ]


def test_plan_state_fields(project: Path) -> None:
    plans = by_file(discover_plans(project))
    alpha = plans[".kilocode-loop/goals/alpha.json"]
    assert (alpha.title, alpha.type, alpha.done, alpha.total, alpha.percent, alpha.verify) == (
        "Alpha", "json", 1, 2, 50, "make",
    )
    beta = plans[".kilocode-loop/goals/nested/beta.md"]
    assert (beta.type, beta.done, beta.total, beta.percent) == ("markdown", 1, 3, 33)
    assert [(s.index, s.id, s.title, s.done, s.verify) for s in beta.stages] == [
        (0, "stage-1", "One", True, None), (1, "stage-2", "Two", False, "true"), (2, "stage-3", "Three", False, None),
    ]
    assert plans["plans/deep/er/delta.markdown"].title == "delta"
    assert plans[".kilocode-loop/goal.md"].percent == 100


def test_broken_plans_are_listed_with_their_error(project: Path) -> None:
    plans = by_file(discover_plans(project))
    broken = plans[".kilocode-loop/goals/broken.json"]
    assert broken.title == "broken" and broken.total == 0
    assert broken.error is not None and broken.error.startswith("line 2: invalid JSON")
    assert "unknown directive 'colour'" in (plans["plans/bad-directive.md"].error or "")


def test_symlink_alias_is_listed_once(project: Path) -> None:
    files = [plan.file for plan in discover_plans(project)]
    assert "plans/gamma.md" not in files and "plans/alias.md" in files


def test_wire_format_is_camel_case(project: Path) -> None:
    save_run(project, "r1", {"runId": "r1", "status": "done", "iteration": 4, "totals": {"cost": 0.1234},
                             "finishedAt": "2024-01-01T00:00:00Z", "goalSource": "plans/alias.md"}, 1000)
    wire = by_file(discover_plans(project))["plans/alias.md"].wire()
    assert wire["lastRun"] == {"runId": "r1", "status": "done", "iterations": 4, "cost": 0.1234,
                               "finishedAt": "2024-01-01T00:00:00Z"}
    assert set(wire) == {"file", "title", "type", "done", "total", "percent", "stages", "verify", "error", "lastRun"}
    assert set(wire["stages"][0]) == {"index", "id", "title", "done", "verify"}


def test_last_run_is_the_newest_matching_state(project: Path) -> None:
    beta = project / ".kilocode-loop/goals/nested/beta.md"
    save_run(project, "old", {"runId": "old", "status": "aborted", "iteration": 1, "goalSource": str(beta)}, 1000)
    save_run(project, "new", {"runId": "new", "status": "stalled", "iteration": 7, "totals": {"cost": 2},
                              "goalSource": ".kilocode-loop/goals/nested/../nested/beta.md"}, 3000)
    save_run(project, "other", {"runId": "other", "status": "done", "goalSource": "plans/nope.md"}, 4000)
    put(project, ".kilocode-loop/runs/garbage/state.json", "{not json")
    save_run(project, "weird", {"runId": 5, "status": "done", "goalSource": str(beta)}, 5000)
    save_run(project, "list", ["not", "an", "object"], 6000)
    plans = by_file(discover_plans(project))
    assert plans[".kilocode-loop/goals/nested/beta.md"].last_run == LastRun(
        run_id="new", status="stalled", iterations=7, cost=2.0, finished_at=None,
    )
    assert plans[".kilocode-loop/goals/alpha.json"].last_run is None


def test_no_project_dirs_means_no_plans(tmp_path: Path) -> None:
    assert discover_plans(tmp_path) == []


def test_symlinked_plan_root_outside_the_project_is_ignored(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    put(outside, "plan.md", CHECKLIST.format(title="X"))
    root = tmp_path / "repo"
    (root / ".kilo").mkdir(parents=True)
    (root / ".kilo/plans").symlink_to(outside, target_is_directory=True)
    assert discover_plans(root) == []
    with pytest.raises(GoalError, match="outside the project"):
        resolve_plan_file(root, ".kilo/plans/plan.md")


def test_unreadable_plan_is_skipped(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    unreadable = project / "plans/bad-directive.md"
    real_read = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self == unreadable:
            raise PermissionError(13, "Permission denied")
        return real_read(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    files = by_file(discover_plans(project))
    assert "plans/bad-directive.md" not in files and "plans/alias.md" in files


def test_discovery_after_marking_a_plan_done(project: Path) -> None:
    set_all_done(resolve_plan_file(project, "plans/alias.md"), True)
    plan = by_file(discover_plans(project))["plans/alias.md"]
    assert (plan.done, plan.total, plan.percent) == (3, 3, 100)


# ---------------------------------------------------------------- resolve_plan_file


@pytest.mark.parametrize(
    "file",
    [".kilocode-loop/goals/alpha.json", "./plans/alias.md", ".kilocode-loop/goal.md", "plans/prose.md"],
)
def test_resolve_accepts_plan_locations(project: Path, file: str) -> None:
    path = resolve_plan_file(project, file)
    assert path.is_file() and path.is_relative_to(project.resolve())


@pytest.mark.parametrize(
    ("file", "fragment"),
    [
        ("", "no plan file given"),
        ("/etc/passwd", "not absolute"),
        ("C:/x/plans/a.md", "not absolute"),
        ("plans/../plans/alias.md", "'..'"),
        ("../repo/plans/alias.md", "'..'"),
        ("plans/a\0.md", "NUL"),
        ("plans\\alias.md", "use '/'"),
        ("docs/elsewhere.md", "not a plan location"),
        ("plans/data.json", "not a plan location"),
        (".kilocode-loop/goals/notes.txt", "not a plan location"),
        (".kilocode-loop/config.json", "not a plan location"),
        ("plans/.hidden/secret.md", "not a plan location"),
        ("plans", "not a plan location"),
        ("plans/escape.md", "outside the project"),
        ("plans/linked-dir/secret.md", "outside the project"),
        ("plans/missing.md", "no plan file"),
    ],
)
def test_resolve_rejects(project: Path, file: str, fragment: str) -> None:
    with pytest.raises(GoalError) as info:
        resolve_plan_file(project, file)
    assert fragment in info.value.message


# ---------------------------------------------------------------- trash


def test_trash_moves_the_plan_and_ignores_the_trash(project: Path) -> None:
    when = datetime(2024, 5, 6, 7, 8, 9)
    target = trash_plan(project, "plans/deep/er/delta.markdown", now=when)
    assert target == project.resolve() / ".kilocode-loop/trash/20240506-070809-delta.markdown"
    assert target.read_text(encoding="utf-8") == "- [ ] Untitled stage\n"
    assert not (project / "plans/deep/er/delta.markdown").exists()
    assert (project / ".kilocode-loop/trash/.gitignore").read_text(encoding="utf-8") == "*\n"
    assert "plans/deep/er/delta.markdown" not in by_file(discover_plans(project))
    put(project, "plans/deep/er/delta.markdown", "- [ ] again\n")
    second = trash_plan(project, "plans/deep/er/delta.markdown", now=when)
    assert second.name == "20240506-070809-delta-1.markdown"


def test_trash_refuses_non_plans(project: Path) -> None:
    with pytest.raises(GoalError, match="not a plan location"):
        trash_plan(project, "docs/elsewhere.md")
    with pytest.raises(GoalError, match="outside the project"):
        trash_plan(project, "plans/escape.md")
    assert (project / "docs/elsewhere.md").exists()
    assert not (project / ".kilocode-loop/trash").exists()


# ---------------------------------------------------------------- --list-goals text


def test_format_plan_list_line() -> None:
    plan = PlanInfo(file="plans/foo.md", title="Title", type="markdown", done=3, total=5, percent=60,
                    last_run=LastRun(run_id="r", status="done", iterations=4, cost=0.1234))
    assert format_plan_list([plan]) == "[ 3/5  60%] markdown  plans/foo.md — Title  (last: done, 4 it, $0.12)"


def test_format_plan_list_aligns_and_shows_errors() -> None:
    plans = [
        PlanInfo(file="a.json", title="A", type="json", done=10, total=12, percent=83),
        PlanInfo(file="b.md", title="B", type="markdown", done=0, total=3, percent=0),
        PlanInfo(file="c.json", title="c", type="json", error="line 2: invalid JSON"),
    ]
    lines = format_plan_list(plans).splitlines()
    assert lines[0] == "[10/12  83%] json      a.json — A"
    assert lines[1] == "[ 0/3    0%] markdown  b.md — B"
    assert lines[2] == "[  error   ] json      c.json — c — line 2: invalid JSON"
    assert len({line.index("]") for line in lines}) == 1


def test_format_plan_list_empty(tmp_path: Path) -> None:
    text = format_plan_list([], tmp_path)
    assert text.startswith(f"No plans found under {tmp_path}.")
    for location in registry.SEARCHED_LOCATIONS:
        assert location in text
    assert "kilo-loop new-plan" in text


def test_format_plan_list_of_a_real_project(project: Path) -> None:
    text = format_plan_list(discover_plans(project), project)
    assert "[ 1/2  50%] json      .kilocode-loop/goals/alpha.json — Alpha" in text
    assert len(text.splitlines()) == 9
