"""JSON goals remember: `"done": true` is set in place, every other byte kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kilo_loop.goal.json_edit import with_stage_done
from kilo_loop.goal.model import GoalError
from kilo_loop.goal.parse import load_goal
from kilo_loop.goal.sync import mark_json_stage_done, mark_stage_done

AUTHORED = """{
    "title": "Hand-written goal",   "description": "keeps \\u00e9scapes and   spacing",
    "stages": [
        { "id": "one",   "title": "First",  "verify": "pytest -q" },
        {
            "id": "two",
            "title": "Second, with \\"quotes\\" and ] } brackets",
            "details": "{\\"not\\": \\"an object\\"}"
        },
        {"id": "three", "title": "Third", "done": false}
    ]
}
"""


def test_a_missing_done_is_inserted_in_the_objects_own_style() -> None:
    inline = with_stage_done(AUTHORED, 0, True)
    assert inline == AUTHORED.replace('"verify": "pytest -q" }', '"verify": "pytest -q",  "done": true }')  # its last comma
    block = with_stage_done(AUTHORED, 1, True)
    assert block == AUTHORED.replace(
        '"details": "{\\"not\\": \\"an object\\"}"\n',
        '"details": "{\\"not\\": \\"an object\\"}",\n            "done": true\n',
    )


def test_an_existing_done_is_replaced_and_nothing_else_moves() -> None:
    edited = with_stage_done(AUTHORED, 2, True)
    assert edited == AUTHORED.replace('"done": false}', '"done": true}')
    assert with_stage_done(edited, 2, True) == edited
    assert with_stage_done(edited, 2, False) == AUTHORED
    assert with_stage_done(AUTHORED, 0, False) == AUTHORED  # absent already reads as not done


def test_compact_objects_stay_compact() -> None:
    compact = '{"stages":[{"title":"A"},{"title":"B","done":false}]}'
    assert with_stage_done(compact, 0, True) == '{"stages":[{"title":"A","done":true},{"title":"B","done":false}]}'
    assert with_stage_done(compact, 1, True) == '{"stages":[{"title":"A"},{"title":"B","done":true}]}'


def test_marking_by_stage_id_through_the_file(tmp_path: Path) -> None:
    path = tmp_path / "goal.json"
    path.write_bytes(AUTHORED.replace("\n", "\r\n").encode())
    goal = load_goal(path)
    assert mark_stage_done(goal, goal.stages[1]) is True
    data = path.read_bytes()
    assert b"\n" not in data.replace(b"\r\n", b"")  # CRLF kept, also on the inserted line
    assert [s.done for s in load_goal(path).stages] == [False, True, False]
    gone = goal.stages[0].model_copy(update={"id": "renamed-away"})
    assert mark_json_stage_done(path, gone) is False
    assert path.read_bytes() == data


def test_a_malformed_goal_is_a_clear_error_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "goal.json"
    path.write_text(AUTHORED)
    goal = load_goal(path)
    broken = AUTHORED.replace('"First",', '"First"')
    path.write_text(broken)
    with pytest.raises(GoalError) as err:
        mark_stage_done(goal, goal.stages[0])
    assert "invalid JSON" in str(err.value) and "line 4" in str(err.value)
    assert path.read_text() == broken


stage_strategy = st.fixed_dictionaries(
    {"title": st.text(min_size=1, max_size=12).filter(str.strip)},
    optional={"done": st.booleans(), "details": st.text(max_size=12), "verify": st.text(min_size=1, max_size=8)},
)
document_strategy = st.lists(stage_strategy, min_size=1, max_size=5).map(
    lambda stages: {"title": "T", "stages": [{"id": f"s{i}", **stage} for i, stage in enumerate(stages)]}
)


@settings(max_examples=150, deadline=None)
@given(
    document=document_strategy,
    indent=st.sampled_from([None, 0, 2, 4, "\t"]),
    separators=st.sampled_from([(", ", ": "), (",", ":"), (" ,  ", " :  ")]),
    ascii_only=st.booleans(),
    index=st.integers(0, 4),
    done=st.booleans(),
)
def test_the_edit_sets_exactly_that_stage_in_any_formatting(
    document: dict[str, object], indent: int | str | None, separators: tuple[str, str],
    ascii_only: bool, index: int, done: bool,
) -> None:
    text = json.dumps(document, indent=indent, separators=separators, ensure_ascii=ascii_only)
    stages = document["stages"]
    assert isinstance(stages, list)
    index %= len(stages)
    edited = with_stage_done(text, index, done)
    expected = json.loads(text)
    if done or "done" in expected["stages"][index]:
        expected["stages"][index]["done"] = done
    assert json.loads(edited) == expected
    # only one short stretch of text differs: the rest is byte for byte the original
    head = 0
    while head < min(len(text), len(edited)) and text[head] == edited[head]:
        head += 1
    tail = 0
    while tail < min(len(text), len(edited)) - head and text[-1 - tail] == edited[-1 - tail]:
        tail += 1
    assert len(edited) - head - tail <= len(',\n' + ' ' * 12 + '"done" :  true')  # the deepest indent
