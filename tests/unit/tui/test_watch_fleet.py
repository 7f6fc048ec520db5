"""`kilo-loop watch` on a fleet dashboard speaks its routes (`/api/runs/ID/…`): the state, a note, an answer and
a control land in the run's inbox; an empty note and a revert get the fleet's refusals in words."""

from __future__ import annotations

from pathlib import Path

import httpx
import orjson
import pytest

from kilo_loop.fleet.app import create_fleet_app
from kilo_loop.fleet.inbox import INBOX_FILE, InboxCommand, parse_command
from kilo_loop.fleet.sources import LocalRuns
from kilo_loop.tui.client import ApiRefused, DashboardClient
from kilo_loop.tui.target import from_url
from kilo_loop.web.security import SecurityMiddleware, SecurityPolicy

TOKEN = "t0ken-for-tests"


async def test_a_fleet_run_is_steered_through_its_inbox(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs" / "r1"
    run_dir.mkdir(parents=True)
    (run_dir / "state.json").write_bytes(orjson.dumps({
        "runId": "r1", "status": "waiting-answer", "goalTitle": "Plan one", "stages": [],
        "pendingQuestions": [{"question": "Which DB?", "options": ["pg", "sqlite"]}]}))
    app = SecurityMiddleware(create_fleet_app(LocalRuns(lambda: {"r1": run_dir}, dict)),
                             SecurityPolicy(frozenset({"testserver"}), TOKEN))
    target = from_url(f"http://testserver/?token={TOKEN}&run=r1")
    client = DashboardClient(target, transport=httpx.ASGITransport(app=app))
    try:
        assert (await client.state())["goalTitle"] == "Plan one"
        await client.note("use utils/")
        await client.answer([("Which DB?", "pg")])
        await client.control("pause")
        with pytest.raises(ApiRefused, match="empty"):
            await client.note("   ")
        with pytest.raises(ApiRefused, match="does not revert"):
            await client.revert(1)
    finally:
        await client.close()
    commands = [parse_command(orjson.loads(line)) for line in (run_dir / INBOX_FILE).read_text().splitlines()]
    assert [c.command for c in commands] == ["note", "answer", "pause"]
    assert commands[1] == InboxCommand("answer", answers=("pg",))
