"""The one way kilo-loop runs git, and the one way it finds a project's root.

Environment policy: every git call gets the inherited environment MINUS the variables that would
point git at another repository, index, object store or work tree (GIT_DIR, GIT_WORK_TREE,
GIT_INDEX_FILE, …) or make it run an external program (GIT_EXTERNAL_DIFF), plus
`GIT_OPTIONAL_LOCKS=0` (reading never takes the index lock the agent may need),
`GIT_LITERAL_PATHSPECS=1` (a file named `*` is that file), `GIT_TERMINAL_PROMPT=0` and `LC_ALL=C`.
The loop works on the project it resolved from `-C`/the current directory; an inherited GIT_DIR
(kilo-loop started from a git hook, or inside `git rebase --exec`) must not silently redirect one
call to another repository while the next one resolves the project from the directory. A caller
that needs a variable (a scratch GIT_INDEX_FILE) passes it explicitly in `env`.

Nothing here imports more than the standard library, so the guard hook can use `project_root`.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from kilo_loop.errors import KiloLoopError, UsageError
from kilo_loop.run.layout import LOOP_DIR

REDIRECTS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX", "GIT_COMMON_DIR",
             "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE",
             "GIT_EXTERNAL_DIFF")
POLICY = {"GIT_OPTIONAL_LOCKS": "0", "GIT_LITERAL_PATHSPECS": "1", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}


class GitError(KiloLoopError):
    """git could not be run, or a git command failed; the message says which and why."""


class NotAGitRepo(UsageError):
    """The project is not inside a git work tree."""


def git_env(extra: Mapping[str, str] | None = None, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a git call under the policy above; `extra` is applied last."""
    env = {key: value for key, value in (os.environ if base is None else base).items() if key not in REDIRECTS}
    env.update(POLICY)
    env.update(extra or {})
    return env


def run_git(cwd: Path, *args: str, stdin: bytes | None = None, env: Mapping[str, str] | None = None,
            timeout: float | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run `git <args>` in `cwd`; the exit status is the caller's to judge. GitError if git cannot start
    (or does not finish within `timeout` seconds)."""
    try:
        return subprocess.run(["git", *args], cwd=cwd, input=stdin, env=git_env(env), capture_output=True,
                              stdin=None if stdin is not None else subprocess.DEVNULL, check=False,
                              timeout=timeout)
    except OSError as exc:
        raise GitError(f"cannot run git: {exc}") from exc
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"git {args[0]} did not finish within {timeout} s") from exc


def git_output(cwd: Path, *args: str, stdin: bytes | None = None, env: Mapping[str, str] | None = None,
               what: str | None = None) -> bytes:
    """stdout of `git <args>`; GitError naming `what` (default: the git command) and git's stderr on failure."""
    proc = run_git(cwd, *args, stdin=stdin, env=env)
    if proc.returncode != 0:
        detail = proc.stderr.decode(errors="replace").strip()
        raise GitError(f"{what or 'git ' + args[0] + ' failed'}: {detail}")
    return proc.stdout


def git_root(path: Path) -> Path:
    """The top level of the git work tree holding `path`; NotAGitRepo when there is none."""
    try:
        out = git_output(path, "rev-parse", "--show-toplevel")
    except (GitError, OSError) as exc:  # OSError: `path` is not a directory
        raise NotAGitRepo(f"{path} is not inside a git repository (run `git init` there first)") from exc
    return Path(os.fsdecode(out.rstrip(b"\n")))


def project_root(path: Path | None = None) -> Path:
    """The project of `path` (default: the current directory): its git root; outside a repository the
    nearest directory holding `.kilocode-loop/`, else the directory itself.

    The one project-root lookup: the run (`runner.resolve_project`, which also requires git), the
    settings' config file, report, revert, new-plan and the guard hook all resolve through here.
    """
    start = (path or Path.cwd()).expanduser().resolve()
    try:
        return git_root(start)
    except NotAGitRepo:
        return next((d for d in (start, *start.parents) if (d / LOOP_DIR).is_dir()), start)
