"""Every endpoint of the dashboard API against a real server and real dry runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kilo_loop.agent.simulator import DRY_RUN_QUESTION
from kilo_loop.web.launcher import list_goals
from tests.web.conftest import Harness, HarnessFactory
from tests.web.support import git

pytestmark = pytest.mark.asyncio


def run_dir(project: Path, run_id: str) -> Path:
    return project / ".kilocode-loop" / "runs" / run_id


# ---------------------------------------------------------------- state and launcher


async def test_state_is_idle_before_any_run(harness: Harness) -> None:
    state = await harness.state()
    assert state["status"] == "idle" and state["idle"] is True and state["mode"] == "launcher"


async def test_goals_lists_plans_with_their_stages(harness: Harness) -> None:
    body = (await harness.client.get("/api/goals")).json()
    plans = {plan["file"]: plan for plan in body["goals"]}
    assert set(plans) == {"plans/demo.md", ".kilocode-loop/goals/json-plan.json"}
    demo = plans["plans/demo.md"]
    assert (demo["done"], demo["total"], demo["type"]) == (0, 4, "markdown")
    assert demo["stages"][1]["verify"] == "true"
    assert body["busy"] is False and body["defaults"]["iterations"] == 5


async def test_stage_verify_is_written_into_the_markdown_plan(harness: Harness) -> None:
    response = await harness.client.post(
        "/api/goals/verify", json={"file": "plans/demo.md", "stageIndex": 0, "verify": "pytest -q"}
    )
    assert response.status_code == 200
    assert "- [ ] First stage :: verify: pytest -q" in (harness.project / "plans" / "demo.md").read_text()


async def test_plan_wide_verify_only_for_json_plans(harness: Harness) -> None:
    markdown = await harness.client.post(
        "/api/goals/verify", json={"file": "plans/demo.md", "verify": "make"}
    )
    assert markdown.status_code == 400 and "markdown plan has no plan-wide verify" in markdown.json()["error"]
    path = harness.project / ".kilocode-loop" / "goals" / "json-plan.json"
    ok = await harness.client.post(
        "/api/goals/verify", json={"file": ".kilocode-loop/goals/json-plan.json", "verify": "make"}
    )
    assert ok.status_code == 200 and json.loads(path.read_text())["verify"] == "make"


async def test_stage_index_out_of_range_is_a_400(harness: Harness) -> None:
    response = await harness.client.post(
        "/api/goals/verify", json={"file": "plans/demo.md", "stageIndex": 9, "verify": "x"}
    )
    assert response.status_code == 400 and "out of range" in response.json()["error"]


async def test_global_verify_keeps_other_config_keys(harness: Harness) -> None:
    config = harness.project / ".kilocode-loop" / "config.json"
    config.write_text('{"iterations": 3, "defaultVerify": "old"}')
    response = await harness.client.post("/api/goals/verify-global", json={"verify": "pytest -q"})
    assert response.status_code == 200
    assert json.loads(config.read_text()) == {"iterations": 3, "verify": "pytest -q"}
    assert (await harness.client.get("/api/goals")).json()["globalVerify"] == "pytest -q"
    cleared = await harness.client.post("/api/goals/verify-global", json={"verify": ""})
    assert cleared.json()["verify"] is None and json.loads(config.read_text()) == {"iterations": 3}


async def test_global_verify_refuses_to_overwrite_a_broken_config(harness: Harness) -> None:
    config = harness.project / ".kilocode-loop" / "config.json"
    config.write_text("{not json")
    response = await harness.client.post("/api/goals/verify-global", json={"verify": "make"})
    assert response.status_code == 409 and config.read_text() == "{not json"


async def test_mark_done_and_clear_done(harness: Harness) -> None:
    plan = harness.project / "plans" / "demo.md"
    done = await harness.client.post("/api/goals/done", json={"file": "plans/demo.md", "done": True})
    assert done.json()["changed"] == 4 and plan.read_text().count("- [x]") == 4
    cleared = await harness.client.post("/api/goals/done", json={"file": "plans/demo.md", "done": False})
    assert cleared.json()["changed"] == 4 and "- [x]" not in plan.read_text()


async def test_trash_moves_the_plan_out_of_the_list(harness: Harness) -> None:
    response = await harness.client.post("/api/goals/trash", json={"file": "plans/demo.md"})
    assert response.status_code == 200
    trashed = harness.project / response.json()["trashedTo"]
    assert trashed.is_file() and trashed.parent.name == "trash"
    assert not (harness.project / "plans" / "demo.md").exists()
    files = [plan["file"] for plan in (await harness.client.get("/api/goals")).json()["goals"]]
    assert files == [".kilocode-loop/goals/json-plan.json"]


# ---------------------------------------------------------------- a live run


async def test_a_started_run_asks_answers_and_carries_the_answer(harness: Harness) -> None:
    run_id = await harness.start(iterations=5, promptExtra="Keep the public API stable")
    second = await harness.client.post("/api/start", json={"file": "plans/demo.md", "dryRun": True})
    assert second.status_code == 409
    waiting = await harness.wait_state(lambda s: s["status"] == "waiting-answer")
    assert waiting["pendingQuestions"][0]["question"] == DRY_RUN_QUESTION
    assert waiting["promptExtra"] == "Keep the public API stable"
    answer = {"answers": [{"question": DRY_RUN_QUESTION, "answer": "Split the parser module"}]}
    assert (await harness.client.post("/api/answer", json=answer)).status_code == 200
    assert (await harness.client.post("/api/answer", json=answer)).status_code == 409  # already answered
    final = await harness.wait_state(lambda s: not s["running"])
    assert final["status"] == "done"
    prompt = (run_dir(harness.project, run_id) / "iterations" / "03-prompt.md").read_text()
    assert "Split the parser module" in prompt and "Keep the public API stable" in prompt


async def test_answer_without_a_question_is_refused(harness: Harness) -> None:
    answer = {"answers": [{"question": "q", "answer": "a"}]}
    assert (await harness.client.post("/api/answer", json=answer)).status_code == 409
    await harness.start(iterations=4)
    await harness.wait_state(lambda s: s["status"] == "waiting-answer")
    blank = await harness.client.post("/api/answer", json={"answers": [{"question": "q", "answer": "  "}]})
    assert blank.status_code == 400


async def test_pause_resume_and_shared_context(harness: Harness) -> None:
    await harness.start(iterations=5)
    await harness.wait_state(lambda s: s["status"] == "waiting-answer")
    paused = await harness.client.post("/api/control", json={"action": "pause"})
    assert paused.json()["paused"] is True
    shared = await harness.client.post("/api/control", json={"action": "set-shared-context", "value": True})
    assert shared.json()["sharedContext"] is True
    await harness.client.post(
        "/api/answer", json={"answers": [{"question": DRY_RUN_QUESTION, "answer": "1"}]}
    )
    state = await harness.wait_state(lambda s: s["status"] == "paused")
    assert state["sharedContext"] is True and state["iteration"] == 2
    await harness.client.post("/api/control", json={"action": "resume"})
    final = await harness.wait_state(lambda s: not s["running"])
    assert final["status"] == "done" and final["iteration"] == 5


async def test_control_input_errors(harness: Harness) -> None:
    assert (await harness.client.post("/api/control", json={"action": "pause"})).status_code == 409
    await harness.start(iterations=4)
    await harness.wait_state(lambda s: s["status"] == "waiting-answer")
    missing = await harness.client.post("/api/control", json={"action": "set-shared-context"})
    assert missing.status_code == 400 and "boolean" in missing.json()["error"]
    unknown = await harness.client.post("/api/control", json={"action": "explode"})
    assert unknown.status_code == 422
    coerced = await harness.client.post("/api/control", json={"action": "set-shared-context", "value": "yes"})
    assert coerced.status_code == 422


async def test_stop_ends_the_run_as_aborted(harness: Harness) -> None:
    await harness.start(iterations=4)
    await harness.wait_state(lambda s: s["status"] == "waiting-answer")
    assert (await harness.client.post("/api/control", json={"action": "stop"})).status_code == 200
    final = await harness.wait_state(lambda s: not s["running"])
    assert final["status"] == "aborted"


async def test_start_refuses_a_finished_plan_unless_forced(harness: Harness) -> None:
    await harness.client.post("/api/goals/done", json={"file": "plans/demo.md", "done": True})
    refused = await harness.client.post("/api/start", json={"file": "plans/demo.md", "dryRun": True})
    assert refused.status_code == 400 and "already done" in refused.json()["error"]
    run_id = await harness.run_to_end(force=True, iterations=1)
    assert (await harness.state())["runId"] == run_id


# ---------------------------------------------------------------- saved runs


async def test_saved_run_endpoints(harness: Harness) -> None:
    run_id = await harness.run_to_end(iterations=3)
    runs = (await harness.client.get("/api/runs")).json()
    assert runs["runs"][0]["runId"] == run_id and runs["runs"][0]["iterationsTotal"] == 3
    full = (await harness.client.get(f"/api/runs/{run_id}")).json()
    assert [i["iteration"] for i in full["iterations"]] == [1, 2, 3] and full["logTail"]
    page = (await harness.client.get(f"/api/runs/{run_id}?offset=1&limit=1")).json()
    assert [i["iteration"] for i in page["iterations"]] == [2] and page["iterationsTotal"] == 3
    report = await harness.client.get(f"/api/runs/{run_id}/report/2")
    assert report.status_code == 200 and report.text.startswith("# Iteration 2")
    export = await harness.client.get(f"/api/runs/{run_id}/export")
    assert export.text.startswith(f"# Run {run_id}")
    assert "attachment" in export.headers["content-disposition"]
    checkpoints = (await harness.client.get(f"/api/runs/{run_id}/checkpoints")).json()["checkpoints"]
    assert [c["iteration"] for c in checkpoints] == [1, 2, 3]
    assert (await harness.client.get("/api/checkpoints")).json()["checkpoints"] == checkpoints
    assert (await harness.client.get(f"/api/checkpoints?run={run_id}")).json()["runId"] == run_id
    diff = await harness.client.get(f"/api/runs/{run_id}/diff/1")
    assert diff.status_code == 200 and diff.headers["content-type"].startswith("text/x-diff")


async def test_runs_list_says_stages_duration_cost_and_status(harness: Harness) -> None:
    run_id = await harness.run_to_end(iterations=2)
    run = (await harness.client.get("/api/runs")).json()["runs"][0]
    assert run["runId"] == run_id and run["status"] == "done-with-errors"
    assert (run["stagesDone"], run["stagesTotal"]) == (2, 4)
    assert isinstance(run["durationMs"], int) and run["durationMs"] > 0
    assert run["cost"] > 0 and "iteration(s) used" in run["stopReason"]


async def test_receipts_for_the_live_and_a_saved_run(make_harness: HarnessFactory) -> None:
    harness = await make_harness()
    run_id = await harness.run_to_end(iterations=2)
    live = (await harness.client.get(f"/api/runs/{run_id}/receipts")).json()
    assert [r["title"] for r in live["stages"]] == ["First stage", "Second stage", "Third stage", "Fourth stage"]
    assert [r["iterations"] for r in live["stages"]] == [1, 1, 0, 0]
    assert live["stages"][0]["tokens"] > 0 and live["stages"][0]["durationMs"] > 0
    assert live["budget"] == {"maxCost": None, "maxTokens": None, "maxIterations": 2}
    other = await make_harness()  # another dashboard session reads it from disk
    saved = (await other.client.get(f"/api/runs/{run_id}/receipts")).json()
    assert saved["stages"] == live["stages"] and saved["budget"] is None
    assert (await other.client.get("/api/runs/nope/receipts")).status_code == 404


async def test_the_launcher_sees_a_json_plan_done(harness: Harness) -> None:
    plan = harness.project / ".kilocode-loop" / "goals" / "json-plan.json"
    before = plan.read_text()
    await harness.client.post("/api/goals/done", json={"file": ".kilocode-loop/goals/json-plan.json"})
    listed = {g["file"]: g for g in (await harness.client.get("/api/goals")).json()["goals"]}
    entry = listed[".kilocode-loop/goals/json-plan.json"]
    assert (entry["done"], entry["total"], entry["percent"]) == (2, 2, 100)
    assert plan.read_text() == before.replace('"Stage A"}', '"Stage A", "done": true}').replace(
        '"Stage B"}', '"Stage B", "done": true}'
    )  # only the done values were added: the file's own layout is kept


async def test_a_saved_run_from_another_dashboard_session_loads_from_disk(
    make_harness: HarnessFactory,
) -> None:
    first = await make_harness()
    run_id = await first.run_to_end(iterations=2)
    second = await make_harness()
    body = (await second.client.get("/api/runs/last")).json()
    assert body["runId"] == run_id and body["saved"] is True and len(body["iterations"]) == 2


async def test_diff_is_redacted(harness: Harness) -> None:
    (harness.project / "src" / "app.py").write_text('token = "ghp_' + "a1B2" * 9 + '"\n')
    run_id = await harness.run_to_end(iterations=1)
    diff = (await harness.client.get(f"/api/runs/{run_id}/diff/1")).text
    assert "src/app.py" in diff and "a1B2a1B2a1B2" not in diff


HOSTILE_PATHS = [
    ("/api/runs/nope", 404),
    ("/api/runs/%2e%2e", 422),
    ("/api/runs/..%2F..%2Fetc%2Fpasswd", 404),
    ("/api/runs/%2Fetc%2Fpasswd", 404),
    ("/api/runs/.hidden", 422),
    ("/api/runs/last/report/0", 422),
    ("/api/runs/last/report/-1", 422),
    ("/api/runs/last/report/1.5", 422),
    ("/api/runs/last/report/99", 404),
    ("/api/runs/last/report/99999999999999999999", 422),
    ("/api/runs/last/diff/abc", 422),
    ("/api/runs/last/diff/99", 404),
    ("/api/runs/nope/export", 404),
    ("/api/runs/nope/checkpoints", 404),
    ("/api/checkpoints?run=../../etc", 422),
    ("/api/runs/last?offset=-1", 422),
    ("/api/runs/last?limit=100000", 422),
    ("/api/nothing-here", 404),
]


async def test_hostile_paths_get_json_4xx(harness: Harness) -> None:
    await harness.run_to_end(iterations=1)
    for path, status in HOSTILE_PATHS:
        response = await harness.client.get(path)
        assert response.status_code == status, (path, response.text)
        assert isinstance(response.json()["error"], str), path


async def test_no_checkpoints_without_a_run(harness: Harness) -> None:
    assert (await harness.client.get("/api/checkpoints")).status_code == 409


# ---------------------------------------------------------------- revert


async def test_revert_refused_while_the_agent_works_then_restores(harness: Harness) -> None:
    app = harness.project / "src" / "app.py"
    await harness.start(iterations=4)
    running = await harness.client.post("/api/revert", json={"iteration": 1})
    assert running.status_code == 409
    await harness.wait_state(lambda s: s["status"] == "waiting-answer")
    app.write_text("print('changed by the agent')\n")
    (harness.project / "src" / "new_module.py").write_text("x = 1\n")
    result = await harness.client.post("/api/revert", json={"iteration": 1})
    assert result.status_code == 200, result.text
    body = result.json()
    assert "src/app.py" in body["restored"] and "src/new_module.py" in body["deleted"]
    assert app.read_text() == "print('v1')\n" and not (harness.project / "src" / "new_module.py").exists()


async def test_revert_of_another_run_is_refused_mid_session_and_logged_when_done(harness: Harness) -> None:
    older = await harness.run_to_end(iterations=1)
    readme = harness.project / "README.md"
    readme.write_text("work in progress\n")
    live = await harness.start(iterations=4)
    await harness.wait_state(lambda s: s["runId"] == live and s["status"] == "running")
    refused = await harness.client.post("/api/revert", json={"iteration": 1, "run": older})
    assert refused.status_code == 409, refused.text
    assert readme.read_text() == "work in progress\n"
    await harness.wait_state(lambda s: s["status"] == "waiting-answer")
    done = await harness.client.post("/api/revert", json={"iteration": 1, "run": older})
    assert done.status_code == 200, done.text
    assert readme.read_text() == "hello\n"
    state = await harness.state()
    reverts = [e for e in state["logTail"] if e["type"] == "revert"]
    assert len(reverts) == 1 and reverts[0]["data"]["run"] == older


async def test_revert_of_a_saved_run_and_bad_input(harness: Harness) -> None:
    run_id = await harness.run_to_end(iterations=2)
    (harness.project / "README.md").write_text("edited\n")
    ok = await harness.client.post("/api/revert", json={"iteration": 2, "run": run_id})
    assert ok.status_code == 200 and (harness.project / "README.md").read_text() == "hello\n"
    for body, status in [
        ({"iteration": 0}, 422),
        ({"iteration": "1"}, 422),
        ({"iteration": 99}, 409),
        ({"iteration": 1, "run": "../x"}, 404),
        ({"iteration": True}, 422),
        ({}, 422),
    ]:
        response = await harness.client.post("/api/revert", json=body)
        assert response.status_code == status, (body, response.text)
        assert "error" in response.json()


async def test_revert_refuses_when_head_moved_unless_forced(harness: Harness) -> None:
    run_id = await harness.run_to_end(iterations=1)
    (harness.project / "README.md").write_text("committed later\n")
    git(harness.project, "commit", "-qam", "later")
    refused = await harness.client.post("/api/revert", json={"iteration": 1, "run": run_id})
    assert refused.status_code == 409 and "HEAD moved" in refused.json()["error"]
    forced = await harness.client.post("/api/revert", json={"iteration": 1, "run": run_id, "force": True})
    assert forced.status_code == 200 and forced.json()["forced"] is True


# ---------------------------------------------------------------- hostile requests


@pytest.mark.parametrize(
    "body, status",
    [
        ({"file": "../../etc/passwd", "dryRun": True}, 400),
        ({"file": "plans/%2e%2e/%2e%2e/etc/passwd", "dryRun": True}, 400),
        ({"file": "/etc/passwd", "dryRun": True}, 400),
        ({"file": "plans/../../x.md", "dryRun": True}, 400),
        ({"file": "plans\\demo.md", "dryRun": True}, 400),
        ({"file": "README.md", "dryRun": True}, 400),
        ({"file": "plans/missing.md", "dryRun": True}, 400),
        ({"file": "", "dryRun": True}, 422),
        ({"file": "plans/demo.md", "iterations": "5"}, 422),
        ({"file": "plans/demo.md", "iterations": 0}, 422),
        ({"file": "plans/demo.md", "hitl": "sometimes"}, 422),
        ({"file": "plans/demo.md", "dryRun": "yes"}, 422),
        ({"file": "plans/demo.md", "agent": "a b; rm -rf /"}, 422),
        ({"file": "plans/demo.md", "unknown": 1}, 422),
        ({"file": ["plans/demo.md"]}, 422),
    ],
)
async def test_start_rejects_bad_input(harness: Harness, body: dict[str, Any], status: int) -> None:
    response = await harness.client.post("/api/start", json=body)
    assert response.status_code == status, response.text
    assert isinstance(response.json()["error"], str)
    assert (await harness.state())["idle"] is True


PLAN_BODIES: dict[str, dict[str, Any]] = {
    "/api/goals/verify": {"stageIndex": 0, "verify": "x"},
    "/api/goals/done": {"done": True},
    "/api/goals/trash": {},
}


@pytest.mark.parametrize("path", sorted(PLAN_BODIES))
async def test_plan_operations_never_leave_the_project(harness: Harness, path: str) -> None:
    outside = harness.project.parent / "outside.md"
    outside.write_text("- [ ] not yours\n")
    for file in (
        "../outside.md",
        str(outside),
        "plans/../../outside.md",
        "plans/\u0000.md",
        "plans/%2e%2e/x.md",
        "plans/link.md",
    ):
        if file == "plans/link.md":
            (harness.project / "plans" / "link.md").symlink_to(outside)
        response = await harness.client.post(path, json={"file": file, **PLAN_BODIES[path]})
        assert response.status_code == 400, (file, response.text)
    assert outside.read_text() == "- [ ] not yours\n"


async def test_prompt_extra_text_is_never_read_as_a_file(harness: Harness) -> None:
    secret = harness.project.parent / "secret.txt"
    secret.write_text("TOP SECRET CONTENT")
    run_id = await harness.run_to_end(iterations=1, promptExtra=str(secret))
    prompt = (run_dir(harness.project, run_id) / "iterations" / "01-prompt.md").read_text()
    assert "TOP SECRET CONTENT" not in prompt and str(secret) in prompt


async def test_foreign_host_origin_size_and_type(harness: Harness) -> None:
    evil_host = await harness.client.get("/api/state", headers={"Host": "evil.example:80"})
    assert evil_host.status_code == 400 and "Host" in evil_host.json()["error"]
    rebinding = await harness.client.get(
        "/", headers={"Host": f"attacker.test:{harness.dashboard.binding.port}"}
    )
    assert rebinding.status_code == 400
    origin = await harness.client.post(
        "/api/control", json={"action": "stop"}, headers={"Origin": "http://evil.example"}
    )
    assert origin.status_code == 403
    null_origin = await harness.client.post(
        "/api/control", json={"action": "stop"}, headers={"Origin": "null"}
    )
    assert null_origin.status_code == 403
    same_origin = await harness.client.post(
        "/api/goals/verify-global", json={"verify": "make"}, headers={"Origin": harness.origin}
    )
    assert same_origin.status_code == 200
    big = await harness.client.post("/api/goals/verify-global", json={"verify": "x" * 70_000})
    assert big.status_code == 413

    async def chunks() -> Any:
        for _ in range(80):
            yield b"x" * 1024

    chunked = await harness.client.post(
        "/api/goals/verify-global", content=chunks(), headers={"content-type": "application/json"}
    )
    assert chunked.status_code == 413
    form = await harness.client.post("/api/goals/verify-global", data={"verify": "make"})
    assert form.status_code == 415
    broken = await harness.client.post(
        "/api/goals/verify-global", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert broken.status_code == 422 and "error" in broken.json()


async def test_security_headers_on_every_response(harness: Harness) -> None:
    for path in ("/", "/api/state", "/api/runs/nope", "/static/app.js"):
        response = await harness.client.get(path)
        assert response.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
        assert response.headers["referrer-policy"] == "no-referrer"


async def test_page_and_assets_are_served_locally(harness: Harness) -> None:
    page = await harness.client.get("/")
    assert (
        page.status_code == 200
        and "/static/app.js" in page.text
        and "http" not in page.text.split("<body")[0]
    )
    for asset in ("/static/app.js", "/static/styles.css", "/favicon.ico"):
        assert (await harness.client.get(asset)).status_code == 200
    openapi = (await harness.client.get("/openapi.json")).json()
    for path in (
        "/api/state",
        "/api/events",
        "/api/goals",
        "/api/goals/verify",
        "/api/goals/verify-global",
        "/api/start",
        "/api/runs",
        "/api/runs/{run_id}",
        "/api/runs/{run_id}/report/{iteration}",
        "/api/runs/{run_id}/export",
        "/api/runs/{run_id}/diff/{iteration}",
        "/api/checkpoints",
        "/api/runs/{run_id}/checkpoints",
        "/api/control",
        "/api/revert",
        "/api/answer",
    ):
        assert path in openapi["paths"], path


# ---------------------------------------------------------------- the token, on loopback too


async def test_token_required_then_kept_in_a_strict_cookie(harness: Harness) -> None:
    token = harness.token
    assert f"?token={token}" in harness.dashboard.url and harness.dashboard.url.startswith("http://127.0.0.1:")
    async with harness.anonymous() as c:
        for path in ("/", "/api/state", "/static/app.js", "/openapi.json"):
            assert (await c.get(path)).status_code == 401
        assert (await c.get("/?token=wrong")).status_code == 401
        posted = await c.post("/api/goals/verify-global", json={"verify": "x"})
        assert posted.status_code == 401
        first = await c.get(f"/?token={token}")
        assert first.status_code == 200
        cookie = first.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and token in cookie
        assert f"kilo_loop_{harness.dashboard.binding.port}=" in cookie  # one cookie per port
        assert (await c.get("/api/state")).status_code == 200  # the cookie now carries it
    async with harness.anonymous() as fresh:
        assert (await fresh.get("/api/state")).status_code == 401
        bearer = await fresh.get("/api/state", headers={"Authorization": f"Bearer {token}"})
        assert bearer.status_code == 200


async def test_notes_through_the_api_each_bad_input_gets_a_clear_answer(harness: Harness) -> None:
    assert (await harness.client.post("/api/notes", json={"text": "hello"})).status_code == 409  # no run yet
    run_id = await harness.start(iterations=4)
    await harness.wait_state(lambda s: s["status"] == "waiting-answer")
    empty = await harness.client.post("/api/notes", json={"text": "  "})
    assert empty.status_code == 400 and "empty" in empty.json()["error"]
    large = await harness.client.post("/api/notes", json={"text": "x" * 9000})
    assert large.status_code == 400 and "8 KB" in large.json()["error"]
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    sent = await harness.client.post("/api/notes", json={"text": f"token {secret}: keep utils/"})
    assert sent.status_code == 201 and sent.json() == {"ok": True, "id": "n1", "status": "queued", "masked": True}
    second = (await harness.client.post("/api/notes", json={"text": "and withdraw this"})).json()
    assert (await harness.client.post(f"/api/notes/{second['id']}/withdraw", json={})).status_code == 200
    assert (await harness.client.post("/api/notes/n9/withdraw", json={})).status_code == 404
    await harness.client.post("/api/answer", json={"answers": [{"question": DRY_RUN_QUESTION, "answer": "1"}]})
    final = await harness.wait_state(lambda s: not s["running"])
    assert [(n["id"], n["status"]) for n in final["notes"]] == [("n1", "acknowledged"), ("n2", "withdrawn")]
    late = await harness.client.post("/api/notes", json={"text": "too late"})
    assert late.status_code == 409 and "finished" in late.json()["error"]
    files = run_dir(harness.project, run_id)
    prompt = (files / "iterations" / "03-prompt.md").read_text()
    assert prompt.startswith("## Notes from the operator") and "keep utils/" in prompt and "withdraw this" not in prompt
    for name in ("events.jsonl", "state.json", "report.md"):
        assert secret not in (files / name).read_text(), name


async def test_the_launcher_lists_the_plan_named_with_goal_where_discovery_does_not_look(project: Path) -> None:
    example = project / "examples" / "goal.example.md"
    example.parent.mkdir()
    example.write_text("# Example\n- [ ] One stage :: verify: true\n")
    files = [plan["file"] for plan in list_goals(project, example)]
    assert files.count("examples/goal.example.md") == 1 and "plans/demo.md" in files
    named_again = [plan["file"] for plan in list_goals(project, project / "plans" / "demo.md")]
    assert named_again.count("plans/demo.md") == 1  # a plan discovery finds is not listed twice
    assert "examples/goal.example.md" not in [plan["file"] for plan in list_goals(project)]
