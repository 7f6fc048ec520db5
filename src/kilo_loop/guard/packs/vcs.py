"""Version control beyond git's own words: branches a rename would overwrite, and the front-ends
that push, commit or throw work away under other names (jj, Mercurial, Sapling)."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable

from kilo_loop.guard.packs.paths import PathPolicy
from kilo_loop.guard.packs.rules import Check, Rule, operands
from kilo_loop.guard.shell.model import UNKNOWN, SimpleCommand, has_option

_JJ = ("jj",)
_HG = ("hg", "sl", "chg")
_PUBLISH = "the agent never pushes; the operator publishes the work"
_COMMITS = "the agent never commits; the loop checkpoints and the operator commits"
_DISCARDS = "it throws away changes or commits for good"


def branch_exists(name: str, cwds: Iterable[str | None]) -> bool | None:
    """Whether the git branch `name` exists in the repository of every working directory (None when
    that cannot be known: a directory or the name only known at run time)."""
    if UNKNOWN in name or not name:
        return None
    answers: set[bool] = set()
    for cwd in cwds:
        if cwd is None:
            return None
        common = _common_dir(cwd)  # no repository there: git fails, no branch is touched
        answers.add(common is not None and _has_ref(common, "refs/heads/" + name))
    return answers.pop() if len(answers) == 1 else None


def _common_dir(start: str) -> str | None:
    directory = start
    while True:
        dot_git = posixpath.join(directory, ".git")
        if os.path.isdir(dot_git):
            return dot_git
        if os.path.isfile(dot_git):  # a linked worktree: `gitdir: …`, whose commondir has the refs
            return _linked_common_dir(dot_git)
        parent = posixpath.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def _linked_common_dir(dot_git: str) -> str | None:
    try:
        with open(dot_git, encoding="utf-8") as handle:
            line = handle.readline().strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    gitdir = posixpath.join(posixpath.dirname(dot_git), line[7:].strip())
    try:
        with open(posixpath.join(gitdir, "commondir"), encoding="utf-8") as handle:
            return posixpath.normpath(posixpath.join(gitdir, handle.read().strip()))
    except OSError:
        return gitdir


def _has_ref(git_dir: str, ref: str) -> bool:
    if os.path.isfile(posixpath.join(git_dir, ref)):
        return True
    try:
        with open(posixpath.join(git_dir, "packed-refs"), encoding="utf-8") as handle:
            return any(line.rstrip("\n").endswith(" " + ref) for line in handle)
    except OSError:
        return False


VCS_WORDS: dict[str, dict[str, None]] = {}
"""Per front-end, the subcommands the `_first` checks act on (for words built at run time)."""


def _first(names: tuple[str, ...], *words: str, unless: tuple[str, ...] = ()) -> Check:
    for name in names:
        VCS_WORDS.setdefault(name, {}).update(dict.fromkeys(words))

    def check(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
        found = operands(cmd.args, ("-R", "--repository", "--cwd", "-r", "--config"))
        if found[:1] and found[0] in words and not (unless and has_option(cmd.args, *unless)):
            return ""
        return None
    return check


def vcs_rules() -> tuple[Rule, ...]:
    """jj, hg and sl: publishing, committing and discarding, as the git pack forbids them for git."""
    dry = ("-n", "--dry-run")
    return (
        Rule("vcs-push", _PUBLISH, _JJ, words=("git", "push"), unless=("--dry-run",)),
        Rule("vcs-push", _PUBLISH, _HG, words=("push",)),
        Rule("vcs-push", _PUBLISH, _HG, words=("phase",), flags=("-p", "--public")),
        Rule("vcs-commit", _COMMITS, _JJ, words=("commit",)),
        Rule("vcs-commit", _COMMITS, _HG, check=_first(_HG, "commit", "ci", "amend", "metaedit", "uncommit",
                                                        "fold", "absorb")),
        Rule("vcs-discard", _DISCARDS, _JJ, check=_first(_JJ, "abandon", "restore", "undo", "squash",
                                                          "unsquash", "rebase", "split", "backout", "edit")),
        Rule("vcs-discard", _DISCARDS, _JJ, words=("op", "restore")),
        Rule("vcs-discard", _DISCARDS, _JJ, words=("op", "revert")),
        Rule("vcs-discard", _DISCARDS, _JJ, words=("op", "abandon")),
        Rule("vcs-discard", _DISCARDS, _JJ, words=("op", "undo")),
        Rule("vcs-discard", _DISCARDS, _JJ, words=("bookmark", "delete")),
        Rule("vcs-discard", _DISCARDS, _JJ, words=("bookmark", "forget")),
        Rule("vcs-discard", _DISCARDS, _JJ, words=("bookmark", "set"), flags=("--allow-backwards", "-B")),
        Rule("vcs-discard", _DISCARDS, _JJ, words=("bookmark", "move"), flags=("--allow-backwards", "-B")),
        Rule("vcs-discard", _DISCARDS, _JJ, words=("branch", "delete")),
        Rule("vcs-discard", _DISCARDS, _HG, check=_first(_HG, "strip", "rollback", "histedit", "rebase", "prune",
                                                          "hide", "purge", "clean", "revert", unless=dry)),
        Rule("vcs-discard", _DISCARDS, _HG, check=_first(_HG, "update", "up", "checkout", "co", "goto"),
             flags=("-C", "--clean")),
        Rule("vcs-discard", _DISCARDS, _HG, words=("shelve",), flags=("-d", "--delete", "--cleanup")),
        Rule("vcs-discard", _DISCARDS, _HG, words=("bookmark",), flags=("-d", "--delete", "-f", "--force")),
    )
