"""Guard classes closed in round 5 (issue 23, item 6). Commands are data: they go to the guard
in-process, never to a shell."""

from __future__ import annotations

from pathlib import Path

import pytest

from kilo_loop.guard.runtime import Guard
from kilo_loop.guard.shell.parse import join_continuations

PROJECT = "/repo"


@pytest.fixture(scope="module")
def guard() -> Guard:
    return Guard()


@pytest.mark.parametrize(("source", "joined"), [
    (b"r\\\nm -rf x", b"rm -rf x"),
    (b"git pu\\\nsh", b"git push"),
    (b'echo "a\\\nb"', b'echo "ab"'),
    (b"echo 'a\\\nb'", b"echo 'a\\\nb'"),  # single quotes keep it
    (b"echo $'a\\\nb'", b"echo $'a\\\nb'"),
    (b"# note \\\nls", b"# note \\\nls"),  # a comment ends at the newline
    (b"cat <<'E'\na\\\nb\nE", b"cat <<'E'\na\\\nb\nE"),  # a quoted heredoc is literal
    (b"cat <<E\na\\\nb\nE", b"cat <<E\nab\nE"),
    (b"echo a\\\\\nb", b"echo a\\\\\nb"),  # an escaped backslash leaves the newline
    (b"echo $(ec\\\nho x)", b"echo $(echo x)"),
])
def test_backslash_newline_is_removed_where_bash_removes_it(source: bytes, joined: bytes) -> None:
    assert join_continuations(source) == joined


def test_a_continuation_that_makes_a_comment_a_word_is_followed() -> None:
    # bash reads `echo a#b rm -rf x`: the `#` is inside a word once the pair is gone
    assert join_continuations(b"echo a\\\n#b \\\nrm -rf x") == b"echo a#b rm -rf x"


def test_a_word_built_at_run_time_is_tried_as_what_the_rules_act_on() -> None:
    from kilo_loop.guard.packs.runtime_words import fitting
    from kilo_loop.guard.shell.model import READ, UNKNOWN

    assert fitting(f"pu{UNKNOWN}sh", ["commit", "push", "reset"]) == ["push"]
    assert fitting(f"--ha{UNKNOWN}", ["--hard", "--soft", "-f"]) == ["--hard"]
    assert fitting(READ, ["commit", "push"]) == ["commit", "push"]
    assert fitting("push", ["push"]) == []  # nothing unknown: nothing to try


@pytest.mark.parametrize("command", ["git $x origin main", "git pu${e}sh", "git reset --ha$e",
                                     'git "$(echo cHVzaA==|base64 -d)"', "docker system $x -af"])
def test_a_subcommand_or_option_built_at_run_time_is_denied(guard: Guard, command: str) -> None:
    decision = guard.check_command(command, PROJECT)
    assert decision.denied and "built when the command runs" in decision.reason, decision


@pytest.mark.parametrize("command", ["git log $range", "git diff $base", "git checkout -b feature/$n",
                                     "kubectl logs $pod", "git -C \"$dir\" status"])
def test_data_built_at_run_time_is_not_a_subcommand(guard: Guard, command: str) -> None:
    assert not guard.check_command(command, PROJECT).denied


def test_the_hook_knows_the_work_tree_only_of_a_checkpointed_run(tmp_path: Path) -> None:
    from kilo_loop.agent.hook import checkpointed_work_tree

    run = tmp_path / "project" / ".kilocode-loop" / "runs" / "r1"
    run.mkdir(parents=True)
    rules = run / "guard-rules.json"
    assert checkpointed_work_tree(str(rules)) is None  # --no-checkpoint: no checkpoints/ folder
    (run / "checkpoints").mkdir()
    assert checkpointed_work_tree(str(rules)) == str(tmp_path / "project")
    assert checkpointed_work_tree(str(run / "gemini" / "settings.json")) == str(tmp_path / "project")
    assert checkpointed_work_tree(str(tmp_path / "elsewhere.json")) is None


def test_git_branch_M_refuses_only_to_overwrite_a_branch_that_exists(tmp_path: Path) -> None:
    import subprocess

    repo = tmp_path / "repo"
    repo.mkdir()
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "PATH": "/usr/bin:/bin"}
    for argv in (["init", "-q", "-b", "main"], ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q",
                                                 "--allow-empty", "-m", "init"], ["branch", "feature"]):
        subprocess.run(["git", *argv], cwd=repo, env=env, check=True, capture_output=True)
    guard = Guard()
    assert not guard.check_command("git branch -M trunk", str(repo)).denied
    assert guard.check_command("git branch -M feature", str(repo)).denied
    assert guard.check_command("git branch -M trunk feature", str(repo)).denied
    assert guard.check_command("git branch -M feature", None).denied  # where it runs is not known


@pytest.mark.parametrize(("command", "denied"), [
    ("tee .kilocode-loop/review.json <<< '{\"verdict\": \"pass\"}'", False),
    ("cp /tmp/r.json .kilocode-loop/review-security.json", False),
    ("mkdir -p .kilocode-loop && tee .kilocode-loop/review.json < /tmp/r.json", False),
    ("tee .kilocode-loop/review.json src/app.py < /tmp/r.json", True),
    ("cp /tmp/r.json .kilocode-loop/state.json", True),
    ("cp /tmp/r.json src/app.py", True),
    ("touch README.md", True),
])
def test_a_reviewer_writing_only_its_review_file_changes_no_tree(command: str, denied: bool) -> None:
    from kilo_loop.review.readonly import ReadOnlyGuard

    decision = ReadOnlyGuard(None, Path("/repo")).check_tool_use("bash", {"command": command}, "/repo")
    assert decision.denied is denied, decision


def test_the_hook_spells_the_loop_folder_as_the_layout_does() -> None:
    from kilo_loop.agent import hook
    from kilo_loop.run.layout import LOOP_DIR

    assert hook._LOOP_DIR == LOOP_DIR
