"""Golden files: the bytes a scripted run leaves behind (events.jsonl, state.json, the SSE
frames the dashboard gets, the reports) are pinned, so a refactor of the inside cannot change
what users, scripts and the dashboard read without the diff showing here.

Volatile values (times, durations, temp paths, commit hashes) are normalized before comparing.
Regenerate after an intended change with `KILO_LOOP_UPDATE_GOLDEN=1` and list the difference
in the README's changelog.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from kilo_loop.web.snapshot import compact_state, slim_event, state_head
from kilo_loop.web.sse import sse_frame
from tests.integration.loop_harness import FakeKilo, bash, progress, run_loop, step, text

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden"
UPDATE = os.environ.get("KILO_LOOP_UPDATE_GOLDEN") == "1"
PLAN = "# Golden plan\n\n- [ ] First stage\n- [ ] Second stage :: verify: test -f b.txt\n- [ ] Third stage\n"
# Data only: the fake agent prints this as a tool event; the guard kills the session; nothing runs it.
PUSH = ["git", "push", "--force", "origin", "main"]
_TIME_KEYS = {"ts", "startedAt", "finishedAt", "answeredAt", "started_at", "finished_at", "answered_at"}
_DURATION_KEYS = {"durationMs", "duration_ms"}
_TREE_KEYS = {"tree", "start_tree", "startTree"}  # work-tree fingerprints (loop/circles): they hash HEAD
_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")
_HEAD = re.compile(r"HEAD [0-9a-f]{10}")
_SECONDS = re.compile(r"Duration: \d+\.\d s|in \d+ ms")
_RECEIPT_DURATION = re.compile(r"(?<=\| )\d+[hms](?: \d+[ms])?(?= \|)")  # report.md's stage receipts


def scenario() -> list[list[dict[str, Any]]]:
    return [
        [text("looking around"), bash("ls src"), {"write": "a.txt", "text": "a\n"},
         progress("stage-1", "done", 30), step(1000, 0.01)],
        [text("pushing"), bash(" ".join(PUSH)), step(500, 0.005)],
        [text("claims done too early"), progress("stage-2", "done", 60), step(800, 0.008)],
        [{"write": "b.txt", "text": "b\n"},
         progress("stage-2", "done", 70, needsInput=True,
                  questions=[{"question": "Which database?", "options": ["sqlite", "postgres"]}]),
         step(900, 0.009)],
        [{"write": "c.txt", "text": "c\n"}, progress("stage-3", "done", 100), step(700, 0.007)],
    ]


def normalize(value: Any, tmp: str) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in _TIME_KEYS and isinstance(item, str) and item:
                out[key] = "<time>"
            elif key in _DURATION_KEYS and isinstance(item, int):
                out[key] = 0
            elif key in _TREE_KEYS and isinstance(item, str) and item:
                out[key] = "<tree>"
            elif key == "trees" and isinstance(item, dict):  # as a replay of the normalised events folds them
                out[key] = {"<tree>": min(item.values())} if item else {}
            else:
                out[key] = normalize(item, tmp)
        return out
    if isinstance(value, list):
        return [normalize(item, tmp) for item in value]
    if isinstance(value, str):
        return normalize_text(value, tmp)
    return value


def normalize_text(text_: str, tmp: str) -> str:
    text_ = text_.replace(tmp, "<tmp>")
    text_ = _HEAD.sub("HEAD <sha>", text_)
    text_ = _SECONDS.sub(lambda m: "Duration: <s>" if m.group().startswith("Duration") else "in <ms>", text_)
    text_ = _RECEIPT_DURATION.sub("<d>", text_)
    return _ISO.sub("<time>", text_)


def jsonl(items: list[Any]) -> str:
    return "".join(orjson.dumps(item).decode() + "\n" for item in items)


def artifacts(run_dir: Path, tmp: str) -> dict[str, str]:
    events = normalize([orjson.loads(line) for line in (run_dir / "events.jsonl").read_bytes().splitlines() if line], tmp)
    state = normalize(orjson.loads((run_dir / "state.json").read_bytes()), tmp)
    frames = [sse_frame(slim_event(event), "log", int(event["seq"])) for event in events]
    frames.append(sse_frame(state_head(state), "state"))
    files = {
        "events.jsonl": jsonl(events),
        "state.json": json.dumps(state, indent=2, ensure_ascii=False) + "\n",
        "api-state.json": json.dumps(compact_state(state), indent=2, ensure_ascii=False) + "\n",
        "sse.txt": b"".join(frames).decode(),
        "report.md": normalize_text((run_dir / "report.md").read_text(), tmp),
    }
    for name in ("01-report.json", "03-report.json", "04-report.md"):
        raw = (run_dir / "iterations" / name).read_text()
        files[name] = (json.dumps(normalize(json.loads(raw), tmp), indent=2, ensure_ascii=False) + "\n"
                       if name.endswith(".json") else normalize_text(raw, tmp))
    return files


@pytest.fixture(scope="module")
def golden_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, int]:
    from tests.integration.loop_harness import init_repo

    tmp = tmp_path_factory.mktemp("golden")
    project = init_repo(tmp / "repo")
    (project / "plan.md").write_text(PLAN)
    fake = FakeKilo(tmp / "fake")
    run = run_loop(fake, project, scenario(), "--goal", "plan.md", "-n", "6", "--run-id", "golden", stdin="1\n")
    return run.run_dir, str(tmp), run.proc.returncode


def test_scripted_run_matches_the_golden_files(golden_run: tuple[Path, str, int]) -> None:
    run_dir, tmp, code = golden_run
    assert code == 0
    produced = artifacts(run_dir, tmp)
    if UPDATE:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        for name, body in produced.items():
            (GOLDEN / name).write_text(body)
    for name, body in produced.items():
        assert body == (GOLDEN / name).read_text(), f"{name} differs from tests/fixtures/golden/{name}"


def _contains(new: Any, old: Any) -> bool:
    """`new` says everything `old` said: same values, maybe more keys."""
    if isinstance(old, dict):
        return isinstance(new, dict) and all(key in new and _contains(new[key], value) for key, value in old.items())
    if isinstance(old, list):
        return isinstance(new, list) and len(new) == len(old) and all(map(_contains, new, old))
    return bool(new == old)


def test_every_line_of_the_old_format_is_still_written() -> None:
    """Against the golden files taken before events became typed (v0-*): every old event line is
    still there, in order, with the same envelope and data (new lines and new data keys only add;
    see the README's changelog), and the old state.json keys keep their values."""
    old = [orjson.loads(line) for line in (GOLDEN / "v0-events.jsonl").read_bytes().splitlines() if line]
    new = [orjson.loads(line) for line in (GOLDEN / "events.jsonl").read_bytes().splitlines() if line]
    added = {"state-init", "usage", "iteration-report", "circles"}
    kept = [event for event in new if event["type"] not in added]
    assert len(kept) == len(old)
    for before, after in zip(old, kept, strict=True):
        assert list(after)[: len(before)] == list(before)  # envelope keys in the same order
        assert _contains(after, {key: value for key, value in before.items() if key != "seq"})
    state_v0 = json.loads((GOLDEN / "v0-state.json").read_text())
    state = json.loads((GOLDEN / "state.json").read_text())
    assert [key for key in state if key in state_v0] == list(state_v0)
    for key, value in state_v0.items():
        if key != "logTail":
            assert _contains(state[key], value), key
