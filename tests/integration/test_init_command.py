"""`kilo-loop init` through its real entry point: flags only (no questions), the questions on a
terminal (a pty), and the refusal to replace files. The agent CLI is a stand-in on PATH that answers
`auth list` the way kilo does."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from kilo_loop.cli import main

FAKE_KILO = """#!{python}
import sys
if sys.argv[1:] == ["auth", "list"]:
    print("└  {count} credentials")
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def agent_path(tmp_path: Path, credentials: int) -> str:
    """A PATH with only a stand-in `kilo` (and git)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    kilo = bin_dir / "kilo"
    kilo.write_text(FAKE_KILO.format(python=sys.executable, count=credentials))
    kilo.chmod(0o755)
    git_dir = os.path.dirname(subprocess.run(["which", "git"], capture_output=True, text=True, check=True).stdout)
    return f"{bin_dir}:{git_dir}"


def environment(tmp_path: Path, path: str) -> dict[str, str]:
    return {"PATH": path, "HOME": str(tmp_path / "home"), "LANG": "C.UTF-8"}


def test_flags_only_writes_the_config_and_plan_and_prints_the_command(
        tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    result = CliRunner().invoke(main, ["init", "--runtime", "kilo", "--max-cost", "3", "--no-dashboard",
                                       "--plan", "Add a --json flag", "--yes"],
                                env=environment(tmp_path, agent_path(tmp_path, credentials=1)))
    assert result.exit_code == 0, result.output
    assert json.loads((project / ".kilocode-loop" / "config.json").read_text()) == \
        {"runtime": "kilo", "maxCost": 3.0, "dashboard": False}
    plan = project / ".kilo" / "plans" / "add-a-json-flag.md"
    assert plan.read_text().startswith("# Add a --json flag\n")
    assert "✓ kilo is ready: 1 credential stored" in result.output
    assert "  kilo-loop --goal .kilo/plans/add-a-json-flag.md\n" in result.output


def test_it_refuses_to_replace_without_force(tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    config = project / ".kilocode-loop" / "config.json"
    config.parent.mkdir()
    config.write_text('{"verify": "pytest -q"}')
    env = environment(tmp_path, agent_path(tmp_path, credentials=0))
    refused = CliRunner().invoke(main, ["init", "--yes"], env=env)
    assert refused.exit_code == 2
    assert ".kilocode-loop/config.json already exists: pass --force" in refused.output
    assert config.read_text() == '{"verify": "pytest -q"}'
    forced = CliRunner().invoke(main, ["init", "--yes", "--force"], env=env)
    assert forced.exit_code == 0, forced.output
    assert json.loads(config.read_text()) == {"verify": "pytest -q", "runtime": "kilo", "dashboard": True}
    assert "! kilo: no credentials stored: log in with `kilo auth login`" in forced.output
    assert "kilo-loop new-plan" in forced.output


def test_a_plan_that_exists_is_not_replaced(tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    plan = project / ".kilo" / "plans" / "ship-it.md"
    plan.parent.mkdir(parents=True)
    plan.write_text("# mine\n- [ ] keep me\n")
    result = CliRunner().invoke(main, ["init", "--plan", "Ship it", "--yes"],
                                env=environment(tmp_path, agent_path(tmp_path, credentials=1)))
    assert result.exit_code == 2 and ".kilo/plans/ship-it.md already exists" in result.output
    assert plan.read_text() == "# mine\n- [ ] keep me\n"
    assert not (project / ".kilocode-loop" / "config.json").exists()


class Terminal:
    """A process on a pseudo-terminal: read until a text appears, then type."""

    def __init__(self, command: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.fd, child = pty.openpty()
        self.process = subprocess.Popen(command, cwd=cwd, env=env, stdin=child, stdout=child, stderr=child)
        os.close(child)
        self.seen = ""

    def expect(self, text: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.seen:
            left = deadline - time.monotonic()
            assert left > 0, f"never saw {text!r}; saw:\n{self.seen}"
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                try:
                    self.seen += os.read(self.fd, 4096).decode("utf-8", "replace")
                except OSError:  # the child closed the terminal
                    assert text in self.seen, f"never saw {text!r}; saw:\n{self.seen}"

    def type(self, line: str) -> None:
        os.write(self.fd, (line + "\r").encode())

    def close(self) -> int:
        code = self.process.wait(timeout=60)
        os.close(self.fd)
        return code


def test_the_questions_on_a_terminal(tmp_path: Path, project: Path) -> None:
    env = {**environment(tmp_path, agent_path(tmp_path, credentials=2)), "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    terminal = Terminal([sys.executable, "-m", "kilo_loop", "init"], project, env)
    try:
        terminal.expect("Agent CLI (kilo, opencode, claude, codex, gemini, cursor) [kilo]:")
        terminal.type("")
        terminal.expect("✓ kilo is ready: 2 credentials stored")
        terminal.expect("Model, as the CLI names it")
        terminal.type("anthropic/claude-sonnet-4")
        terminal.expect("Budget per run in USD")
        terminal.type("lots")
        terminal.expect("Enter a number of dollars")
        terminal.type("$7.5")
        terminal.expect("Serve the dashboard during runs [Y/n]:")
        terminal.type("n")
        terminal.expect("Describe the first plan in one line")
        terminal.type("Fix the flaky export test")
        terminal.expect("kilo-loop --goal .kilo/plans/fix-the-flaky-export-test.md")
    finally:
        code = terminal.close()
    assert code == 0, terminal.seen
    assert json.loads((project / ".kilocode-loop" / "config.json").read_text()) == \
        {"runtime": "kilo", "model": "anthropic/claude-sonnet-4", "maxCost": 7.5, "dashboard": False}
    assert (project / ".kilo" / "plans" / "fix-the-flaky-export-test.md").is_file()
