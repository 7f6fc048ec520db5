"""The destructive-command guard, runtime layer: allow or deny one agent tool use.

Every bash `tool_use` is analysed by `shell.analyze` (tree-sitter-bash: only commands that
would *execute* count, never words that are merely mentioned) and each executed command is
judged by the rule packs in force (`guard/packs`: git, filesystem, system, publish,
containers, kubernetes, cloud, databases, remote). The first deny wins.

What cannot be known statically is denied, with a reason telling the agent how to get
through: a command name produced by an expansion, code a shell or interpreter reads from a
pipe, a decoded payload, a file written by the same command and then run, `eval` of unknown
text, program text that computes what it runs, and input tree-sitter-bash cannot parse.

A script file already on disk that a shell runs (`bash x.sh`, `source x.sh`, `./x.sh` with a
shell `#!`, `bash < x.sh`) or a SQL client reads (`psql -f`, `mysql < f.sql`, `.read`, `\\i`)
is read and judged as if its text were inline; one too big to read, not a regular file, or
changed earlier in the same command is denied.

`rm -r`/`rm -rf` (and `find -delete`) is path- and cd-aware: it is allowed only when every
target is strictly inside a temp directory (the system temp dir, `/tmp`, `/var/tmp`,
`$TMPDIR`), relative targets resolved against the working directory, paths that exist
resolved through their symlinks.

Extra patterns (`.kilocode-loop/config.json` keys `guardDeny` / `guardAllow`) are RE2 regular
expressions, searched (not anchored) in the text of each executed simple command — the
normalized command name and its words joined by single spaces, e.g. `git push origin main`
for `sudo /usr/bin/git push origin main`. A `guardDeny` match denies that command; otherwise
a `guardAllow` match allows it even when a built-in rule would deny it.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Mapping, Sequence
from typing import Any

from kilo_loop.guard.lazy_regex import LazyRegex
from kilo_loop.guard.packs import PACKS, Pack, enabled_packs
from kilo_loop.guard.packs.paths import (
    PathPolicy,
    absolute,
    in_git_dir,
    is_block_device,
    resolved,
    sensitive_file,
    system_file,
)
from kilo_loop.guard.packs.rules import Rule, match, words_acted_on
from kilo_loop.guard.packs.runtime_words import built_at_run_time
from kilo_loop.guard.shell import (
    InlineCode,
    OutputRedirect,
    SimpleCommand,
    Unanalysable,
    Unread,
    analyze,
    brace_alternatives,
    display,
)
from kilo_loop.guard.shell.interpreters import UNREAD_LANGUAGES, dynamic_code
from kilo_loop.guard.shell.model import HOME, LITERALLY, UNKNOWN
from kilo_loop.run.guard_decision import GuardDecision

__all__ = ["Guard", "GuardDecision", "brace_alternatives"]


def _allow(reason: str) -> GuardDecision:
    return GuardDecision("allow", None, reason)


def _deny(rule: str, reason: str, pack: str | None = None) -> GuardDecision:
    """A deny; the reason ends with the pack that denied (`… [git pack]`), the guardPacks switch to name."""
    return GuardDecision("deny", rule, f"{reason} [{pack} pack]" if pack else reason, pack)


def compile_patterns(patterns: Sequence[str], key: str) -> tuple[tuple[str, Any], ...]:
    """guardDeny / guardAllow patterns compiled with RE2; ValueError naming `key` and the pattern."""
    if not patterns:
        return ()
    import re2  # here, not at the top: only projects with guardDeny/guardAllow patterns need it

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


_RECURSIVE_DELETE_CODE = LazyRegex(
    r"\b(rmtree|remove_tree|rm_rf|rm_r|remove_dir_all|remove_entry(_secure)?|rimraf|rmRF|deleteRecursively"
    r"|remove_dir|rm_f)\b"
    r"|\b(rmSync|rmdirSync|rm|rmdir|remove|removeSync|promises\s*\.\s*rm)\s*\((?=[\s\S]*recursive)"
)
_FILE_DELETE_CODE = LazyRegex(
    r"\b(os\s*\.\s*(remove|unlink|removedirs|rmdir)|unlinkSync|unlink|File\s*\.\s*delete|FileUtils\s*\.\s*(rm|remove)"
    r"|Path\s*\([^)]*\)\s*\.\s*unlink)\b")
_COMPUTED_DELETE_CODE = LazyRegex(
    # a delete whose path the code computes (a loop over listdir/glob): what goes is only known when it runs
    r"\b(?:os\s*\.\s*(?:remove|unlink|rmdir|removedirs)|(?:fs\s*\.\s*)?(?:unlinkSync|rmSync|rmdirSync)"
    r"|File\s*\.\s*(?:delete|unlink)|FileUtils\s*\.\s*(?:rm|remove)|unlink)\s*\(\s*(?![rbuRBU]?['\"`)])"
    r"|(?<![)\s])\s*\.\s*unlink\s*\(\s*\)|\bunlink\s+(?!['\"(])|\bunlink\s*<|['\"]unlink['\"]")
_MOVE_CODE = LazyRegex(r"\b(?:os\s*\.\s*(?:rename|renames|replace)|shutil\s*\.\s*(?:move|copytree)|renameSync|rename"
                       r"|FileUtils\s*\.\s*(?:mv|move))\s*\(")
_HOME_CODE = LazyRegex(r"homedir\s*\(|expanduser\s*\(|Path\s*\.\s*home\s*\(|os\s*\.\s*environ|process\s*\.\s*env"
                        r"|ENV\s*\[|getenv")
_SYSTEM_CODE = LazyRegex(r"\bkill\s*\(\s*-\s*1\b|\bkill\s*\(\s*0\s*,|\bfork\s+while\s+fork\b"
                         r"|while\s*\(?\s*(?:True|true|1)\s*\)?\s*:?\s*\{?\s*(?:os\s*\.\s*)?fork\s*\("
                         # fork() driven by an endless iterator: `[os.fork() for _ in iter(int, 1)]`, `for(;;) fork()`
                         r"|\bfork\s*\([^\n]{0,200}?(?:\biter\s*\(\s*int\s*,|\bitertools\s*\.\s*count\b|\brepeat\s*\(\s*\))"
                         r"|(?:\biter\s*\(\s*int\s*,|\bitertools\s*\.\s*count\b|\bfor\s*\(\s*;\s*;\s*\)|\bloop\s+do\b"
                         r"|\bloop\s*\{)[^\n]{0,200}?\bfork\s*\(")
_WRITE_CODE = LazyRegex(r"\b(?:write|writeFile|writeFileSync|appendFile|appendFileSync|write_text|write_bytes"
                        r"|symlink|symlinkSync|link|linkSync|copy|copyfile|copyFileSync|rename|renameSync|move"
                        r"|createWriteStream)\b|['\"][wa]b?\+?['\"]|>>?|(?:^|[;}\s/])w\s+\S")
_CODE_STRING = LazyRegex(r"'([^'\n]*)'|\"([^\"\n]*)\"|(?:>>?|\bw)\s*(~?/\S+|\.git/\S+)")
_CODE_PATH = LazyRegex(r"""['"](~[^'"\n]*|/[^'"\n]*)['"]""")

_QUOTED = LazyRegex(r"'[^'\n]*'|\"[^\"\n]*\"")
"""String literals in program text: an unknown value inside one is data, not code."""
_BASH_TOOLS = frozenset({"bash", "shell", "sh", "run_shell_command", "execute_command", "exec_command"})
_WRITE_TOOLS = frozenset({"write", "edit", "multiedit", "patch", "apply_patch", "notebookedit", "write_file",
                          "replace", "str_replace_based_edit_tool"})
_PATH_KEYS = ("filePath", "file_path", "path", "notebook_path", "filename", "absolute_path")
_PATCH_KEYS = ("patchText", "patch_text", "patch", "input")
_PATCH_PATH = LazyRegex(r"^(?:\*\*\* (?:Add|Update|Delete) File: |\*\*\* Move to: |\+\+\+ (?:b/)?|--- (?:a/)?)(.+)$",
                         re.MULTILINE)


class Guard:
    """Decides allow/deny for agent tool uses; see the module docstring for the policy."""

    def __init__(
        self,
        extra_deny: Sequence[str] = (),
        extra_allow: Sequence[str] = (),
        temp_dirs: Sequence[str] | None = None,
        packs: Mapping[str, bool] | None = None,
        work_tree: str | None = None,
    ) -> None:
        """`work_tree`: the project the per-iteration checkpoint keeps whole (tracked and untracked files);
        deletes inside it that a revert can undo are allowed (`checkpoint.undoable`). None: no such checkpoint."""
        self._paths = PathPolicy(temp_dirs, work_tree)
        self._deny = compile_patterns(extra_deny, "guardDeny")
        self._allow = compile_patterns(extra_allow, "guardAllow")
        self._packs = enabled_packs(packs)
        self._enabled = frozenset(pack.name for pack in self._packs)
        self._index: dict[str, list[tuple[Pack, Rule]]] = {}
        self._acted_on: dict[str, dict[str, None]] = {}
        for pack in self._packs:
            for name, rules in pack.rules_by_name().items():
                self._index.setdefault(name, []).extend((pack, rule) for rule in rules)
            for name, words in words_acted_on(pack).items():
                self._acted_on.setdefault(name, {}).update(words)

    @property
    def temp_roots(self) -> tuple[str, ...]:
        return self._paths.roots

    def pack_states(self) -> list[tuple[Pack, bool]]:
        """Every pack with whether it is in force for this guard."""
        return [(pack, pack.name in self._enabled) for pack in PACKS]

    # -- entry points
    def check_command(self, command: str, cwd: str | None = None) -> GuardDecision:
        if not command.strip():
            return _allow("empty command")
        for pack in self._packs:
            for text_rule in pack.text_rules:
                if text_rule.pattern.search(command):
                    return _deny(text_rule.id, text_rule.reason, pack.name)
        try:
            analysis = analyze(command, cwd, lambda: self._paths.temp_root)
        except Exception as exc:  # noqa: BLE001 - a bug in the analysis must not let a command through
            return _deny("guard-error", f"the command could not be analysed ({type(exc).__name__}: {exc})")
        for item in analysis.executed:
            decision = self._judge(item)
            if decision is not None:
                return decision
        unread = list(dict.fromkeys(item.what for item in analysis.executed if isinstance(item, Unread)))
        if unread:
            return _allow(f"no destructive command found; not read: {'; '.join(unread)} — what that code does "
                          "is not seen here (the sandbox, when on, still holds it)")
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
                decision = self._file_write(tool, path)
                if decision is not None:
                    return decision
        return _allow(f"{tool}: not a shell command")

    def _file_write(self, tool: str, path: str) -> GuardDecision | None:
        if in_git_dir(path) and "git" in self._enabled | {"filesystem"}:
            return _deny("git-dir-write", f"{tool} writes {path!r} inside a .git directory", "filesystem")
        home = os.path.expanduser("~")
        if "filesystem" in self._enabled and sensitive_file(path) and (
                path.startswith((home + "/", "~", "/etc/", "/root/"))):
            return _deny("sensitive-file-write", f"{tool} writes {path!r}, a login, start-up, history or ssh file",
                         "filesystem")
        return None

    # -- judging executed items
    def _judge(self, item: object) -> GuardDecision | None:
        if isinstance(item, Unanalysable):
            return _deny(item.rule, item.reason)
        if getattr(item, "remote", None) is not None and "remote" not in self._enabled:
            return None
        if isinstance(item, SimpleCommand):
            return self._simple(item)
        if isinstance(item, OutputRedirect):
            return _from_script(self._redirect(item), item.script)
        if isinstance(item, InlineCode):
            return _from_script(self._inline_code(item), item.script)
        return None

    def _simple(self, cmd: SimpleCommand) -> GuardDecision | None:
        if self._deny or self._allow:
            text = cmd.text
            for pattern, regex in self._deny:
                if regex.search(text):
                    return _deny("custom-deny", f"`{text}` matches the guardDeny pattern {pattern!r}")
            if any(regex.search(text) for _, regex in self._allow):
                return None
        found = self._rule_for(cmd)
        where = (f" (on {cmd.remote})" if cmd.remote else "") + _in_script(cmd.script)
        if found is not None:
            pack, rule, detail = found
            return _deny(rule.id, f"`{cmd.text}`{where}: {detail or rule.reason}", pack.name)
        if cmd.name not in self._acted_on:
            return None
        for word, meant in built_at_run_time(cmd, self._acted_on[cmd.name]):
            found = self._rule_for(meant)
            if found is not None:
                pack, rule, detail = found
                return _deny(rule.id, f"`{cmd.text}`{where}: {display(word)!r} is built when the command runs and "
                             f"may be `{meant.text}`, which is denied ({detail or rule.reason}); "
                             "write the subcommand and its options out literally", pack.name)
        return None

    def _rule_for(self, cmd: SimpleCommand) -> tuple[Pack, Rule, str] | None:
        """The first rule in force that denies `cmd`, with its detail."""
        for pack, rule in self._index.get(cmd.name, ()):
            detail = match(rule, cmd, self._paths, pack.value_options.get(cmd.name, ()))
            if detail is not None:
                return pack, rule, detail
        return None

    def _redirect(self, item: OutputRedirect) -> GuardDecision | None:
        target = item.target
        targets = [target, *(absolute(target, item.cwds) or [])]
        targets += [resolved(t) for t in targets if t.startswith("/")]  # through symlinks on disk
        if "system" in self._enabled:
            if any(is_block_device(t) for t in targets):
                return _deny("raw-disk-write", f"redirects output onto the block device {target}", "system")
            if any(system_file(t) for t in targets):
                return _deny("system-file-write", f"redirects output into {target}, a kernel or system file",
                             "system")
        if "filesystem" in self._enabled:
            if any(in_git_dir(t) for t in targets):
                return _deny("git-dir-write", f"redirects output into {display(target)!r} inside a .git directory "
                             "(hooks there run on the next git command)", "filesystem")
            if sensitive_file(target):
                return _deny("sensitive-file-write", f"redirects output into {display(target)!r}, a login, start-up, "
                             "history or ssh file", "filesystem")
        return None

    def _inline_code(self, item: InlineCode) -> GuardDecision | None:
        code = item.code
        if item.language != "sed" and UNKNOWN in _QUOTED.sub("", code.replace(HOME, "~")):
            return _deny("unknown-code", f"the {item.language} program text comes from a variable, substitution or "
                         f"pipe, so the guard cannot know what it does; {LITERALLY}")
        dynamic = dynamic_code(item.language, code)
        if dynamic and (item.language in UNREAD_LANGUAGES or item.language == "cmd"):
            return _deny("unknown-code", f"the guard does not read {item.language} programs, and this one may run or "
                         f"delete something ({dynamic[:60]}); do it with plain shell commands instead")
        if dynamic:
            return _deny("unknown-code", f"{item.language} code computes, decodes or looks up what it runs "
                         f"({dynamic[:60]}), so the guard cannot know it; {LITERALLY}")
        if "system" in self._enabled:
            found = _SYSTEM_CODE.search(code)
            if found:
                return _deny("kill-all", f"{item.language} code signals every process or forks without end "
                             f"({found.group(0).strip()})", "system")
        if "filesystem" not in self._enabled:
            return None
        if _WRITE_CODE.search(code):
            for literal in _CODE_STRING.finditer(code):
                path = literal.group(1) or literal.group(2) or literal.group(3) or ""
                if sensitive_file(path) or ".git/" in path or system_file(path):
                    return _deny("sensitive-file-write", f"{item.language} code writes {path!r}, a login, shell "
                                 "start-up, ssh, .git or system file", "filesystem")
        found = _RECURSIVE_DELETE_CODE.search(code)
        if found:
            return _deny("inline-code-delete",
                         f"{item.language} code deletes a directory tree ({found.group(0).strip()})", "filesystem")
        if _MOVE_CODE.search(code) and _HOME_CODE.search(code):
            return _deny("inline-code-delete", f"{item.language} code moves a path built from the home directory or "
                         "the environment; name the paths literally", "filesystem")
        computed = _COMPUTED_DELETE_CODE.search(code)
        if computed:
            return _deny("inline-code-delete", f"{item.language} code deletes paths it computes "
                         f"({computed.group(0).strip()}…), known only when it runs; name each path literally",
                         "filesystem")
        if _FILE_DELETE_CODE.search(code):
            if _HOME_CODE.search(code):
                return _deny("inline-code-delete", f"{item.language} code deletes a path built from the home "
                             "directory or the environment", "filesystem")
            for code_path in _CODE_PATH.finditer(code):
                path = code_path.group(1)
                if path.startswith("~") or self._paths.outside_temp(path, item.cwds):
                    return _deny("inline-code-delete", f"{item.language} code deletes {path!r}", "filesystem")
        return None


def _in_script(script: str | None) -> str:
    return f" (in the script {script})" if script else ""


def _from_script(decision: GuardDecision | None, script: str | None) -> GuardDecision | None:
    """A deny found in a script file on disk says which file."""
    if decision is None or not script:
        return decision
    return decision._replace(reason=f"in the script {script}: {decision.reason}")


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
