"""The destructive-command guard, runtime layer: allow or deny one agent tool use.

Every bash `tool_use` is analysed by `shell_words.analyze` (a real shell parser:
only commands that would *execute* count, never words that are merely
mentioned) and each executed command is judged by the rules below. The first
deny wins. The agent never commits, pushes or publishes; it never rewrites
history, resets or cleans the worktree by force, writes raw disks, or deletes
recursively outside a temp directory.

`rm -r`/`rm -rf` (and `find -delete`) is path- and cd-aware: it is allowed only
when every target is strictly inside a temp directory (the system temp dir,
`/tmp`, `/var/tmp`, `$TMPDIR`), relative targets resolved against the working
directory (`cd /tmp && rm -rf scratch`). The temp root itself, a relative path
with no known temp cwd, `..` escapes, values only known at run time and mixed
target lists are denied.

Extra patterns (`.kilocode-loop/config.json` keys `guardDeny` / `guardAllow`)
are RE2 regular expressions, searched (not anchored) in the text of each
executed simple command — the normalized command name and its words joined by
single spaces, e.g. `git push origin main` for `sudo /usr/bin/git push origin main`.
A `guardDeny` match denies that command; otherwise a `guardAllow` match allows
it even when a built-in rule would deny it.
"""

from __future__ import annotations

import os
import posixpath
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import re2

from kilo_loop.safety.shell_words import (
    HOME,
    UNKNOWN,
    InlineCode,
    OutputRedirect,
    SimpleCommand,
    Unanalysable,
    analyze,
    display,
    find_roots,
    normalize_path,
    parse_git_argv,
)


@dataclass(frozen=True)
class GuardDecision:
    decision: Literal["allow", "deny"]
    rule: str | None
    reason: str

    @property
    def denied(self) -> bool:
        return self.decision == "deny"

    def as_dict(self) -> dict[str, str | None]:
        return {"decision": self.decision, "rule": self.rule, "reason": self.reason}


def _allow(reason: str) -> GuardDecision:
    return GuardDecision("allow", None, reason)


def _deny(rule: str, reason: str) -> GuardDecision:
    return GuardDecision("deny", rule, reason)


def default_temp_dirs() -> list[str]:
    dirs = [tempfile.gettempdir(), "/tmp", "/var/tmp"]
    tmpdir = os.environ.get("TMPDIR")
    return [*dirs, tmpdir] if tmpdir else dirs


def _temp_roots(dirs: Sequence[str]) -> tuple[str, ...]:
    roots: list[str] = []
    for directory in dirs:
        if not directory or not directory.startswith("/"):
            continue
        for variant in (normalize_path(directory), normalize_path(os.path.realpath(directory))):
            if variant != "/" and variant not in roots:
                roots.append(variant)
    return tuple(roots)


def _compile(patterns: Sequence[str], key: str) -> tuple[tuple[str, Any], ...]:
    options = re2.Options()
    options.log_errors = False
    compiled: list[tuple[str, Any]] = []
    for pattern in patterns:
        if not isinstance(pattern, str) or not pattern:
            raise ValueError(f"{key}: each pattern must be a non-empty string, got {pattern!r}")
        try:
            compiled.append((pattern, re2.compile(pattern, options=options)))
        except re2.error as exc:
            raise ValueError(f"{key}: {pattern!r} is not a valid RE2 regular expression ({exc})") from exc
    return tuple(compiled)


# ----------------------------------------------------------------------------- path checks
_BRACE = re.compile(r"\{([^{}]*)\}")
_GLOB = re.compile(r"[*?\[]")
_BLOCK_DEVICE = re.compile(
    r"/dev/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d|rdisk\d|md\d|dm-\d|mapper/|loop\d|sr\d"
    r"|nbd\d|zd\d|bcache\d)"
)
# Directories whose contents belong to the system: never deleted or recursively re-permissioned.
_SYSTEM_DIRS = ("/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/sys", "/proc",
                "/dev", "/var/lib", "/System", "/Library")
# Top-level directories that hold everyone's files: deleting or re-permissioning them as a whole is fatal,
# but projects live below them, so only the directory itself is protected.
_TOP_DIRS = ("/", "/home", "/root", "/opt", "/srv", "/var", "/Users", "/mnt", "/media")


def brace_alternatives(text: str, limit: int = 64) -> list[str] | None:
    """The words bash brace expansion makes of `text` (`a{b,c}` → `ab`, `ac`); None past `limit`."""
    pending, done = [text], []
    while pending:
        word = pending.pop()
        match = next((m for m in _BRACE.finditer(word) if "," in m.group(1) or ".." in m.group(1)), None)
        if match is None:
            done.append(word)
            continue
        inner = match.group(1)
        options = inner.split(",") if "," in inner else inner.split("..")[:2]
        pending += [word[:match.start()] + option + word[match.end():] for option in options]
        if len(pending) + len(done) > limit:
            return None
    return done


def _glob_may_escape(path: str) -> bool:
    """A wildcard component before the last one that could match `..` (`/tmp/.*/etc`)."""
    parts = path.split("/")[:-1]
    return any(_GLOB.search(part) and part[:1] in (".", "[") for part in parts)


def is_block_device(path: str) -> bool:
    return path.startswith("/") and bool(_BLOCK_DEVICE.match(normalize_path(path)))


def _absolute(target: str, cwds: frozenset[str | None]) -> list[str] | None:
    """`target` made absolute against every possible cwd; None when a cwd is unknown."""
    if target.startswith("/"):
        return [normalize_path(target)]
    if None in cwds:
        return None
    return [normalize_path(posixpath.join(str(cwd), target)) for cwd in cwds]


def _in_git_dir(path: str) -> bool:
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    return ".git" in parts and not (parts[-1].endswith(".lock") and parts[-1] != ".git")


def _system_path(path: str) -> bool:
    return path in _TOP_DIRS or any(path == d or path.startswith(d + "/") for d in _SYSTEM_DIRS)


# ----------------------------------------------------------------------------- rules
_GitRule = Callable[[Sequence[str]], "tuple[str, str] | None"]


def _short_flags(args: Sequence[str]) -> set[str]:
    flags: set[str] = set()
    for arg in args:
        if arg == "--":
            break
        if arg.startswith("-") and not arg.startswith("--"):
            flags.update(arg[1:])
    return flags


def _first(args: Sequence[str]) -> str | None:
    return args[0] if args else None


def _git_push(args: Sequence[str]) -> tuple[str, str]:
    forced = _short_flags(args) & {"f", "d"} or any(
        a.startswith(("--force", "--mirror", "--delete", "--prune")) for a in args
    ) or any(a.startswith(("+", ":")) for a in args if not a.startswith("-"))
    if forced:
        return "git-push-force", "a force push (or remote ref deletion) rewrites published history"
    return "git-push", "the agent never pushes; the operator publishes the work"


def _git_clean(args: Sequence[str]) -> tuple[str, str] | None:
    flags = _short_flags(args)
    forced = "f" in flags or "--force" in args
    dry = "n" in flags or "--dry-run" in args
    return ("git-clean-force", "git clean -f deletes untracked files for good") if forced and not dry else None


def _git_branch(args: Sequence[str]) -> tuple[str, str] | None:
    flags = _short_flags(args)
    delete = "d" in flags or "--delete" in args
    force = "f" in flags or "--force" in args
    if "D" in flags or (delete and force):
        return "git-branch-force-delete", "git branch -D deletes a branch even when it is not merged"
    return None


_HISTORY = ("git-history-rewrite", "rewrites or discards git history")
_GIT_RULES: dict[str, _GitRule] = {
    "commit": lambda a: ("git-commit", "the agent never commits; the loop checkpoints and the operator commits"),
    "push": _git_push,
    "reset": lambda a: ("git-reset-hard", "git reset --hard destroys uncommitted changes")
    if "--hard" in a else None,
    "clean": _git_clean,
    "checkout": lambda a: ("git-checkout-force", "a forced checkout discards uncommitted changes")
    if {"-f", "--force"} & set(a) else None,
    "switch": lambda a: ("git-checkout-force", "a forced switch discards uncommitted changes")
    if {"-f", "--force", "--discard-changes"} & set(a) else None,
    "stash": lambda a: ("git-stash-drop", "dropping stashes loses their changes for good")
    if _first(a) in ("drop", "clear") else None,
    "branch": _git_branch,
    "filter-branch": lambda a: _HISTORY,
    "filter-repo": lambda a: _HISTORY,
    "reflog": lambda a: _HISTORY if _first(a) in ("expire", "delete") else None,
    "update-ref": lambda a: _HISTORY if "-d" in a else None,
    "gc": lambda a: _HISTORY if {"--prune=now", "--prune=all"} & set(a) else None,
}

_JS_PACKAGE_MANAGERS = frozenset({"npm", "pnpm", "yarn", "bun"})
_PUBLISH_VERBS = {"cargo": "publish", "twine": "upload", "poetry": "publish", "uv": "publish", "gem": "push",
                  "flit": "publish", "hatch": "publish"}
_DISK_TOOLS = frozenset({"mke2fs", "mkswap", "wipefs", "blkdiscard", "sgdisk", "sfdisk", "parted", "fdisk",
                         "gdisk", "cfdisk"})
_INFO_FLAGS = frozenset({"-l", "--list", "-h", "--help", "-V", "--version"})
_NAME_TESTS = frozenset({"-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex",
                         "-iregex"})
_RECURSIVE_DELETE_CODE = re.compile(
    r"\b(rmtree|remove_tree|rm_rf|rm_r|remove_dir|remove_entry(_secure)?|rimraf|rmRF)\b"
    r"|\b(rmSync|rmdirSync|rm|rmdir|remove)\s*\([^)]*recursive"
)
_FILE_DELETE_CODE = re.compile(
    r"\b(os\s*\.\s*(remove|unlink|removedirs)|unlinkSync|unlink|File\s*\.\s*delete|FileUtils\s*\.\s*(rm|remove))\b"
)
_CODE_PATH = re.compile(r"""['"](~[^'"\n]*|/[^'"\n]*)['"]""")

_BASH_TOOLS = frozenset({"bash", "shell", "sh", "run_shell_command", "execute_command", "exec_command"})
_WRITE_TOOLS = frozenset({"write", "edit", "multiedit", "patch", "apply_patch", "notebookedit"})
_PATH_KEYS = ("filePath", "file_path", "path", "notebook_path", "filename")
_PATCH_KEYS = ("patchText", "patch_text", "patch", "input")
_PATCH_PATH = re.compile(r"^(?:\*\*\* (?:Add|Update|Delete) File: |\*\*\* Move to: |\+\+\+ (?:b/)?|--- (?:a/)?)(.+)$",
                         re.MULTILINE)


class Guard:
    """Decides allow/deny for agent tool uses; see the module docstring for the policy."""

    def __init__(
        self,
        extra_deny: Sequence[str] = (),
        extra_allow: Sequence[str] = (),
        temp_dirs: Sequence[str] | None = None,
    ) -> None:
        self._roots = _temp_roots(default_temp_dirs() if temp_dirs is None else temp_dirs)
        self._temp_root = self._roots[0] if self._roots else UNKNOWN
        self._deny = _compile(extra_deny, "guardDeny")
        self._allow = _compile(extra_allow, "guardAllow")

    @property
    def temp_roots(self) -> tuple[str, ...]:
        return self._roots

    # -- entry points
    def check_command(self, command: str, cwd: str | None = None) -> GuardDecision:
        if not command.strip():
            return _allow("empty command")
        try:
            analysis = analyze(command, cwd, self._temp_root)
        except Exception as exc:  # noqa: BLE001 - a bug in the analysis must not let a command through
            return _deny("guard-error", f"the command could not be analysed ({type(exc).__name__}: {exc})")
        for item in analysis.executed:
            decision = self._judge(item)
            if decision is not None:
                return decision
        return _allow("no destructive command found")

    def check_tool_use(self, tool: str, tool_input: Mapping[str, Any], cwd: str | None = None) -> GuardDecision:
        name = str(tool).lower()
        if not isinstance(tool_input, Mapping):
            return _allow(f"{tool}: no input to check")
        if name in _BASH_TOOLS:
            command = tool_input.get("command")
            if not isinstance(command, str):
                return _allow(f"{tool}: no command string to run")
            workdir = tool_input.get("workdir", tool_input.get("cwd"))
            if isinstance(workdir, str) and workdir:
                cwd = workdir if workdir.startswith("/") else (posixpath.join(cwd, workdir) if cwd else None)
            return self.check_command(command, cwd)
        if name in _WRITE_TOOLS:
            for path in _written_paths(tool_input):
                if _in_git_dir(path):
                    return _deny("git-dir-write", f"{tool} writes {path!r} inside a .git directory")
        return _allow(f"{tool}: not a shell command")

    # -- judging executed items
    def _judge(self, item: object) -> GuardDecision | None:
        if isinstance(item, SimpleCommand):
            return self._simple(item)
        if isinstance(item, OutputRedirect):
            if is_block_device(item.target):
                return _deny("raw-disk-write", f"redirects output onto the block device {item.target}")
            return None
        if isinstance(item, InlineCode):
            return self._inline_code(item)
        if isinstance(item, Unanalysable):
            return _deny("unanalysable", item.reason)
        return None

    def _simple(self, cmd: SimpleCommand) -> GuardDecision | None:
        text = cmd.text
        for pattern, regex in self._deny:
            if regex.search(text):
                return _deny("custom-deny", f"`{text}` matches the guardDeny pattern {pattern!r}")
        if any(regex.search(text) for _, regex in self._allow):
            return None
        rule = self._rule_for(cmd.name)
        return rule(cmd) if rule is not None else None

    def _rule_for(self, name: str) -> Callable[[SimpleCommand], GuardDecision | None] | None:
        if name == "git":
            return self._git
        if name in ("rm", "unlink", "shred"):
            return self._rm
        if name == "find":
            return self._find
        if name in _JS_PACKAGE_MANAGERS or name in _PUBLISH_VERBS:
            return self._publish
        if name == "dd" or name.startswith("mkfs") or name in _DISK_TOOLS or name in ("tee", "cp", "mv", "install"):
            return self._disk
        if name in ("chmod", "chown", "chgrp"):
            return self._permissions
        return None

    def _git(self, cmd: SimpleCommand) -> GuardDecision | None:
        call = parse_git_argv(cmd.args)
        if call.info_only or call.subcommand is None:
            return None
        rule = _GIT_RULES.get(call.subcommand)
        found = rule(call.args) if rule is not None else None
        if found is None:
            return None
        return _deny(found[0], f"`{cmd.text}`: {found[1]}")

    def _rm(self, cmd: SimpleCommand) -> GuardDecision | None:
        flags, targets = _rm_operands(cmd.args)
        if flags & {"--help", "--version"}:
            return None
        if cmd.name == "rm" and flags & {"-r", "-R", "--recursive"}:
            if not targets:
                return _deny("rm-recursive", f"`{cmd.text}`: a recursive rm without an explicit target")
            for target in targets:
                why = self._outside_temp(target, cmd.cwds)
                if why:
                    return _deny("rm-recursive", f"`{cmd.text}` deletes {display(target)!r} recursively but {why}; "
                                 f"recursive deletes are allowed only strictly inside {', '.join(self._roots)}")
            return None
        for target in targets:
            absolute = _absolute(target, cmd.cwds) if UNKNOWN not in target else None
            if _in_git_dir(target) or any(_system_path(p) or is_block_device(p) for p in absolute or []):
                return _deny("rm-protected", f"`{cmd.text}` deletes {display(target)!r}, a system or .git path")
        return None

    def _find(self, cmd: SimpleCommand) -> GuardDecision | None:
        roots, expression = find_roots(cmd.args)
        if "-delete" not in expression:
            return None
        named = any(e in _NAME_TESTS and expression[i + 1:i + 2] not in (["*"], []) for i, e in enumerate(expression))
        for root in roots:
            if named and not root.startswith("/") and UNKNOWN not in root and \
                    not normalize_path(root).startswith("..") and not root.startswith("~"):
                continue
            why = self._outside_temp(root, cmd.cwds)
            if why:
                return _deny("find-delete", f"`{cmd.text}` deletes under {display(root)!r} but {why}")
        return None

    def _publish(self, cmd: SimpleCommand) -> GuardDecision | None:
        positional = [a for a in cmd.args if not a.startswith("-")]
        if not positional or positional[0] == "help":
            return None
        if cmd.name in _JS_PACKAGE_MANAGERS:
            if {"publish", "unpublish"} & set(positional):
                return _deny("npm-publish", f"`{cmd.text}`: the agent never publishes packages")
            return None
        if _PUBLISH_VERBS[cmd.name] in positional[:2]:
            return _deny("package-publish", f"`{cmd.text}`: the agent never publishes packages")
        return None

    def _disk(self, cmd: SimpleCommand) -> GuardDecision | None:
        name, args = cmd.name, cmd.args
        if name == "dd":
            targets = [a[3:] for a in args if a.startswith("of=")]
        elif name in ("cp", "mv", "install"):
            targets = [a for a in args if not a.startswith("-")][-1:]
        elif name == "tee":
            targets = [a for a in args if not a.startswith("-")]
        else:
            if not args or set(args) & _INFO_FLAGS:
                return None
            return _deny("raw-disk-write", f"`{cmd.text}`: formats or repartitions a disk")
        device = next((t for t in targets if is_block_device(t)), None)
        if device is not None:
            return _deny("raw-disk-write", f"`{cmd.text}` writes raw data onto the block device {device}")
        return None

    def _permissions(self, cmd: SimpleCommand) -> GuardDecision | None:
        if not ({"-R", "--recursive"} & set(cmd.args) or "R" in _short_flags(cmd.args)):
            return None
        operands = [a for a in cmd.args if not a.startswith("-")][1:]
        for target in operands:
            for path in (_absolute(target, cmd.cwds) or []) if UNKNOWN not in target else []:
                if _system_path(path):
                    return _deny("recursive-permission-change", f"`{cmd.text}` changes {path} recursively")
        return None

    def _inline_code(self, item: InlineCode) -> GuardDecision | None:
        code = item.code
        found = _RECURSIVE_DELETE_CODE.search(code)
        if found:
            return _deny("inline-code-delete",
                         f"{item.language} code deletes a directory tree ({found.group(0).strip()})")
        if _FILE_DELETE_CODE.search(code):
            for match in _CODE_PATH.finditer(code):
                path = match.group(1)
                if path.startswith("~") or self._outside_temp(path, item.cwds):
                    return _deny("inline-code-delete", f"{item.language} code deletes {path!r}")
        return None

    def _outside_temp(self, target: str, cwds: frozenset[str | None]) -> str | None:
        """Why `target` is not strictly inside a temp directory, or None when it is."""
        if target.startswith(HOME):
            return "it is in the home directory"
        if UNKNOWN in target:
            return "its value is only known when the command runs"
        if not target:
            return "the target is empty"
        alternatives = brace_alternatives(target)
        if alternatives is None:
            return "its brace expansion is too large to check"
        for candidate in alternatives:
            absolute = _absolute(candidate, cwds)
            if absolute is None:
                return "it is a relative path with no known temp working directory"
            for path in absolute:
                if _glob_may_escape(candidate if candidate.startswith("/") else path):
                    return "a wildcard in it could match '..'"
                if path in self._roots:
                    return "it is a temp directory itself"
                if not any(path.startswith(root + "/") for root in self._roots):
                    return f"{path} is outside the temp directories"
        return None


def _rm_operands(args: Sequence[str]) -> tuple[set[str], list[str]]:
    flags: set[str] = set()
    targets: list[str] = []
    options_done = False
    for arg in args:
        if options_done or arg == "-" or not arg.startswith("-"):
            targets.append(arg)
        elif arg == "--":
            options_done = True
        elif arg.startswith("--"):
            flags.add(arg.split("=", 1)[0])
        else:
            flags.update("-" + letter for letter in arg[1:])
    return flags, targets


def _written_paths(tool_input: Mapping[str, Any]) -> list[str]:
    paths = [value for key in _PATH_KEYS if isinstance(value := tool_input.get(key), str)]
    for key in _PATCH_KEYS:
        text = tool_input.get(key)
        if isinstance(text, str):
            paths += [m.group(1).strip() for m in _PATCH_PATH.finditer(text)]
    edits = tool_input.get("edits")
    if isinstance(edits, list):
        paths += [e["filePath"] for e in edits if isinstance(e, dict) and isinstance(e.get("filePath"), str)]
    return paths
