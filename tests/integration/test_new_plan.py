"""`kilo-loop new-plan`: scaffolding a plan the registry then discovers."""

from __future__ import annotations

import shutil
import subprocess
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from kilo_loop.cli import main
from kilo_loop.goal.parse import load_goal
from kilo_loop.goal.registry import discover_plans
from kilo_loop.goal.scaffold import DEFAULT_TEMPLATE, build_plan, render_plan, slugify

EPOCH = 1_700_000_000_000
DATE = datetime.fromtimestamp(EPOCH / 1000).date().isoformat()


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["new-plan", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_writes_a_discoverable_plan(tmp_path: Path) -> None:
    code, out, err = run("My plan title", "--epoch", str(EPOCH), "--project", str(tmp_path))
    assert code == 0, err
    rel = f".kilo/plans/{EPOCH}-my-plan-title.md"
    assert f"Created {rel}" in out
    assert err == ""
    goal = load_goal(tmp_path / rel)
    assert goal.title == "My plan title"
    assert len(goal.stages) == 3 and not any(stage.done for stage in goal.stages)
    content = (tmp_path / rel).read_text(encoding="utf-8")
    assert DATE in content and "my-plan-title" in content and "{{" not in content
    [plan] = discover_plans(tmp_path)
    assert (plan.file, plan.title, plan.total, plan.type) == (rel, "My plan title", 3, "markdown")


def test_project_template_and_placeholders(tmp_path: Path) -> None:
    template = tmp_path / ".kilo/templates/plan.md"
    template.parent.mkdir(parents=True)
    template.write_text("# {{ title }}\nDate: {{date}}\nSlug: {{slug}} {{other}}\n- [ ] Do {{title}}\n",
                        encoding="utf-8")
    code, _, err = run("Ship it", "--epoch", str(EPOCH), "--slug", "Custom Slug!", "--project", str(tmp_path))
    assert code == 0, err
    path = tmp_path / f".kilo/plans/{EPOCH}-custom-slug.md"
    assert path.read_text(encoding="utf-8") == (
        f"# Ship it\nDate: {DATE}\nSlug: custom-slug {{{{other}}}}\n- [ ] Do Ship it\n"
    )


def test_print_writes_nothing(tmp_path: Path) -> None:
    code, out, err = run("Preview me", "--print", "--epoch", str(EPOCH), "--project", str(tmp_path))
    assert code == 0
    assert out.startswith("# Preview me\n")
    assert f"would write .kilo/plans/{EPOCH}-preview-me.md" in err
    assert not (tmp_path / ".kilo").exists()


def test_existing_file_needs_force(tmp_path: Path) -> None:
    args = ("Twice", "--epoch", str(EPOCH), "--project", str(tmp_path))
    assert run(*args)[0] == 0
    path = tmp_path / f".kilo/plans/{EPOCH}-twice.md"
    path.write_text("# edited\n- [x] keep me\n", encoding="utf-8")
    code, _, err = run(*args)
    assert code == 1
    assert "already exists" in err and "--force" in err
    assert path.read_text(encoding="utf-8") == "# edited\n- [x] keep me\n"
    assert run(*args, "--force")[0] == 0
    assert path.read_text(encoding="utf-8").startswith("# Twice\n")


def test_custom_dir_inside_plans_is_discovered(tmp_path: Path) -> None:
    code, out, err = run("Sub plan", "--epoch", "5", "--dir", "plans/team", "--project", str(tmp_path))
    assert code == 0 and err == ""
    assert "Created plans/team/5-sub-plan.md" in out
    assert [plan.file for plan in discover_plans(tmp_path)] == ["plans/team/5-sub-plan.md"]


def test_dir_outside_plan_locations_warns(tmp_path: Path) -> None:
    code, _, err = run("Loose", "--epoch", "5", "--dir", "docs", "--project", str(tmp_path))
    assert code == 0
    assert "will not appear" in err
    assert (tmp_path / "docs/5-loose.md").is_file()


def test_template_without_checkboxes_warns(tmp_path: Path) -> None:
    template = tmp_path / ".kilo/templates/plan.md"
    template.parent.mkdir(parents=True)
    template.write_text("# {{title}}\n\nJust prose.\n", encoding="utf-8")
    code, _, err = run("No stages", "--epoch", "5", "--project", str(tmp_path))
    assert code == 0 and "will not appear" in err
    assert discover_plans(tmp_path) == []


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("   ",), "title is empty"),
        (("T", "--dir", "/abs"), "must be relative"),
        (("T", "--dir", "../up"), "may not leave the project"),
        (("T", "--epoch", "-1"), "must not be negative"),
        (("T", "--epoch", str(10**20)), "not a usable time"),
    ],
)
def test_bad_arguments_are_usage_errors_exit_2(tmp_path: Path, args: tuple[str, ...], fragment: str) -> None:
    code, _, err = run(*args, "--project", str(tmp_path))
    assert code == 2
    assert fragment in err
    assert list(tmp_path.iterdir()) == []


def test_non_utf8_template_is_an_error(tmp_path: Path) -> None:
    template = tmp_path / ".kilo/templates/plan.md"
    template.parent.mkdir(parents=True)
    template.write_bytes(b"# \xff\n- [ ] a\n")
    code, _, err = run("T", "--project", str(tmp_path))
    assert code == 1 and "not UTF-8" in err


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_default_project_is_the_git_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    sub = tmp_path / "src/deep"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    assert run("From below", "--epoch", "7")[0] == 0
    assert (tmp_path / ".kilo/plans/7-from-below.md").is_file()


def test_default_project_outside_git_is_the_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    monkeypatch.chdir(tmp_path)
    assert run("Here", "--epoch", "7")[0] == 0
    assert (tmp_path / ".kilo/plans/7-here.md").is_file()


# ---------------------------------------------------------------- pure pieces


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        ("My plan title", "my-plan-title"),
        ("  Ünïcödé — Plän ✓ ", "unicode-plan"),
        ("!!!", "plan"),
        ("日本語", "plan"),
        ("a" * 59 + " bbb", "a" * 59),
        ("x" * 100, "x" * 60),
        ("Fix: the API/v2 (urgent)", "fix-the-api-v2-urgent"),
    ],
)
def test_slugify(text: str, slug: str) -> None:
    assert slugify(text) == slug


def test_render_plan_substitutes_once() -> None:
    assert render_plan("{{title}}|{{ slug }}|{{date}}|{{nope}}", title="{{slug}}", date="d", slug="s") == (
        "{{slug}}|s|d|{{nope}}"
    )


def test_default_template_has_the_documented_shape() -> None:
    assert DEFAULT_TEMPLATE.startswith("# {{title}}\n")
    assert DEFAULT_TEMPLATE.count("\n- [ ] ") == 3


def test_build_plan_collapses_title_whitespace(tmp_path: Path) -> None:
    plan = build_plan(tmp_path, "  Two\n  lines ", epoch_ms=1)
    assert plan.relative == ".kilo/plans/1-two-lines.md"
    assert plan.content.startswith("# Two lines\n")
    assert plan.discoverable
