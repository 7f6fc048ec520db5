from __future__ import annotations

from pathlib import Path

from kilo_loop.goal.model import Goal, Stage
from kilo_loop.loop.progress import (
    completion_percent,
    first_open_stage_title,
    read_progress,
    scrape_questions,
)
from kilo_loop.loop.prompt import HANDOFF_MAX_LINES, PromptInput, build_prompt, clip_handoff
from kilo_loop.run.state import Answer

GOAL = Goal(title="Ship it", stages=[Stage(id="s1", title="One", done=True),
                                     Stage(id="s2", title="Two", verify="pytest -q", acceptance="green"),
                                     Stage(id="s3", title="Three")])


def prompt(**overrides: object) -> str:
    data = PromptInput(goal=GOAL, stage=GOAL.stages[1], iteration=2, max_iterations=5, completed=set())
    for key, value in overrides.items():
        setattr(data, key, value)
    return build_prompt(data)


def test_prompt_carries_goal_stage_and_contract() -> None:
    text = prompt()
    assert "# Goal: Ship it" in text
    assert "1. [x] s1: One" in text and "2. [ ] s2: Two  ← current" in text
    assert "Current stage: s2 — Two" in text and "`pytest -q`" in text and "Acceptance: green" in text
    assert ".kilocode-loop/progress.json" in text and '"stageId": "s2"' in text
    assert "handoff.md" in text
    assert "Operator answers" not in text and "Handoff from" not in text  # empty sections are left out


def test_prompt_sections_appear_with_content() -> None:
    text = prompt(answers=[Answer(question="DB?", answer="sqlite")], files_changed=["a.py"],
                  handoff="# H\nstate", prompt_extra="Be brief.", safety_feedback="guard hit",
                  verify_feedback="exit 1", previous={"topic": "t", "summary": "s"})
    assert text.startswith("## Operator instructions for this run\nBe brief.")
    for needle in ("Q: DB?\n  A: sqlite", "- a.py", "## Handoff from the previous session\n# H",
                   "## Loop safety feedback\nguard hit", "## Verify failed last iteration", "- topic: t"):
        assert needle in text


def test_shared_context_skips_handoff() -> None:
    text = prompt(handoff="# H", shared_context=True)
    assert "Handoff" not in text and "handoff.md" not in text


def test_fixed_scaffolding_stays_short() -> None:
    minimal = build_prompt(PromptInput(goal=Goal(title="g", stages=[Stage(id="s", title="t")]),
                                       stage=Stage(id="s", title="t"), iteration=1, max_iterations=1, completed=set()))
    assert len(minimal) < 1200, len(minimal)


def test_handoff_is_clipped_to_120_lines() -> None:
    clipped = clip_handoff("\n".join(f"line {i}" for i in range(500)))
    assert len(clipped.splitlines()) == HANDOFF_MAX_LINES + 1


def test_progress_fallbacks(tmp_path: Path) -> None:
    missing = read_progress(tmp_path / "progress.json", "Should we keep the cache layer?\nno question here")
    assert missing.source == "fallback" and missing.questions[0].question == "Should we keep the cache layer?"
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert "not valid JSON" in read_progress(broken, "").warnings[0]
    listy = tmp_path / "list.json"
    listy.write_text("[1]")
    assert read_progress(listy, "").source == "fallback"


def test_progress_coerces_bad_fields(tmp_path: Path) -> None:
    path = tmp_path / "progress.json"
    path.write_text('{"percent": 140, "stageStatus": "weird", "questions": ["Why?", {"question": "Pick", '
                    '"options": ["a", 2]}], "filesChanged": ["x", 3], "topic": 5}')
    progress = read_progress(path, "")
    assert progress.percent == 100 and progress.stage_status is None and progress.topic == ""
    assert [q.question for q in progress.questions] == ["Why?", "Pick"] and progress.questions[1].options == ["a", "2"]
    assert progress.files_changed == ["x"] and progress.needs_input


def test_scrape_ignores_code_and_short_lines() -> None:
    assert scrape_questions("x = a ? b : c\nok?\n- Do you want tests as well?") == [
        scrape_questions("Do you want tests as well?")[0]]


def test_percent_and_next_stage_from_goal() -> None:
    assert completion_percent(GOAL, {"s2"}) == 67
    assert first_open_stage_title(GOAL, set()) == "Two"
    assert first_open_stage_title(GOAL, {"s2", "s3"}) == ""


def test_prompt_lines_agents_read_back() -> None:
    from kilo_loop.agent.prompt_lines import ITERATION_LINE, STAGE_LINE

    text = prompt()
    stage = STAGE_LINE.search(text)
    iteration = ITERATION_LINE.search(text)
    assert stage is not None and (stage["id"], stage["title"]) == ("s2", "Two")
    assert iteration is not None and iteration["n"] == "2"
