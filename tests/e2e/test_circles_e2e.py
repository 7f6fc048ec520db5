"""Going in circles, end to end: the loop's real entry point drives the real `kilo` CLI against the
scripted model server.

- thrash: an agent that edits a different line each iteration while the same verify keeps failing is
  stopped by the ladder (a fresh session with a step-back prompt, then — nobody to ask here — the
  stop with exit 4) within K+2 iterations, with the diagnosis in report.md;
- oscillation: an agent that alternates between two versions of a file is caught on the first return;
- doom loop: a session that repeats `cat README.md` 50 times is ended after 8 calls and the saving is
  reported — under serve by aborting the session through the server's API, under run by ending the
  CLI's process group (the two paths differ, so both run).

Thrash and oscillation are the loop's own decisions: they run once, under the default transport
(serve: the warm server keeps four iterations' CLI start-up off the 2 cores these tests share).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import BOTH_TRANSPORTS, Loop, bash, iteration_marker, iteration_requests, write, write_progress
from .fake_provider import FakeProvider, calls, say

pytestmark = pytest.mark.e2e

THRASH_PLAN = "# Fix the parser\n\n- [ ] Make the parser pass :: verify: sh check.sh\n"
# The verify script fails the same way every time; its output names a temp path and a timing that
# differ from run to run (the signature leaves them out).
CHECK = ('echo "FAILED tests/test_parser.py::test_nested - AssertionError: assert 3 == 4"\n'
         'echo "wrote $(mktemp -d)/log.txt in $$ms"\nexit 1\n')


def script_a_thrashing_agent(provider: FakeProvider, project: Path, iterations: int) -> None:
    for n in range(1, iterations + 1):
        provider.add_turns(
            calls(write(project / "parser.py", f"DEPTH = {n}  # attempt {n}\n"),
                  write_progress(project, n, "stage-1", "done", percent=90)),
            say(f"Attempt {n}: the parser is fixed."),
            marker=iteration_marker(n),
        )


def test_thrash_is_stopped_by_the_ladder_with_a_diagnosis(loop: Loop, fake_provider: FakeProvider,
                                                          git_project: Path) -> None:
    project = git_project
    (project / "plan.md").write_text(THRASH_PLAN, encoding="utf-8")
    (project / "check.sh").write_text(CHECK, encoding="utf-8")
    script_a_thrashing_agent(fake_provider, project, 8)

    run = loop.run("kilo", project, "--goal", "plan.md", "-n", "8", "--max-same-failure", "3")

    assert run.returncode == 4, run.describe()  # stalled
    state = run.state()
    assert state["status"] == "stalled" and "going in circles (thrash)" in state["stopReason"], run.describe()
    assert state["iteration"] <= 3 + 2, run.describe()
    steps = [e["data"]["step"] for e in run.events("circle")]
    assert steps == ["fresh-session", "stop"], run.describe()  # nobody to ask: no terminal, no dashboard
    fresh = run.prompt(4)
    assert "## Going in circles" in fresh and "Step back" in fresh and "test_parser.py::test_nested" in fresh
    report = (run.run_dir / "report.md").read_text(encoding="utf-8")
    diagnosis = report.split("## Going in circles", 1)[1]
    assert "Kind: thrash" in diagnosis and "Iterations: 1, 2, 3, 4" in diagnosis and "parser.py" in diagnosis
    assert "Failure signature" in diagnosis and "Cost spent on it" in diagnosis
    assert run.report(4)["circles"]["sameFailureStreak"] == 4


def test_oscillation_is_caught_on_the_first_return(loop: Loop, fake_provider: FakeProvider,
                                                   git_project: Path) -> None:
    project = git_project
    (project / "plan.md").write_text("# Pick a style\n\n- [ ] Settle the style\n", encoding="utf-8")
    for n, style in enumerate(("tabs", "spaces", "tabs", "spaces"), 1):
        fake_provider.add_turns(
            calls(write(project / "style.cfg", f"indent = {style}\n"),
                  write_progress(project, n, "stage-1", "in_progress", percent=50)),
            say(f"Switched to {style}."),
            marker=iteration_marker(n),
        )

    run = loop.run("kilo", project, "--goal", "plan.md", "-n", "4")

    found = run.events("circle")
    assert [(e["iteration"], e["data"]["kind"], e["data"]["step"]) for e in found][:1] == \
        [(3, "oscillation", "fresh-session")], run.describe()
    assert "came back to the checkpoint before iteration 2" in found[0]["message"]
    assert "## Going in circles" in run.prompt(4)
    assert run.report(3)["circles"]["oscillation"]


@BOTH_TRANSPORTS
@pytest.mark.timeout(360)
def test_a_session_repeating_one_call_is_ended_after_eight(loop: Loop, fake_provider: FakeProvider,
                                                           git_project: Path, transport: str) -> None:
    """Two kilo starts under `run` (each took 40-50 s of a shared 2-core machine here: 131 s in all),
    hence the longer timeout."""
    project = git_project
    (project / "plan.md").write_text("# Notes\n\n- [ ] Write notes.txt :: verify: test -f notes.txt\n",
                                     encoding="utf-8")
    fake_provider.add_turns(*[bash("cat README.md") for _ in range(50)], say("done"), marker=iteration_marker(1))
    fake_provider.add_turns(
        calls(write(project / "notes.txt", "notes\n"), write_progress(project, 2, "stage-1", "done", percent=100)),
        say("Notes written."),
        marker=iteration_marker(2),
    )

    run = loop.run("kilo", project, "--goal", "plan.md", "-n", "3")

    assert run.returncode == 0 and run.state()["status"] == "done", run.describe()
    first = [e for e in run.events("tool") if e.get("iteration") == 1]
    assert len(first) == 8, run.describe()
    assert len(iteration_requests(fake_provider, 1)) <= 10  # the model was not asked on after the end
    ended = run.events("session-ended-early")
    assert len(ended) == 1 and ended[0]["data"]["calls"] == 8, run.describe()
    assert ended[0]["data"]["tokens"] > 0 and ended[0]["data"]["saved_tokens"] > 0
    assert "saved up to" in ended[0]["message"]
    assert run.report(1)["outcome"] == "ended-early"
    assert "ended early by the loop" in run.prompt(2)
    assert "Sessions ended early (doom loops): 1" in (run.run_dir / "report.md").read_text(encoding="utf-8")
