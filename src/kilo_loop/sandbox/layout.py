"""The I/O half of the policy: which paths of this project the jail must treat specially.

The git directory (for a linked worktree, its own gitdir and the common dir), the loop's own files,
the stage's protected paths and the agent CLIs' project config, each only when it exists (bubblewrap
binds existing paths). A submodule's work tree is refused: its git directory lives inside the
superproject's, which the jail would have to open up.
"""

from __future__ import annotations

import glob
from collections.abc import Iterable, Sequence
from pathlib import Path

from kilo_loop.run.layout import LOOP_DIR
from kilo_loop.sandbox.policy import ProjectFacts, SandboxError

# Inside .kilocode-loop/: read-only for the agent (progress.json and handoff.md stay writable).
LOOP_READONLY = ("config.json", "runs", "answers.json", "ledger", "trash", "worktrees", "goals", ".gitignore",
                 "checkpoints")
LOOP_WRITABLE = ("progress.json", "handoff.md")
_WILDCARDS = frozenset("*?[")


def _gitdir_of(dot_git: Path) -> Path:
    """`.git` is a directory, or a file `gitdir: <path>` (linked worktree, submodule)."""
    if dot_git.is_dir():
        return dot_git.resolve()
    text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
    if not text.startswith("gitdir:"):
        raise SandboxError(f"{dot_git} is neither a git directory nor a `gitdir:` file")
    target = Path(text[len("gitdir:"):].strip())
    return (dot_git.parent / target).resolve() if not target.is_absolute() else target.resolve()


def git_dirs(project: Path) -> tuple[Path, ...]:
    """The git directories the jail binds read-only; () outside a repository."""
    dot_git = project / ".git"
    if not dot_git.exists():
        return ()
    gitdir = _gitdir_of(dot_git)
    if "modules" in gitdir.parts and not (gitdir / "commondir").exists():
        raise SandboxError(f"{project} is a git submodule (its git directory is {gitdir}): the jail cannot keep "
                           "the superproject's git directory read-only and the submodule's usable; run the loop on "
                           "the superproject, or with --sandbox off")
    found = [dot_git.resolve(), gitdir]
    common = gitdir / "commondir"
    if common.is_file():
        found.append((gitdir / common.read_text(encoding="utf-8").strip()).resolve())
    return tuple(dict.fromkeys(found))


def static_prefix(pattern: str) -> str:
    """The part of a glob before its first wildcard segment: `tests/**` → `tests`."""
    parts: list[str] = []
    for part in pattern.split("/"):
        if _WILDCARDS & set(part):
            break
        parts.append(part)
    return "/".join(parts)


def expand_protect(project: Path, globs: Iterable[str]) -> tuple[Path, ...]:
    """Existing files and directories the protect globs name (a `dir/**` glob binds `dir` itself, so a
    new file under it is refused too)."""
    found: list[Path] = []
    for pattern in globs:
        pattern = pattern.strip().lstrip("/")
        if not pattern:
            continue
        prefix = static_prefix(pattern)
        if prefix and pattern.endswith(("/**", "/*")) and (project / prefix).is_dir():
            found.append(project / prefix)
            continue
        found += [Path(m) for m in glob.glob(str(project / pattern), recursive=True, include_hidden=True)
                  if Path(m).exists()]
    return _outermost(found)


def _outermost(paths: Iterable[Path]) -> tuple[Path, ...]:
    """Drop paths inside another listed directory (one bind covers them)."""
    unique = sorted(dict.fromkeys(paths), key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in unique:
        if not any(path == k or k in path.parents for k in kept):
            kept.append(path)
    return tuple(kept)


def existing(project: Path, relative: Iterable[str]) -> tuple[Path, ...]:
    return tuple(project / name for name in relative if (project / name).exists())


def project_facts(project: Path, protect: Sequence[str] = (), agent_config: Iterable[str] = (),
                  goal_file: Path | None = None) -> ProjectFacts:
    project = project.resolve()
    loop = project / LOOP_DIR
    readonly = list(existing(loop, LOOP_READONLY))
    if goal_file is not None and goal_file.exists() and project in goal_file.resolve().parents:
        readonly.append(goal_file.resolve())
    return ProjectFacts(
        project=project,
        git_dirs=git_dirs(project),
        loop_readonly=tuple(readonly),
        loop_writable=existing(loop, LOOP_WRITABLE),
        protected=expand_protect(project, protect),
        agent_configs=existing(project, agent_config),
    )
