"""Goal parsing: JSON goals, markdown checklists, inline text, and every way a file can be wrong."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kilo_loop.goal import parse
from kilo_loop.goal.model import GoalError
from kilo_loop.goal.parse import (
    goal_from_text,
    load_goal,
    parse_json_goal,
    parse_markdown_goal,
    split_directives,
)
from tests.support.paths import EXAMPLES

SRC = Path("plans/demo.md")

# ---------------------------------------------------------------- markdown


def test_markdown_title_stages_ids_lines_and_done() -> None:
    goal = parse_markdown_goal(
        "# Stabilise the workflows module\n"
        "\n"
        "- [ ] Remove legacy libs :: verify: pnpm test\n"
        "- [x] Rewire the builder\n"
        "* [ ] Star bullet\n"
        "- [X] Capital X\n"
        "+ [ ] Plus bullet\n"
        "1. [ ] Ordered item\n"
        "2) [x] Ordered paren\n",
        SRC,
    )
    assert goal.title == "Stabilise the workflows module"
    assert goal.kind == "markdown"
    assert goal.source == SRC
    assert [s.id for s in goal.stages] == [f"stage-{n}" for n in range(1, 8)]
    assert [s.title for s in goal.stages] == [
        "Remove legacy libs", "Rewire the builder", "Star bullet", "Capital X", "Plus bullet",
        "Ordered item", "Ordered paren",
    ]
    assert [s.done for s in goal.stages] == [False, True, False, True, False, False, True]
    assert [s.line for s in goal.stages] == [3, 4, 5, 6, 7, 8, 9]
    assert goal.stages[0].verify == "pnpm test"


def test_all_directives_are_read() -> None:
    goal = parse_markdown_goal(
        "# T\n- [ ] Rebuild the parser :: verify: pnpm test :: acceptance: no failures"
        " :: model: provider/fast :: agent: code :: variant: high\n"
    )
    stage = goal.stages[0]
    assert stage.title == "Rebuild the parser"
    assert (stage.verify, stage.acceptance, stage.model, stage.agent, stage.variant) == (
        "pnpm test", "no failures", "provider/fast", "code", "high",
    )


def test_directive_value_may_contain_colons_and_rust_paths() -> None:
    goal = parse_markdown_goal("# T\n- [ ] Fix foo::bar :: verify: cargo test foo::bar -- --exact: x\n")
    assert goal.stages[0].title == "Fix foo::bar"
    assert goal.stages[0].verify == "cargo test foo::bar -- --exact: x"


def test_directive_names_are_case_insensitive() -> None:
    goal = parse_markdown_goal("# T\n- [ ] A :: Verify: make check\n")
    assert goal.stages[0].verify == "make check"


def test_nested_items_are_stages_and_indented_text_is_details() -> None:
    goal = parse_markdown_goal(
        "# Plan\n"
        "- [ ] Parent\n"
        "  first detail\n"
        "      deeper detail\n"
        "  - [x] Child\n"
        "    child detail\n"
        "  back to the parent\n"
        "\n"
        "## Notes\n"
        "not a detail\n"
        "- [ ] Second\n"
    )
    parent, child, second = goal.stages
    assert parent.details == "first detail\n    deeper detail\nback to the parent"
    assert child.title == "Child" and child.done and child.details == "child detail"
    assert second.details == ""


def test_description_is_text_before_the_first_stage() -> None:
    goal = parse_markdown_goal("# Title\n\nSome context.\n\nMore context.\n\n- [ ] A\n\nTrailing text\n")
    assert goal.description == "Some context.\n\nMore context."


def test_items_in_fenced_code_are_not_stages() -> None:
    goal = parse_markdown_goal(
        "# T\n```markdown\n- [ ] example only\n# Not the title\n```\n~~~\n- [ ] also example\n~~~\n- [ ] Real\n"
    )
    assert [s.title for s in goal.stages] == ["Real"]
    assert goal.stages[0].line == 9


def test_a_shorter_fence_does_not_close_a_longer_one() -> None:
    goal = parse_markdown_goal("# T\n````\n```\n- [ ] inside\n```\n````\n- [ ] Real\n")
    assert [s.title for s in goal.stages] == ["Real"]


def test_missing_title_uses_the_file_stem() -> None:
    assert parse_markdown_goal("- [ ] A\n", Path("plans/my-plan.md")).title == "my-plan"
    assert parse_markdown_goal("- [ ] A\n").title == "Untitled plan"


def test_title_heading_forms() -> None:
    assert parse_markdown_goal("## Sub\n# Real title ##\n- [ ] A\n").title == "Real title"
    assert parse_markdown_goal("# C#\n- [ ] A\n").title == "C#"
    assert parse_markdown_goal("#\n# Second\n- [ ] A\n").title == "Second"


def test_crlf_and_bom_do_not_leak_into_titles() -> None:
    goal = parse_markdown_goal("\ufeff# Title\r\n- [ ] One :: verify: true\r\n- [x] Two\r\n")
    assert goal.title == "Title"
    assert [(s.title, s.verify, s.line) for s in goal.stages] == [("One", "true", 2), ("Two", None, 3)]


def test_unicode_titles() -> None:
    goal = parse_markdown_goal("# Überarbeitung 🚀\n- [ ] Größe prüfen — schnell\n")
    assert goal.title == "Überarbeitung 🚀"
    assert goal.stages[0].title == "Größe prüfen — schnell"


def test_not_a_checkbox_is_ignored() -> None:
    goal = parse_markdown_goal("# T\n- [-] cancelled\n- [] no space\n-[ ] no gap\n- [ ]Glued\n- [ ] Real\n")
    assert [s.title for s in goal.stages] == ["Real"]


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("# T\n- [ ] A :: verfy: pnpm test\n", 2, "unknown directive 'verfy'"),
        ("# T\n\n- [ ] A\n- [ ] B :: just words\n", 4, "is not a directive"),
        ("# T\n- [ ] A :: verify:\n", 2, "has no value"),
        ("# T\n- [ ] A :: verify: a :: verify: b\n", 2, "given twice"),
        ("# T\n- [ ] A ::   ::\n", 2, "empty directive"),
        ("# T\n- [ ]\n", 2, "has no title"),
        ("# T\n- [ ] :: verify: x\n", 2, "has no title"),
    ],
)
def test_bad_items_report_the_line(text: str, line: int, fragment: str) -> None:
    with pytest.raises(GoalError) as info:
        parse_markdown_goal(text, SRC)
    assert info.value.line == line
    assert fragment in info.value.message
    assert str(info.value).startswith(f"{SRC}:{line}: ")


def test_unknown_directive_says_which_are_allowed() -> None:
    with pytest.raises(GoalError, match="verify, acceptance, model, agent, variant"):
        parse_markdown_goal("# T\n- [ ] A :: owner: me\n")


def test_no_stages_is_an_error_with_a_fix() -> None:
    with pytest.raises(GoalError) as info:
        parse_markdown_goal("# Title only\n\nSome prose.\n- a plain bullet\n", SRC)
    assert info.value.message == "no stages: add '- [ ] …' checklist items"


@pytest.mark.parametrize("text", ["", "   \n\n\t", "\ufeff"])
def test_empty_markdown_is_an_error(text: str) -> None:
    with pytest.raises(GoalError, match="empty"):
        parse_markdown_goal(text, SRC)


def test_split_directives_needs_blanks_around_the_separator() -> None:
    assert split_directives("Title :: verify: a ::acceptance: b") == ["Title", "verify: a ::acceptance: b"]
    assert split_directives("T\t::\tmodel: m ::") == ["T", "model: m", ""]


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_markdown_parser_only_raises_goal_error(text: str) -> None:
    try:
        goal = parse_markdown_goal(text)
    except GoalError as exc:
        assert exc.message
    else:
        assert goal.stages


FRAGMENTS = st.sampled_from([
    "# ", "#", "- [ ] ", "- [x] ", "* [X] ", "1. [ ] ", "  ", "\t", " :: ", "::", "verify:", "model: ",
    "```", "~~~", "\r", "\n", "\n", "\n", "title", "é", "[", "]", "x",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(FRAGMENTS, max_size=40).map("".join))
def test_markdown_parser_on_markdownish_text(text: str) -> None:
    try:
        goal = parse_markdown_goal(text)
    except GoalError as exc:
        assert exc.message
        return
    lines = parse.split_lines(text.removeprefix("\ufeff"))
    for stage in goal.stages:
        assert stage.line is not None
        assert stage.title in lines[stage.line - 1]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.text(alphabet="abc XYZ-é", min_size=1).filter(str.strip)),
                min_size=1, max_size=8))
def test_generated_checklists_round_trip(items: list[tuple[bool, str]]) -> None:
    text = "# Plan\n" + "".join(f"- [{'x' if done else ' '}] {title}\n" for done, title in items)
    goal = parse_markdown_goal(text)
    assert [(s.done, s.title) for s in goal.stages] == [(done, title.strip()) for done, title in items]
    assert [s.line for s in goal.stages] == list(range(2, len(items) + 2))


# ---------------------------------------------------------------- json

FULL_JSON = """{
  "title": "Stabilise the workflows module",
  "description": "why",
  "verify": "make check",
  "stages": [
    {"id": "s1", "title": "Remove legacy libs", "details": "d", "done": true, "verify": "pnpm test",
     "acceptance": "green", "model": "provider/fast", "agent": "code", "variant": "high", "runtime": "claude"},
    {"title": "No id here"}
  ]
}"""


def test_json_goal_with_every_field() -> None:
    goal = parse_json_goal(FULL_JSON, Path("goal.json"))
    assert goal.kind == "json"
    assert (goal.title, goal.description, goal.verify) == ("Stabilise the workflows module", "why", "make check")
    first, second = goal.stages
    assert first.model_dump(exclude={"line", "protect", "size", "auto_fix"}) == {
        "id": "s1", "title": "Remove legacy libs", "details": "d", "done": True, "verify": "pnpm test",
        "acceptance": "green", "model": "provider/fast", "agent": "code", "variant": "high", "runtime": "claude",
    }
    assert (second.id, second.done, second.verify) == ("stage-2", False, None)


def test_json_missing_title_uses_the_stem_and_blank_optional_strings_are_none() -> None:
    goal = parse_json_goal('{"stages": [{"title": "A", "verify": "  ", "model": null}]}', Path("x/y.json"))
    assert goal.title == "y"
    assert goal.stages[0].verify is None and goal.stages[0].model is None


def test_json_syntax_error_reports_line_and_column() -> None:
    text = '{\n  "title": "T",\n  "stages": [\n    {"title": "A"}\n    {"title": "B"}\n  ]\n}\n'
    with pytest.raises(GoalError) as info:
        parse_json_goal(text, Path("g.json"))
    assert info.value.line == 5
    assert "line 5, column 5" in info.value.message
    assert "missing or trailing comma" in info.value.message


def test_json_trailing_comma() -> None:
    with pytest.raises(GoalError) as info:
        parse_json_goal('{"title": "T",\n "stages": [{"title": "A"},]\n}')
    assert info.value.line == 2


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("[]", ["must be a JSON object", "an array", 'write {"title": …, "stages": […]}']),
        ('"just a string"', ["must be a JSON object", "a string"]),
        ('{"title": "T"}', ['"stages" is missing']),
        ('{"title": "T", "stages": {}}', ['"stages" must be an array', "an object"]),
        ('{"title": "T", "stages": []}', ["no stages"]),
        ('{"stages": ["A"]}', ["stage 1 must be an object", "a string"]),
        ('{"stages": [{"title": "A", "done": "yes"}]}', ["stage 1", '"done" must be true or false', "a string"]),
        ('{"stages": [{"title": 3}]}', ["stage 1", '"title" must be a non-empty string', "a number"]),
        ('{"stages": [{"title": "  "}]}', ["stage 1", '"title" must be a non-empty string']),
        ('{"stages": [{"id": "s"}]}', ['stage 1 (\'s\'): "title" is missing']),
        ('{"stages": [{"title": "A"}, {"id": "b", "title": "B", "verify": 5}]}',
         ["stage 2 ('b')", '"verify" must be a string', "a number"]),
        ('{"stages": [{"title": "A", "details": ["x"]}]}', ['"details" must be a string', "an array"]),
        ('{"stages": [{"title": "A", "id": 7}]}', ['"id" must be a string']),
        ('{"stages": [{"title": "A", "colour": "red"}]}', ['unknown field "colour"', "stage fields are"]),
        ('{"stages": [{"id": "a", "title": "A"}, {"id": "a", "title": "B"}]}',
         ["duplicate stage id 'a'", "stages 1 and 2"]),
        ('{"stages": [{"title": "A"}, {"id": "stage-1", "title": "B"}]}', ["duplicate stage id 'stage-1'"]),
        ('{"title": "T", "title": "U", "stages": [{"title": "A"}]}', ["duplicate key 'title'"]),
        ('{"titel": "T", "stages": [{"title": "A"}]}', ['unknown top-level field "titel"']),
        ('{"title": 1, "stages": [{"title": "A"}]}', ['"title" must be a string']),
        ("", ["empty"]),
        ("[" * 100000, ["invalid JSON"]),
    ],
)
def test_malformed_json_goals(text: str, fragments: list[str]) -> None:
    with pytest.raises(GoalError) as info:
        parse_json_goal(text, Path("g.json"))
    for fragment in fragments:
        assert fragment in info.value.message
    assert "}}" not in info.value.message  # an f-string's doubled brace leaking into the text
    assert info.value.source == Path("g.json")


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_json_parser_only_raises_goal_error(text: str) -> None:
    try:
        parse_json_goal(text)
    except GoalError as exc:
        assert exc.message


# ---------------------------------------------------------------- load_goal


def test_load_goal_by_extension(tmp_path: Path) -> None:
    (tmp_path / "g.json").write_text('{"title": "J", "stages": [{"title": "A"}]}', encoding="utf-8")
    (tmp_path / "g.md").write_text("# M\n- [ ] A\n", encoding="utf-8")
    (tmp_path / "g.MARKDOWN").write_text("# K\n- [ ] A\n", encoding="utf-8")
    assert load_goal(tmp_path / "g.json").title == "J"
    assert load_goal(tmp_path / "g.md").title == "M"
    assert load_goal(tmp_path / "g.MARKDOWN").kind == "markdown"
    assert load_goal(tmp_path / "g.md").source == tmp_path / "g.md"


@pytest.mark.parametrize("name", ["goal.txt", "goal", "goal.yaml"])
def test_load_goal_rejects_other_extensions(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text("- [ ] A\n", encoding="utf-8")
    with pytest.raises(GoalError, match="unsupported goal file type"):
        load_goal(tmp_path / name)


def test_load_goal_missing_directory_binary_and_non_utf8(tmp_path: Path) -> None:
    with pytest.raises(GoalError, match="file not found"):
        load_goal(tmp_path / "nope.md")
    (tmp_path / "dir.md").mkdir()
    with pytest.raises(GoalError, match="is a directory"):
        load_goal(tmp_path / "dir.md")
    for directory in (tmp_path, tmp_path / "plans"):  # a name with no .md/.json is a directory all the same
        directory.mkdir(exist_ok=True)
        with pytest.raises(GoalError, match=r"is a directory: pass a \.json or \.md goal file"):
            load_goal(directory)
    (tmp_path / "bin.json").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(GoalError, match="binary"):
        load_goal(tmp_path / "bin.json")
    (tmp_path / "latin1.md").write_bytes("# T\n- [ ] caf\xe9\n".encode("latin-1"))
    with pytest.raises(GoalError) as info:
        load_goal(tmp_path / "latin1.md")
    assert "not UTF-8" in info.value.message and info.value.line == 2


def test_load_goal_empty_file(tmp_path: Path) -> None:
    (tmp_path / "e.md").write_bytes(b"")
    (tmp_path / "e.json").write_bytes(b"\n")
    with pytest.raises(GoalError, match="empty"):
        load_goal(tmp_path / "e.md")
    with pytest.raises(GoalError, match="empty"):
        load_goal(tmp_path / "e.json")


def test_load_goal_too_large(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse, "MAX_GOAL_BYTES", 10)
    (tmp_path / "big.md").write_text("# T\n- [ ] A long stage\n", encoding="utf-8")
    with pytest.raises(GoalError, match="limited to 10"):
        load_goal(tmp_path / "big.md")


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=200))
def test_load_goal_on_random_bytes(data: bytes) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for name in ("x.md", "x.json"):
            path = Path(tmp, name)
            path.write_bytes(data)
            try:
                load_goal(path)
            except GoalError as exc:
                assert exc.message


def test_examples_parse() -> None:
    root = EXAMPLES
    for name in ("goal.example.json", "goal.example.md"):
        goal = load_goal(root / name)
        assert len(goal.stages) == 3
        assert all(stage.verify for stage in goal.stages)


# ---------------------------------------------------------------- inline text


def test_goal_from_text_is_one_stage() -> None:
    goal = goal_from_text("  Fix the flaky login test  ")
    assert goal.kind == "text"
    assert goal.title == "Fix the flaky login test"
    assert [(s.id, s.title, s.done) for s in goal.stages] == [("stage-1", "Fix the flaky login test", False)]


def test_goal_from_text_long_and_multiline() -> None:
    text = "x" * 200 + "\nsecond line"
    goal = goal_from_text(text)
    assert len(goal.title) == 80 and goal.title.endswith("…")
    assert goal.stages[0].details == text
    assert goal.description == text


def test_goal_from_text_empty() -> None:
    with pytest.raises(GoalError, match="empty"):
        goal_from_text(" \n\t ")


def test_stage_runtime_and_the_mode_alias_in_markdown() -> None:
    goal = parse_markdown_goal("# G\n- [ ] Port it :: runtime: claude :: mode: build\n- [ ] Plain\n", Path("g.md"))
    first, second = goal.stages
    assert (first.runtime, first.agent) == ("claude", "build")
    assert second.runtime is None


def test_unknown_stage_runtime_is_a_clear_error() -> None:
    with pytest.raises(GoalError, match=r"unknown runtime 'claud'.*claude"):
        parse_markdown_goal("# G\n- [ ] x :: runtime: claud\n", Path("g.md"))
    with pytest.raises(GoalError, match="stage 1: unknown runtime 'vim'"):
        parse_json_goal('{"title": "t", "stages": [{"title": "x", "runtime": "vim"}]}', Path("g.json"))


def test_json_mode_is_an_alias_of_agent_but_not_both() -> None:
    goal = parse_json_goal('{"title": "t", "stages": [{"title": "x", "mode": "plan"}]}', Path("g.json"))
    assert goal.stages[0].agent == "plan"
    with pytest.raises(GoalError, match='"agent" or its alias "mode"'):
        parse_json_goal('{"title": "t", "stages": [{"title": "x", "mode": "a", "agent": "b"}]}', Path("g.json"))


def test_stage_runtimes_match_the_agent_registry() -> None:
    from kilo_loop.agent.registry import RUNTIMES
    from kilo_loop.goal.parse import STAGE_RUNTIMES

    assert set(STAGE_RUNTIMES) == set(RUNTIMES)
