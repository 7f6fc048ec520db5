"""POST /api/review/gate against a real dashboard and a dry run whose simulator plays the reviewers."""

from __future__ import annotations

import json
from pathlib import Path

from tests.web.conftest import HarnessFactory


async def test_gate_from_the_dashboard(project: Path, make_harness: HarnessFactory) -> None:
    config = project / ".kilocode-loop" / "config.json"
    config.write_text(json.dumps({"review": {"roles": ["code", "security"]}, "reviewGate": "always"}))
    harness_with_config = await make_harness()  # settings are read when the dashboard starts
    client = harness_with_config.client
    nothing = await client.post("/api/review/gate", json={"marks": {}})
    assert nothing.status_code == 409 and "no run is active" in nothing.json()["error"]
    await harness_with_config.start(iterations=1, hitl="on-question")
    state = await harness_with_config.wait_state(lambda s: bool(s.get("reviewGate")))
    gate = state["reviewGate"]
    assert [row["role"] for row in gate["rows"]] == ["code", "security"]
    assert gate["stageId"] == "stage-1" and gate["exit"] == "clean"
    bad_mark = await client.post("/api/review/gate", json={"marks": {gate["rows"][0]["id"]: "later"}})
    assert bad_mark.status_code == 422
    unknown = await client.post("/api/review/gate", json={"marks": {"code:nope": "defer"}})
    assert unknown.status_code == 400
    sent = await client.post("/api/review/gate", json={"marks": {gate["rows"][1]["id"]: "defer"}})
    assert sent.status_code == 200 and sent.json()["reply"] == "none"
    again = await client.post("/api/review/gate", json={"marks": {}})
    assert again.status_code == 409
    final = await harness_with_config.wait_state(lambda s: not s["running"])
    assert final["completedStages"] == ["stage-1"]
