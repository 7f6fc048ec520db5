"""`kilo-loop mcp` driven by the official MCP SDK's own client over stdio: it lists its tools, starts a dry
run, waits for the run's question, answers it, sends a note the agent acknowledges, and reads the final
report and receipts; a malformed call and a plan outside the project get tool errors, and the server lives on."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.integration.loop_harness import init_repo

REPO = Path(__file__).resolve().parents[2]
PLAN = "# Two steps\n\n- [ ] First step\n- [ ] Second step\n- [ ] Third step\n"
EXPECTED_TOOLS = {"list_plans", "start_run", "run_status", "wait_for_change", "answer_question", "send_note",
                  "pause", "resume", "stop", "report"}


def _server(project: Path) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILO_LOOP_")}
    env.update({"PYTHONPATH": str(REPO / "src"), "KILO_LOOP_DRY_RUN_DELAY": "0.01", "NO_COLOR": "1"})
    return StdioServerParameters(command=sys.executable, args=["-m", "kilo_loop", "mcp", "-C", str(project)],
                                 env=env, cwd=str(project))


def _data(result: Any) -> Any:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        content = result.structured_content
        return content.get("result", content) if isinstance(content, dict) and set(content) == {"result"} else content
    return json.loads(result.content[0].text)


def _error(result: Any) -> str:
    assert result.is_error, result
    return str(result.content[0].text)


async def _wait_until(session: ClientSession, seq: int, wanted: set[str]) -> dict[str, Any]:
    for _ in range(60):
        status = _data(await session.call_tool("wait_for_change", {"since_seq": seq, "timeout_s": 10}))
        if status["status"] in wanted:
            return dict(status)
        seq = status["seq"]
    raise AssertionError(f"the run never reached {wanted}: {status}")


async def test_a_chat_agent_drives_a_dry_run_through_kilo_loop_mcp(tmp_path: Path) -> None:
    project = init_repo(tmp_path / "repo")
    (project / "plans").mkdir()
    (project / "plans" / "steps.md").write_text(PLAN, encoding="utf-8")
    outside = tmp_path / "outside.md"
    outside.write_text(PLAN, encoding="utf-8")
    async with stdio_client(_server(project)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {tool.name for tool in (await session.list_tools()).tools}
        assert tools >= EXPECTED_TOOLS

        plans = _data(await session.call_tool("list_plans", {}))
        assert any(p.get("file") == "plans/steps.md" for p in plans), plans
        assert "needs a budget" in _error(await session.call_tool("start_run", {"plan": "plans/steps.md", "dry_run": True}))
        assert "outside" in _error(await session.call_tool(
            "start_run", {"plan": "../outside.md", "max_cost_usd": 1, "dry_run": True}))
        assert _error(await session.call_tool("start_run", {"plan": 42, "max_cost_usd": "lots"}))  # malformed
        assert "no run" in _error(await session.call_tool("send_note", {"text": "hello"}))

        started = _data(await session.call_tool("start_run", {"plan": "plans/steps.md", "max_cost_usd": 1.0,
                                                              "iterations": 4, "dry_run": True}))
        run_id = started["runId"]
        asking = await _wait_until(session, started["seq"], {"waiting-answer"})
        assert asking["pendingQuestions"], asking
        assert "empty" in _error(await session.call_tool("send_note", {"text": "  "}))
        note = _data(await session.call_tool("send_note", {"text": "keep the helpers in utils/"}))
        assert note["id"] == "n1" and note["status"] == "queued"
        option = asking["pendingQuestions"][0]["options"][0]
        assert _data(await session.call_tool("answer_question", {"answers": [option]}))["answered"] == 1

        final = await _wait_until(session, asking["seq"], {"done", "done-with-errors", "stopped", "error"})
        assert final["status"] == "done", final
        assert [(n["id"], n["status"]) for n in final["notes"]] == [("n1", "acknowledged")]
        assert "finished" in _error(await session.call_tool("send_note", {"text": "too late"}))

        report = (await session.call_tool("report", {})).content[0].text
        assert "keep the helpers in utils/" in report
        resource = await session.read_resource(f"kilo-loop://runs/{run_id}/receipts")
        assert json.loads(resource.contents[0].text)  # one receipt per stage

    events = [json.loads(line) for line in
              (project / ".kilocode-loop" / "runs" / run_id / "events.jsonl").read_text().splitlines()]
    tools_called = {e["data"]["tool"] for e in events if e["type"] in ("mcp-call", "mcp-read")}
    assert {"start_run", "wait_for_change", "send_note", "answer_question"} <= tools_called
    assert not any("token" in json.dumps(e).lower() and "tokens" not in json.dumps(e).lower() for e in events)
