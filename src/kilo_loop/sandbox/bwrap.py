"""A `JailPolicy` → the bubblewrap command line (pure: no file system, no process).

Mount order matters: bubblewrap applies its options left to right, and a later mount over a path
hides an earlier one. So: the read-only root, the private /tmp, /dev and /proc, the private HOME,
the project read-write, the read-only overlays inside it (.git, the loop's files, protected paths,
agent config), and last what must stay writable inside those overlays (the contract files, the
CLI's own state under the private HOME).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from kilo_loop.sandbox.policy import JailPolicy, is_under

PRIVATE_DIRS = (Path("/tmp"), Path("/var/tmp"))


def _binds(flag: str, paths: Iterable[Path]) -> list[str]:
    out: list[str] = []
    for path in dict.fromkeys(paths):
        out += [flag, str(path), str(path)]
    return out


def _hidden(path: Path, policy: JailPolicy) -> bool:
    """Under a directory the jail replaces (private /tmp, private HOME): must be bound to be seen."""
    hidden = [*PRIVATE_DIRS]
    if policy.home is not None:
        hidden.append(policy.home)
    return any(is_under(path, root) for root in hidden)


def program_roots(programs: Iterable[Path]) -> list[Path]:
    """The directories right below a private /tmp that hold a program: bound read-only over the private
    one, so a CLI, a venv or a clone under /tmp still runs in the jail (the project is bound after)."""
    roots: list[Path] = []
    for path in programs:
        for private in PRIVATE_DIRS:
            if path != private and is_under(path, private):
                roots.append(private / path.relative_to(private).parts[0])
    return roots


def _base(policy: JailPolicy) -> list[str]:
    argv = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for private in PRIVATE_DIRS:
        argv += ["--tmpfs", str(private)]
    argv += _binds("--ro-bind", program_roots(policy.programs))
    argv += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session",
             "--cap-drop", "ALL"]
    if policy.network != "full":
        argv.append("--unshare-net")
    return argv


def _project(policy: JailPolicy) -> list[str]:
    facts = policy.facts
    argv = _binds("--ro-bind" if policy.role == "reviewer" else "--bind", [facts.project])
    read_only = [*facts.git_dirs, *facts.loop_readonly, *facts.protected, *facts.agent_configs]
    # A git dir outside the project (a linked worktree's) is read-only already, unless it is hidden.
    return argv + _binds("--ro-bind", [p for p in read_only if is_under(p, facts.project) or _hidden(p, policy)])


def _writable(policy: JailPolicy) -> list[str]:
    """What stays writable inside the read-only overlays: the contract files, a reviewer's verdict."""
    facts = policy.facts
    if policy.role == "agent":
        return _binds("--bind", [p for p in facts.loop_writable if not any(is_under(p, q) for q in facts.protected)])
    if policy.role == "reviewer" and policy.review_file is not None:
        return _binds("--bind", [policy.review_file])
    return []


def _home(policy: JailPolicy) -> list[str]:
    if policy.home is None:
        return []
    argv = ["--tmpfs", str(policy.home)]
    argv += _binds("--ro-bind", [*policy.home_ro, *(p for p in policy.extra_ro if _hidden(p, policy))])
    return argv + _binds("--bind", policy.home_rw)


def _layers(policy: JailPolicy) -> list[str]:
    """A HOME that holds the project is replaced before the project is bound (else it would hide it);
    any other HOME after (so a HOME inside the project, `--isolate-home`, is still replaced)."""
    home, project = policy.home, policy.facts.project
    if home is not None and is_under(project, home):
        return [*_home(policy), *_project(policy), *_writable(policy)]
    return [*_project(policy), *_home(policy), *_writable(policy)]


def bwrap_argv(policy: JailPolicy, command: list[str], bwrap: str = "bwrap") -> list[str]:
    """`bwrap <mounts…> --chdir <project> -- <command…>`."""
    if not command:
        raise ValueError("nothing to run in the jail")
    return [bwrap, *_base(policy), *_layers(policy), *_binds("--ro-bind", policy.bind_ro), *policy.extra_args,
            "--chdir", str(policy.facts.project), "--", *command]
