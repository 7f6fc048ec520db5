"""git: the agent never commits, pushes or rewrites history, never discards uncommitted work,
and never makes git run a shell command of its choosing.

Options are matched the way git parses them (`--har` is `--hard`, `-fdx` holds `-f`); aliases
from `-c alias.X=…` are resolved case-insensitively before the rules look at the subcommand.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from kilo_loop.guard.packs.paths import PathPolicy, absolute, in_git_dir
from kilo_loop.guard.packs.rules import Check, Pack, Rule, operands
from kilo_loop.guard.packs.vcs import VCS_WORDS, branch_exists, vcs_rules
from kilo_loop.guard.shell.git import GitCall, exec_config_key, parse_git_argv
from kilo_loop.guard.shell.model import UNKNOWN, SimpleCommand, has_option

_ABORT = ("--abort", "--quit", "--skip", "--show-current-patch")
_ACTED_ON: dict[str, None] = dict.fromkeys(("-f", "-d", "-D", "-B", "-C", "--force", "--mirror", "--delete",
                                             "--prune", "--soft", "--force-with-lease", "--force-if-includes",
                                             "submodule deinit", "reflog expire", "reflog delete", "--exec-path",
                                             "--template"))
"""The subcommands and options the checks below act on, in rule order (each `_git` adds its own)."""


def _git(sub: str | tuple[str, ...], flags: Sequence[str] = (), unless: Sequence[str] = (),
         first: Sequence[str] = (), when: Check | None = None) -> Check:
    """A check for `git <sub> …`: one of `flags` present (if any), none of `unless`, the first
    operand in `first` (if given), and `when` (if given)."""
    subs = (sub,) if isinstance(sub, str) else sub
    _ACTED_ON.update(dict.fromkeys((*subs, *flags, *unless, *(f"{s} {f}" for s in subs for f in first))))

    def check(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
        call = parse_git_argv(cmd.args)
        if call.info_only or call.subcommand not in subs:
            return None
        args = call.args
        if flags and not has_option(args, *flags):
            return None
        if unless and has_option(args, *unless):
            return None
        if first and (operands(args)[:1] or [""])[0] not in first:
            return None
        if when is not None:
            return when(SimpleCommand(("git", *args), cmd.cwds), paths)
        return ""
    return check


def _not_dry_run(short_n: bool) -> Check:
    """A `when` check: "" unless the last word git reads on it asks for a dry run (`--dry-run` or a prefix,
    push's `-n`; a later `--no-dry-run` undoes it)."""
    def check(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
        dry = False
        for arg in cmd.args:
            if arg == "--":
                break
            if len(arg) > 5 and "--no-dry-run".startswith(arg):
                dry = False
            elif (len(arg) > 3 and "--dry-run".startswith(arg)) or (
                    short_n and arg.startswith("-") and not arg.startswith("--") and "n" in arg[1:]):
                dry = True
        return None if dry else ""
    return check


_PUSHES = _not_dry_run(short_n=True)


def _push_forced(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    args = cmd.args
    refspecs = [a for a in operands(args)[1:]]
    forced = has_option(args, "-f", "-d", "--force", "--mirror", "--delete", "--prune", "--force-with-lease",
                        "--force-if-includes") or any(a.startswith(("+", ":")) for a in refspecs)
    return "" if forced else None


def _checkout_discards(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    """`git checkout -- path`, `checkout .`, `checkout HEAD -- path`, `checkout <tree> <path>`, `-f`."""
    args = list(cmd.args)
    if has_option(args, "-f", "--force", "--ours", "--theirs", "--patch", "-p", "--pathspec-from-file"):
        return "it overwrites uncommitted changes"
    if "--" in args:
        return "it overwrites files with their committed version" if args[args.index("--") + 1:] else None
    if has_option(args, "-b", "-B", "--orphan", "--detach"):
        return None
    found = operands(args)
    if len(found) >= 2 or any(o in (".", "*", ":/") or o.startswith(("./", ":/", "../")) or "*" in o for o in found):
        return "it overwrites files with their committed version"
    return "it overwrites the file with its committed version" if found and _exists(found[0], cmd) else None


def _exists(path: str, cmd: SimpleCommand) -> bool:
    if UNKNOWN in path:
        return False
    return any(os.path.isfile(p) for p in absolute(path, cmd.cwds) or [])


def _restore_discards(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    staged_only = has_option(cmd.args, "-S", "--staged") and not has_option(cmd.args, "-W", "--worktree")
    return None if staged_only else "it overwrites uncommitted changes in the working tree"


def _config_runs_code(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    found = operands(cmd.args, ("-f", "--file", "--blob", "--type", "--default", "--comment", "--value"))
    if has_option(cmd.args, "--get", "--get-all", "--get-regexp", "--list", "-l", "--unset", "--unset-all",
                  "--show-origin", "--name-only") or len(found) < 2:
        return None
    key = found[1] if found[0] in ("set",) and len(found) > 2 else found[0]
    value = found[-1]
    if _EXT_TRANSPORT in key.lower() or value.lower().startswith(_EXT_TRANSPORT):
        return f"{key} makes git use the ext:: transport, which runs a shell command"
    if (key.lower().startswith("alias.") or _SUBMODULE_UPDATE.fullmatch(key.lower())) and value.startswith("!"):
        return f"the alias {key} runs the shell command {value[1:]!r}"
    if exec_config_key(key):
        return f"git runs the value of {key} as a command"
    return None


def _fetch_forced(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    """`git fetch origin +main:main` / `fetch -f origin x:main`: a local branch is overwritten."""
    specs = [s for s in operands(cmd.args)[1:] if ":" in s and not s.endswith(":")]
    forced = has_option(cmd.args, "-f", "--force")
    if any(s.startswith("+") or forced for s in specs):
        return "it force-updates a local branch from the remote, dropping its commits"
    return None


_REVISION = re.compile(r"[~^]|@\{|^@$|^[0-9a-f]{7,40}$|^(?:ORIG|FETCH|MERGE)_HEAD$|^(?:refs|origin|upstream)/")


def _reset_moves_branch(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    """`git reset [--soft|--mixed] REV` with no paths moves the current branch to REV, dropping the
    commits after it from the branch (the work stays, uncommitted).  `git reset`, `reset HEAD`
    and `reset [REV] -- path` only unstage."""
    args = cmd.args
    if "--" in args or has_option(args, "-p", "--patch"):
        return None  # paths: only the index changes
    found = operands(args)
    if len(found) != 1 or found[0] == "HEAD":
        return None
    if has_option(args, "--soft") or _REVISION.search(found[0]):
        return f"it moves the current branch to {found[0]}, taking the commits after it off the branch"
    return None


def _clean_deletes(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    """`git clean` deletes untracked files unless it only lists them; whether it needs `-f` is a
    setting (`clean.requireForce`) the guard cannot see."""
    return None if has_option(cmd.args, "-n", "--dry-run") else ""


def _global_settings(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    call: GitCall = parse_git_argv(cmd.args)
    if call.exec_path:
        return f"--exec-path={call.exec_path} makes git run its subcommands from there"
    if call.subcommand in ("init", "clone") and has_option(call.args, "--template"):
        return "--template copies hooks into the repository, which git then runs"
    for key, value in call.settings:
        if key.lower() == "help.autocorrect" and value.lower() not in ("0", "false", "never", "show", "off", "no"):
            return f"-c {key}={value} makes git run the command it guesses a typo meant"
        if key.lower() == "init.templatedir":
            return f"-c {key} copies hooks into the repository, which git then runs"
        if key.lower() in ("protocol.ext.allow", "protocol.allow") and value.lower() in ("always", "user"):
            return f"-c {key}={value} lets git run an ext:: transport command"
        if key.lower() == "core.hookspath":
            return f"-c {key} makes git run hooks from {value!r}"
        if key.lower() == "include.path" or key.lower().startswith("includeif."):
            return f"-c {key} pulls in settings from {value!r}, which may run commands"
    for key, value in call.settings:
        if _EXT_TRANSPORT in key.lower() or value.lower().startswith(_EXT_TRANSPORT):
            return f"-c {key}=… rewrites URLs to the ext:: transport, which runs a shell command"
    if any(a.lower().split("=", 1)[-1].startswith(("ext::", "fd::")) for a in call.args):
        return "the ext:: transport runs a shell command"
    return None


_EXT_TRANSPORT = "ext::"
_SUBMODULE_UPDATE = re.compile(r"submodule\..+\.update")


def _moves_git_dir(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    sources = operands(cmd.args)[:-1]
    return "it moves the repository's .git directory" if any(in_git_dir(s) for s in sources) else None


def _overwrites_branch(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    """`git branch -M [OLD] NEW` / `-C`: only a NEW that exists is overwritten."""
    found = operands(cmd.args)
    if not found:
        return None
    exists = branch_exists(found[-1], cmd.cwds)
    if exists is False:
        return None
    return f"the branch {found[-1]!r} exists and would be overwritten" if exists else \
        f"whether the branch {found[-1]!r} exists is not known here; use -m, which refuses to overwrite"


_HISTORY = "rewrites or discards git history"
PACK = Pack(
    name="git",
    title="git: commits, pushes, history rewrites, discarding work, git running shell commands",
    rules=(
        Rule("git-commit", "the agent never commits; the loop checkpoints and the operator commits", ("git",),
             check=_git("commit", when=_not_dry_run(short_n=False))),
        Rule("git-push-force", "a force push (or remote ref deletion) rewrites published history", ("git",),
             check=_git(("push", "send-pack"), when=lambda c, p: _push_forced(c, p) if _PUSHES(c, p) is not None
                        else None)),
        Rule("git-push", "the agent never pushes; the operator publishes the work", ("git",),
             check=_git(("push", "send-pack"), when=_PUSHES)),
        Rule("git-reset-hard", "git reset --hard/--merge/--keep discards uncommitted changes", ("git",),
             check=_git("reset", flags=("--hard", "--merge", "--keep"))),
        Rule("git-history-rewrite", "git reset to an earlier commit takes commits off the branch", ("git",),
             check=_git("reset", when=_reset_moves_branch)),
        Rule("git-clean-force", "git clean deletes untracked files for good", ("git",),
             check=_git("clean", when=_clean_deletes)),
        Rule("git-checkout-discard", "git checkout of paths discards uncommitted work", ("git",),
             check=_git("checkout", when=_checkout_discards)),
        Rule("git-checkout-force", "a forced switch discards uncommitted changes", ("git",),
             check=_git("switch", flags=("-f", "--force", "--discard-changes"))),
        Rule("git-branch-force-move", "switch -C / checkout -B resets an existing branch, dropping its commits",
             ("git",), check=_git("switch", flags=("-C", "--force-create"))),
        Rule("git-branch-force-move", "switch -C / checkout -B resets an existing branch, dropping its commits",
             ("git",), check=_git("checkout", flags=("-B",))),
        Rule("git-checkout-discard", "checkout-index -f overwrites files with their staged version", ("git",),
             check=_git("checkout-index", flags=("-f", "--force"))),
        Rule("git-checkout-discard", "read-tree -u rewrites the working tree", ("git",),
             check=_git("read-tree", flags=("-u",))),
        Rule("git-history-rewrite", "a forced fetch into a local branch discards its commits", ("git",),
             check=_git("fetch", when=_fetch_forced)),
        Rule("git-history-rewrite", "git prune deletes unreachable commits for good", ("git",),
             check=_git("prune", unless=("-n", "--dry-run"))),
        Rule("git-restore", "git restore discards uncommitted changes", ("git",),
             check=_git("restore", when=_restore_discards)),
        Rule("git-stash-drop", "dropping stashes loses their changes for good", ("git",),
             check=_git("stash", first=("drop", "clear"))),
        Rule("git-branch-force-delete", "git branch -D deletes a branch even when it is not merged", ("git",),
             check=_git("branch", flags=("-D",))),
        Rule("git-branch-force-delete", "git branch -d -f deletes a branch even when it is not merged", ("git",),
             check=_git("branch", flags=("-d", "--delete"), when=lambda c, p: "" if has_option(
                 c.args, "-f", "--force") else None)),
        Rule("git-branch-force-move", "git branch -f moves a branch, dropping its commits", ("git",),
             check=_git("branch", flags=("-f", "--force"), when=lambda c, p: "" if len(operands(c.args)) >= 2 and
                        not has_option(c.args, "-d", "--delete") else None)),
        Rule("git-tag-delete", "deleting or moving a tag changes what a release points at", ("git",),
             check=_git("tag", flags=("-d", "--delete", "-f", "--force"))),
        Rule("git-submodule-discard", "a forced submodule deinit deletes its working tree and local changes",
             ("git",), check=lambda c, p: _git("submodule", flags=("-f", "--force"))(c, p) if "deinit" in c.args
             else None),
        Rule("git-worktree-remove-force", "a forced worktree removal deletes its uncommitted changes", ("git",),
             check=_git("worktree", first=("remove",), flags=("-f", "--force"))),
        Rule("git-rm-force", "git rm -f deletes files with uncommitted changes", ("git",),
             check=_git("rm", flags=("-f", "--force"), unless=("--cached", "-n", "--dry-run"))),
        Rule("git-rebase", "git rebase rewrites commits (only --abort is allowed)", ("git",),
             check=_git("rebase", unless=_ABORT)),
        Rule("git-pull-rebase", "git pull --rebase rewrites local commits", ("git",),
             check=_git("pull", flags=("--rebase", "-r"), unless=("--no-rebase",))),
        Rule("git-makes-commits", "the agent never makes commits (revert, cherry-pick, merge, am)", ("git",),
             check=_git(("revert", "cherry-pick", "merge", "am", "commit-tree", "pull"),
                        unless=(*_ABORT, "--no-commit", "-n", "--ff-only", "--dry-run"))),
        Rule("git-history-rewrite", _HISTORY, ("git",), check=_git(("filter-branch", "filter-repo", "update-ref",
                                                                    "replace", "fast-import"))),
        Rule("git-history-rewrite", _HISTORY, ("git",), check=_git("reflog", first=("expire", "delete"))),
        Rule("git-history-rewrite", _HISTORY, ("git",), check=_git("gc", flags=("--prune",),
                                                                     when=lambda c, p: "" if any(
                                                                         a.endswith(("=now", "=all")) for a in
                                                                         c.args) else None)),
        Rule("git-config-exec", "a git setting that runs a shell command", ("git",), check=_git(
            "config", when=_config_runs_code)),
        Rule("git-exec-transport", "git would run a command of the agent's choosing", ("git",),
             check=_global_settings),
        Rule("git-dir-move", "moving .git away loses the repository", ("mv",), check=_moves_git_dir),
        Rule("git-apply-reverse", "git apply -R takes changes out of the working tree (of the working diff: "
             "all uncommitted work)", ("git",), check=_git("apply", flags=("-R", "--reverse"),
                                                           unless=("--check", "--stat", "--numstat", "--summary",
                                                                   "--cached"))),
        Rule("git-branch-force-move", "git branch -M/-C overwrites an existing branch, dropping its commits",
             ("git",), check=_git("branch", flags=("-M", "-C"), when=_overwrites_branch)),
        *vcs_rules(),
    ),
    vocabulary={"git": tuple(_ACTED_ON), **{name: tuple(words) for name, words in VCS_WORDS.items()}},
)
