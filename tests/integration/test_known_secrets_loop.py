"""Known secrets masked by value, end to end through the real CLI and the scripted fake agent: a
value that matches no pattern, set in the environment and in the project's ``.env``, printed by
the agent plain, base64-encoded, URL-encoded, inside JSON and wrapped at 100 columns, is in none of
the files under ``.kilocode-loop`` nor on stdout; the run report counts the masks by source."""

from __future__ import annotations

import base64
import json
import secrets
import string
import urllib.parse
from pathlib import Path

from tests.integration.loop_harness import FakeKilo, bash, progress, run_loop, step, text
from tests.integration.test_loop import write_goal

_ALPHABET = string.ascii_letters + string.digits


def _random_value(length: int = 40) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(length))


def _pieces(value: str) -> set[str]:
    """Every 8-character piece of the value, and of its base64 (each alignment) and URL forms."""
    forms = {value, urllib.parse.quote(value, safe="")}
    raw = value.encode()
    for skip in range(3):
        chunk = raw[skip:][: (len(raw) - skip) // 3 * 3]
        forms.add(base64.b64encode(chunk).decode())
    return {form[i:i + 8] for form in forms for i in range(len(form) - 7)}


# what the agent itself wrote there (like any file of the work tree), not the loop
_AGENT_FILES = frozenset({"progress.json", "handoff.md"})


def _leaks(root: Path, pieces: set[str]) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and str(path.relative_to(root)) not in _AGENT_FILES:
            content = path.read_bytes().decode("utf-8", "replace")
            found += [f"{path.relative_to(root)}: {piece}" for piece in pieces if piece in content]
    return found


def test_known_secrets_are_masked_in_every_encoding_everywhere(project: Path, fake: FakeKilo) -> None:
    token, dotenv = _random_value(), _random_value()
    (project / ".env").write_text(f"# local settings\nPORT=3000\nACME_REGION_BLOB={dotenv}\n")
    shown = (
        f"plain {token}\n"
        f"b64 {base64.b64encode(token.encode()).decode()}\n"
        f"url https://deploy.example/hook?t={urllib.parse.quote('/' + token + '+', safe='')}\n"
    )
    wrapped = "x" * 77 + " deploy --token=" + token + '", next'
    wrapped = "\n".join(wrapped[i:i + 100] for i in range(0, len(wrapped), 100))
    json_form = json.dumps({"deploy": {"auth": {"value": token}}, "env": dotenv})
    scenario = [[
        text(f"I found the deploy token: {token}"),
        text(shown),
        bash(f"echo {base64.b64encode(token.encode()).decode()} | base64 -d > /dev/null"),
        bash(f"printf '%s' '{json_form}' > deploy.json"),
        text(f"the log says:\n{wrapped}\nand that is all"),
        progress("stage-1", summary=f"used {token}"),
        step(),
    ]]
    goal = write_goal(project, "# One\n- [ ] Deploy\n")
    run = run_loop(fake, project, scenario, "--goal", str(goal), "-n", "1",
                   env={"ACME_DEPLOY_TOKEN": token})
    assert run.proc.returncode == 0, run.proc.stderr + run.proc.stdout
    pieces = _pieces(token) | _pieces(dotenv)
    assert not _leaks(project / ".kilocode-loop", pieces)
    assert not [piece for piece in pieces if piece in run.proc.stdout + run.proc.stderr]
    report = (run.run_dir / "report.md").read_text()
    assert "Masked:" in report and "environment" in report and "mask file .env" in report, report
    started = [event for event in run.events() if event["type"] == "secrets-masked"]
    registered = started[0]["data"]["registered"]
    assert registered["environment"] >= 1 and registered["mask file .env"] == 1
    assert "REDACTED" in (run.run_dir / "events.jsonl").read_text()
