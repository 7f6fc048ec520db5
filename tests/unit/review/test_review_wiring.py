"""Reviewer sessions are read-only; review settings; the pre-flight loop-policy question."""

from __future__ import annotations

from pathlib import Path

import pytest

from kilo_loop.goal.parse import parse_markdown_goal
from kilo_loop.guard.runtime import Guard
from kilo_loop.review.options import review_options, review_runtimes
from kilo_loop.review.preflight import ask_large_budget, needs_large_question, review_row
from kilo_loop.review.readonly import ReadOnlyGuard
from kilo_loop.review_roles import ReviewConfigError, role_specs
from kilo_loop.settings import ConfigError, load_settings

PROJECT = Path("/work/project")


def _denied(tool: str, tool_input: dict[str, object], base: Guard | None = None) -> bool:
    decision = ReadOnlyGuard(base, PROJECT).check_tool_use(tool, tool_input, str(PROJECT))
    return bool(decision.denied)


@pytest.mark.parametrize(("tool", "tool_input"), [
    ("write", {"filePath": "/work/project/.kilocode-loop/review.json", "content": "{}"}),
    ("write", {"filePath": ".kilocode-loop/review-code.json", "content": "{}"}),
    ("read", {"filePath": "/work/project/src/a.py"}),
    ("bash", {"command": "git diff --stat && git log -3 --oneline"}),
    ("bash", {"command": "grep -rn TODO src 2>/dev/null | head"}),
    ("bash", {"command": "cat > .kilocode-loop/review.json"}),
    ("bash", {"command": "pytest -q"}),
])
def test_reading_and_writing_the_verdict_is_allowed(tool: str, tool_input: dict[str, object]) -> None:
    assert not _denied(tool, tool_input)


@pytest.mark.parametrize(("tool", "tool_input"), [
    ("write", {"filePath": "/work/project/src/a.py", "content": "x"}),
    ("edit", {"filePath": "src/a.py", "oldString": "a", "newString": "b"}),
    ("write", {"filePath": "/work/project/.kilocode-loop/../src/a.py", "content": "x"}),
    ("apply_patch", {"patchText": "*** Begin Patch\n*** Update File: src/a.py\n@@\n-a\n+b\n*** End Patch"}),
    ("edit", {}),
    ("bash", {"command": "echo x > src/a.py"}),
    ("bash", {"command": "cd src && echo x >> ../README.md"}),
    ("bash", {"command": "sed -i s/a/b/ src/a.py"}),
    ("bash", {"command": "git checkout -- src"}),
    ("bash", {"command": "git stash"}),
    ("bash", {"command": "touch new.txt"}),
    ("bash", {"command": "npm install left-pad"}),
    ("bash", {"command": "ls | tee listing.txt"}),
])
def test_writes_outside_the_loop_folder_are_denied(tool: str, tool_input: dict[str, object]) -> None:
    assert _denied(tool, tool_input)


def test_the_run_guard_still_judges_what_read_only_allows() -> None:
    assert _denied("bash", {"command": "git push --force origin main"}, Guard())
    assert not _denied("bash", {"command": "git status"}, Guard())


def test_review_settings_from_flags_config_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KILO_LOOP_REVIEW", raising=False)
    assert review_options(load_settings({}, None)) is None
    seed = review_options(load_settings({"review": True, "review_agent": "critic"}, None))
    assert seed is not None and [(s.role, s.agent) for s in seed.roles] == [("reviewer", "critic")]
    wave = review_options(load_settings({"review_wave": True, "review_retries": 2, "review_gate": "off"}, None))
    assert wave is not None and wave.role_names == ["code", "test", "security"]
    assert (wave.retries, wave.gate) == (2, "off")
    config = tmp_path / ".kilocode-loop" / "config.json"
    config.parent.mkdir()
    config.write_text('{"review": {"roles": ["security", {"role": "code", "model": "local/big"}]}}')
    custom = review_options(load_settings({"model": "local/small"}, tmp_path))
    assert custom is not None and [(s.role, s.model) for s in custom.roles] == [
        ("security", "local/small"), ("code", "local/big")]
    monkeypatch.setenv("KILO_LOOP_REVIEW", "1")
    assert review_options(load_settings({}, None)) is not None


@pytest.mark.parametrize(("config", "problem"), [
    ({"roles": ["design"]}, "use one of code, test, security"),
    ({"roles": []}, "non-empty list"),
    ({"roles": ["code", "code"]}, "twice"),
    ({"roles": [{"role": "code", "colour": "red"}]}, "unknown key 'colour'"),
    ({"roles": [{"role": "code", "model": ""}]}, "non-empty string"),
    ({"reviewers": []}, "unknown key 'reviewers'"),
    ({"roles": [{"role": "code", "backend": "chatgpt"}]}, "neither a runtime"),
])
def test_bad_review_config_is_refused_with_the_reason(config: dict[str, object], problem: str) -> None:
    with pytest.raises(ReviewConfigError, match=problem):
        role_specs(config)


def test_a_role_backend_may_be_a_runtime_name_or_a_module_reference() -> None:
    specs = role_specs({"roles": [{"role": "code", "backend": "claude"}, {"role": "test", "backend": "pkg.mod:make"},
                                  "security"]})
    assert [(s.backend, s.runtime) for s in specs] == [("claude", "claude"), ("pkg.mod:make", None), (None, None)]
    settings = load_settings({"review": {"roles": [{"role": "code", "backend": "codex"},
                                                   {"role": "security", "backend": "codex"}, "test"]}}, None)
    assert review_runtimes(settings) == ("codex",)
    assert review_runtimes(load_settings({"review_wave": True}, None)) == ()


def test_bad_review_config_in_config_json_names_the_key(tmp_path: Path) -> None:
    config = tmp_path / ".kilocode-loop" / "config.json"
    config.parent.mkdir()
    config.write_text('{"review": {"roles": ["design"]}}')
    with pytest.raises(ConfigError, match="use one of code, test, security"):
        load_settings({}, tmp_path)
    with pytest.raises(ConfigError, match="--review-retries: must be at most 3"):
        load_settings({"review_retries": 4}, None)


LARGE = parse_markdown_goal("# G\n\n- [ ] Rework :: size: large\n- [ ] Tidy :: size: small\n")


def test_the_large_rework_question_is_asked_only_when_it_decides_something() -> None:
    on = load_settings({"review": True}, None)
    assert needs_large_question(on, LARGE)
    assert not needs_large_question(load_settings({}, None), LARGE)
    assert not needs_large_question(load_settings({"review": True, "review_retries": 1}, None), LARGE)
    small = parse_markdown_goal("# G\n\n- [ ] Tidy\n- [ ] Rework :: size: large :: auto-fix: 2\n")
    assert not needs_large_question(on, small)
    row = review_row(on, LARGE)
    assert row is not None and "stage-1 asks (large)" in row[1] and "stage-2 1 (preset" in row[1]


@pytest.mark.parametrize(("replies", "expected"), [
    ([""], 0), (["auto 2"], 2), (["what", "auto 3"], 3), (["x", "y", "z"], 0), (["manual"], 0),
])
def test_loop_policy_menu(replies: list[str], expected: int) -> None:
    said: list[str] = []
    answers = iter(replies)
    assert ask_large_budget(lambda _prompt: next(answers), said.append) == expected
    assert "Manual (recommended)" in said[0] and "Auto — 3 retries" in said[0]
