"""What a shell command string would *execute*, found with a real shell parser.

`analyze()` parses a command with bashlex and walks the tree the way bash runs
it, yielding every simple command that would be executed — never words that
are only mentioned (echo arguments, commit messages, heredoc data):

- lists, pipelines, subshells, brace groups, if/while/until/for, functions;
- `$(…)`, backticks and `<(…)`, also inside double quotes, assignments and
  redirection targets;
- strings a shell runs: `bash -c`/`sh -c`, `eval`, heredocs, here-strings and
  `echo …|sh` fed to a shell, `trap`, `watch`, `su -c`, `flock -c`, git
  `!aliases`, `git submodule foreach`, `git rebase --exec`, `find -exec`;
- wrappers (`sudo`, `env`, `command`, `builtin`, `exec`, `nohup`, `nice`, `time`,
  `timeout`, `stdbuf`, `ionice`, `setsid`, `xargs`, …) are peeled off;
- the working directory is followed through `cd`/`pushd` (`cd /tmp && rm -rf x`)
  with bash's `&&`/`||`/`;` semantics: where a `cd` may have failed, both
  directories stay possible;
- simple variables assigned in the command are followed (`D=$(mktemp -d); rm -rf "$D"`);
  `$TMPDIR` stands for the temp root unless the command assigns it.

Code handed to an interpreter (`python -c`, `node -e`, heredocs fed to python…)
is reported as `InlineCode`; shell strings inside it (`os.system("…")`,
`` `…` `` in ruby/perl) are analysed as commands too.

Text whose value cannot be known statically is replaced by `UNKNOWN`. When
bashlex cannot parse a command (it lacks `[[ ]]`, `case`, `$(( ))`, the `time`
keyword, …) a conservative shlex-based tokenizer takes over: it splits on
every operator and parenthesis, so it may see more commands than bash would,
never fewer.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import bashlex
import bashlex.errors
import bashlex.subst

UNKNOWN = "\x00"
"""Marks text that cannot be known before the command runs."""
HOME = UNKNOWN + "~"
"""The home directory (`~`, `$HOME`): unknown too, but worth naming in messages."""

MAX_DEPTH = 12
_BASHLEX_MAX_CHARS = 200_000

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=")
_PARAMETER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-=?+])(.*))?", re.DOTALL)
_PLAIN_PARAMETER = re.compile(r"\$\{([^{}]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)|\$([0-9@*#?$!-])")
_QUOTED_HEREDOC = re.compile(r"(?<!<)(<<-?)([ \t]*)(?:(['\"])([A-Za-z0-9_.\-]+)\3|\\([A-Za-z0-9_.\-]+))")
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "rbash", "fish"})


# ----------------------------------------------------------------------------- results
@dataclass(frozen=True)
class SimpleCommand:
    """One executed command: `argv[0]` is the normalized command name (`/usr/bin/git` → `git`)."""

    argv: tuple[str, ...]
    cwds: frozenset[str | None]

    @property
    def name(self) -> str:
        return self.argv[0]

    @property
    def args(self) -> tuple[str, ...]:
        return self.argv[1:]

    @property
    def text(self) -> str:
        return display(" ".join(self.argv))


@dataclass(frozen=True)
class InlineCode:
    """Program text handed to an interpreter (`python -c CODE`, `node -e CODE`, a heredoc to ruby…)."""

    language: str
    code: str
    cwds: frozenset[str | None]


@dataclass(frozen=True)
class OutputRedirect:
    """A file the shell opens for writing (`> target`, `>> target`, `&> target`)."""

    target: str
    cwds: frozenset[str | None]


@dataclass(frozen=True)
class Unanalysable:
    """A part of the command the analysis could not follow (too deeply nested)."""

    reason: str


Executed = SimpleCommand | InlineCode | OutputRedirect | Unanalysable


@dataclass(frozen=True)
class Analysis:
    executed: tuple[Executed, ...]
    parser: Literal["bashlex", "fallback"]


def display(text: str) -> str:
    """`text` with the HOME marker shown as `~` and the UNKNOWN marker as `…`."""
    return text.replace(HOME, "~").replace(UNKNOWN, "…")


def command_name(word: str) -> str:
    """Normalize a command word: drop quotes and backslashes, the directory and the case."""
    name = word.replace("\\", "").replace("'", "").replace('"', "")
    if "/" in name.rstrip("/"):
        name = name.rstrip("/").rsplit("/", 1)[1]
    return name.lower()


def normalize_path(path: str) -> str:
    """Lexical normalization: `..` and `.` folded, one leading slash, no trailing slash."""
    norm = posixpath.normpath(path)
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    return norm


def chdir(cwd: str | None, target: str) -> str | None:
    """The directory `cd target` leads to from `cwd`, or None when it cannot be known."""
    if not target or UNKNOWN in target:
        return None
    if target.startswith("/"):
        return normalize_path(target)
    if cwd is None:
        return None
    return normalize_path(posixpath.join(cwd, target))


# ----------------------------------------------------------------------------- state
@dataclass(frozen=True, eq=False)
class State:
    """What the shell knows at one point: possible working directories and assigned variables.

    A variable mapped to None was assigned a value that cannot be known; an absent
    variable comes from the environment.
    """

    cwds: frozenset[str | None]
    vars: Mapping[str, str | None] = field(default_factory=dict)

    def join(self, other: State) -> State:
        if other is self:
            return self
        merged: dict[str, str | None] = {}
        for name in set(self.vars) | set(other.vars):
            mine, theirs = self.vars.get(name, UNKNOWN), other.vars.get(name, UNKNOWN)
            merged[name] = mine if mine == theirs and mine != UNKNOWN else None
        return State(self.cwds | other.cwds, merged)

    def with_var(self, name: str, value: str | None) -> State:
        return State(self.cwds, {**self.vars, name: value})

    def with_cwds(self, cwds: frozenset[str | None]) -> State:
        return State(cwds, self.vars)

    def child_shell(self, env: Mapping[str, str | None]) -> State:
        """A new shell process: unexported variables are gone, so every known one becomes unknown."""
        return State(self.cwds, {**{name: None for name in self.vars}, **env})


Flow = tuple[State, State]
"""The state after a command succeeded, and after it failed (or was skipped)."""
Step = Callable[[State], Flow]


def fold(items: Sequence[tuple[str | None, Step]], state: State) -> Flow:
    """Run `op step` items left to right with bash's `&&`, `||` and `;` semantics."""
    succ = fail = state
    for index, (op, step) in enumerate(items):
        if index == 0:
            succ, fail = step(state)
        elif op == "&&":
            s, f = step(succ)
            succ, fail = s, fail.join(f)
        elif op == "||":
            s, f = step(fail)
            succ, fail = succ.join(s), f
        else:
            succ, fail = step(succ.join(fail))
    return succ, fail


# ----------------------------------------------------------------------------- options
def parse_options(
    args: Sequence[str], short_arg: str = "", long_arg: frozenset[str] = frozenset()
) -> tuple[dict[str, str], int]:
    """Options before the first operand: {"-x": value or "", "--name": value}, and the operand index.

    `short_arg` lists the short letters and `long_arg` the long names that take a value.
    """
    seen: dict[str, str] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return seen, i + 1
        if arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            if name in long_arg and not eq:
                value = args[i + 1] if i + 1 < len(args) else ""
                i += 1
            seen["--" + name] = value
        elif arg.startswith("-") and len(arg) > 1:
            for j, letter in enumerate(arg[1:], start=1):
                if letter in short_arg:
                    value = arg[j + 1:]
                    if not value:
                        value = args[i + 1] if i + 1 < len(args) else ""
                        i += 1
                    seen["-" + letter] = value
                    break
                seen["-" + letter] = ""
        else:
            return seen, i
        i += 1
    return seen, i


@dataclass(frozen=True)
class GitCall:
    """A git invocation with its global options resolved."""

    subcommand: str | None
    args: tuple[str, ...]
    chdirs: tuple[str, ...] = ()
    shell_alias: str | None = None
    info_only: bool = False

    @property
    def nested_scripts(self) -> list[str]:
        """Shell command strings git itself would run for this call."""
        args = list(self.args)
        if self.subcommand == "submodule" and args[:1] == ["foreach"]:
            rest = [a for a in args[1:] if a not in ("--recursive", "-q", "--quiet")]
            return [" ".join(rest)] if rest else []
        if self.subcommand == "rebase":
            opts, _ = parse_options(args, "x", frozenset({"exec"}))
            return [v for k, v in opts.items() if k in ("-x", "--exec") and v]
        if self.subcommand == "bisect" and args[:1] == ["run"]:
            return [" ".join(args[1:])] if len(args) > 1 else []
        return []


_GIT_SHORT_ARG = "Cc"
_GIT_LONG_ARG = frozenset({"git-dir", "work-tree", "namespace", "config-env", "super-prefix", "list-cmds"})
_GIT_INFO = frozenset({"--version", "-v", "--help", "-h", "--exec-path", "--html-path", "--man-path",
                       "--info-path"})


def parse_git_argv(args: Sequence[str]) -> GitCall:
    """Split `git [global options] <subcommand> args…`, expanding `-c alias.X=…` aliases."""
    chdirs: list[str] = []
    aliases: dict[str, str] = {}
    i = 0
    while i < len(args) and args[i].startswith("-"):
        arg = args[i]
        if arg in _GIT_INFO:
            return GitCall(None, tuple(args[i + 1:]), tuple(chdirs), info_only=True)
        if arg in ("-C", "-c") or arg[2:] in _GIT_LONG_ARG:
            value = args[i + 1] if i + 1 < len(args) else ""
            if arg == "-C":
                chdirs.append(value)
            elif arg == "-c":
                key, _, alias_value = value.partition("=")
                if key.lower().startswith("alias."):
                    aliases[key[6:]] = alias_value
            i += 2
            continue
        i += 1
    if i >= len(args):
        return GitCall(None, (), tuple(chdirs))
    sub, rest = args[i], tuple(args[i + 1:])
    alias = aliases.get(sub)
    if alias is not None:
        if alias.startswith("!"):
            return GitCall(sub, rest, tuple(chdirs), shell_alias=" ".join([alias[1:], *rest]))
        words = split_words(alias)
        if words:
            sub, rest = words[0], (*words[1:], *rest)
    info = "--help" in rest or sub == "help"
    return GitCall(sub, rest, tuple(chdirs), info_only=info)


def split_words(text: str) -> list[str]:
    """Shell-like word splitting that never raises (unbalanced quotes fall back to whitespace)."""
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


# ----------------------------------------------------------------------------- wrappers
@dataclass(frozen=True)
class _Unwrapped:
    argv: list[str]
    chdir: str | None = None
    script: str | None = None
    env: Mapping[str, str | None] = field(default_factory=dict)
    xargs_replace: str | None = None
    noexec: bool = False


_NOEXEC = _Unwrapped([], noexec=True)


def _strip_assignments(args: list[str]) -> tuple[list[str], dict[str, str | None]]:
    env: dict[str, str | None] = {}
    while args and (args[0] == "-" or _ASSIGNMENT.match(args[0])):
        match = _ASSIGNMENT.match(args[0])
        if match:
            env[match.group(1)] = args[0][match.end():]
        args = args[1:]
    return args, env


def _unwrap_sudo(args: list[str]) -> _Unwrapped:
    opts, i = parse_options(args, "ugpCDrtUTh", frozenset(
        {"user", "group", "prompt", "close-from", "chdir", "role", "type", "other-user", "host",
         "command-timeout"}))
    if any(k in opts for k in ("-l", "-v", "-V", "-K", "-e", "--list", "--validate", "--version", "--edit")):
        return _NOEXEC
    rest, env = _strip_assignments(args[i:])
    chdir_to = opts.get("-D") or opts.get("--chdir")
    if any(k in opts for k in ("-s", "-i", "--shell", "--login")):
        return _Unwrapped([], chdir_to, script=" ".join(rest), env=env) if rest else _NOEXEC
    return _Unwrapped(rest, chdir_to, env=env)


def _unwrap_doas(args: list[str]) -> _Unwrapped:
    opts, i = parse_options(args, "uC")
    if "-s" in opts:
        return _NOEXEC
    return _Unwrapped(args[i:])


def _unwrap_env(args: list[str]) -> _Unwrapped:
    opts, i = parse_options(args, "uCS", frozenset({"unset", "chdir", "split-string", "block-signal",
                                                    "default-signal", "ignore-signal"}))
    rest, env = _strip_assignments(args[i:])
    split = opts.get("-S", opts.get("--split-string"))
    if split is not None:
        rest = split_words(split) + rest
    return _Unwrapped(rest, opts.get("-C") or opts.get("--chdir"), env=env)


def _unwrap_command(args: list[str]) -> _Unwrapped:
    opts, i = parse_options(args)
    if "-v" in opts or "-V" in opts:
        return _NOEXEC
    return _Unwrapped(args[i:])


def _unwrap_timeout(args: list[str]) -> _Unwrapped:
    _, i = parse_options(args, "sk", frozenset({"signal", "kill-after"}))
    return _Unwrapped(args[i + 1:])


def _unwrap_ionice(args: list[str]) -> _Unwrapped:
    opts, i = parse_options(args, "cnpPu", frozenset({"class", "classdata", "pid", "pgid", "uid"}))
    if any(k in opts for k in ("-p", "-P", "-u", "--pid", "--pgid", "--uid")):
        return _NOEXEC
    return _Unwrapped(args[i:])


def _unwrap_xargs(args: list[str]) -> _Unwrapped:
    opts, i = parse_options(args, "IELnPsda", frozenset(
        {"replace", "eof", "max-lines", "max-args", "max-procs", "max-chars", "delimiter", "arg-file",
         "process-slot-var"}))
    replace = opts.get("-I") or opts.get("--replace") or ("{}" if "-i" in opts else "")
    return _Unwrapped(args[i:] or ["echo"], xargs_replace=replace)


def _unwrap_watch(args: list[str]) -> _Unwrapped:
    opts, i = parse_options(args, "nq", frozenset({"interval", "equexit"}))
    if "-x" in opts or "--exec" in opts:
        return _Unwrapped(args[i:])
    return _Unwrapped([], script=" ".join(args[i:]))


def _unwrap_flock(args: list[str]) -> _Unwrapped:
    opts, i = parse_options(args, "wEc", frozenset({"wait", "timeout", "conflict-exit-code", "command"}))
    rest = args[i + 1:]
    if rest[:1] in (["-c"], ["--command"]):
        return _Unwrapped([], script=rest[1] if len(rest) > 1 else "")
    command = opts.get("-c", opts.get("--command"))
    return _Unwrapped([], script=command) if command is not None else _Unwrapped(rest)


def _unwrap_script_runner(short: str, long: frozenset[str], keys: tuple[str, ...]) -> Callable[
        [list[str]], _Unwrapped]:
    def unwrap(args: list[str]) -> _Unwrapped:
        opts, _ = parse_options(args, short, long)
        script = next((opts[k] for k in keys if k in opts), None)
        return _Unwrapped([], script=script) if script is not None else _NOEXEC
    return unwrap


def _unwrap_plain(short_arg: str = "", long_arg: frozenset[str] = frozenset()) -> Callable[
        [list[str]], _Unwrapped]:
    def unwrap(args: list[str]) -> _Unwrapped:
        _, i = parse_options(args, short_arg, long_arg)
        return _Unwrapped(args[i:])
    return unwrap


_WRAPPERS: dict[str, Callable[[list[str]], _Unwrapped]] = {
    "sudo": _unwrap_sudo,
    "doas": _unwrap_doas,
    "env": _unwrap_env,
    "command": _unwrap_command,
    "builtin": _unwrap_plain(),
    "exec": _unwrap_plain("a"),
    "nohup": _unwrap_plain(),
    "nice": _unwrap_plain("n", frozenset({"adjustment"})),
    "time": _unwrap_plain("fo", frozenset({"format", "output"})),
    "timeout": _unwrap_timeout,
    "gtimeout": _unwrap_timeout,
    "stdbuf": _unwrap_plain("ioe", frozenset({"input", "output", "error"})),
    "ionice": _unwrap_ionice,
    "setsid": _unwrap_plain(),
    "unbuffer": _unwrap_plain(),
    "chronic": _unwrap_plain(),
    "busybox": lambda args: _Unwrapped(args),
    "strace": _unwrap_plain("aeoOpPsSuXbIE"),
    "ltrace": _unwrap_plain("aeoOpPsSuXbIE"),
    "xargs": _unwrap_xargs,
    "watch": _unwrap_watch,
    "flock": _unwrap_flock,
    "su": _unwrap_script_runner("cgGsw", frozenset({"command", "group", "supp-group", "shell",
                                                   "session-command", "whitelist-environment"}),
                                ("-c", "--command", "--session-command")),
    "script": _unwrap_script_runner("cEIOBTm", frozenset({"command", "echo", "log-in", "log-out", "log-io",
                                                         "log-timing", "logging-format"}),
                                    ("-c", "--command")),
}


# ----------------------------------------------------------------------------- interpreters
@dataclass(frozen=True)
class _Interpreter:
    language: str
    code_short: str
    code_long: frozenset[str] = frozenset()
    arg_short: str = ""
    module_short: str = ""
    first_code_ends_options: bool = False


_PYTHON = _Interpreter("python", "c", arg_short="WXQ", module_short="m", first_code_ends_options=True)
_NODE = _Interpreter("node", "ep", frozenset({"eval", "print"}), arg_short="r")
_RUBY = _Interpreter("ruby", "e", arg_short="rICEF")
_PERL = _Interpreter("perl", "eE", arg_short="ICDFMmx")
_PHP = _Interpreter("php", "r", arg_short="cdz")
_INTERPRETERS: list[tuple[re.Pattern[str], _Interpreter]] = [
    (re.compile(r"(python|pypy)[0-9.]*"), _PYTHON),
    (re.compile(r"node(js)?|bun"), _NODE),
    (re.compile(r"ruby[0-9.]*|jruby"), _RUBY),
    (re.compile(r"perl[0-9.]*"), _PERL),
    (re.compile(r"php[0-9.]*"), _PHP),
]
_EXEC_HINT = re.compile(
    r"\b(system|exec|execSync|execFile|execFileSync|spawn|spawnSync|popen|Popen|call|check_call|check_output|"
    r"run|getoutput|getstatusoutput|shell_exec|passthru|proc_open|Open3|capture2e?|capture3|qx|\$)\s*[({'\"\[]"
)
_STRING_LITERAL = re.compile(r"'((?:[^'\\\n]|\\.)*)'|\"((?:[^\"\\\n]|\\.)*)\"")
_LIST_LITERAL = re.compile(r"\[([^\[\]]*)\]")
_NAME_THEN_LIST = re.compile(r"(['\"])([^'\"\n]*)\1\s*,\s*\[([^\[\]]*)\]")
_BACKTICKS = re.compile(r"`([^`]*)`|%x\{([^}]*)\}|%x\(([^)]*)\)|qx\{([^}]*)\}|qx\(([^)]*)\)")


def _interpreter(name: str) -> _Interpreter | None:
    return next((interp for pattern, interp in _INTERPRETERS if pattern.fullmatch(name)), None)


def _inline_codes(interp: _Interpreter, args: Sequence[str]) -> tuple[list[str], bool]:
    """The code strings passed on the command line, and whether the program is read from stdin."""
    codes: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        step = 1
        if arg == "--":
            break
        if arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            if name in interp.code_long:
                codes.append(value if eq else (args[i + 1] if i + 1 < len(args) else ""))
                step = 1 if eq else 2
        elif arg.startswith("-") and len(arg) > 1:
            for j, letter in enumerate(arg[1:], start=1):
                attached = arg[j + 1:]
                if letter in interp.code_short:
                    codes.append(attached or (args[i + 1] if i + 1 < len(args) else ""))
                    step = 1 if attached else 2
                    break
                if letter in interp.module_short:
                    return codes, False
                if letter in interp.arg_short:
                    step = 1 if attached else 2
                    break
        elif arg == "-":
            return codes, not codes
        else:
            return codes, False
        if codes and interp.first_code_ends_options:
            return codes, False
        i += step
    return codes, not codes


def _literal_text(match: re.Match[str]) -> str:
    raw = match.group(1) if match.group(1) is not None else match.group(2)
    return re.sub(r"\\(.)", r"\1", raw or "")


def shell_strings_in_code(language: str, code: str) -> list[str]:
    """Strings inside program text that the program hands to a shell (or to exec) to run."""
    found: list[str] = []
    if language in ("ruby", "perl", "php"):
        found += [next(g for g in m.groups() if g is not None) for m in _BACKTICKS.finditer(code)]
    if not _EXEC_HINT.search(code):
        return found
    found += [_literal_text(m) for m in _STRING_LITERAL.finditer(code)]
    for match in _LIST_LITERAL.finditer(code):
        found.append(" ".join(_literal_text(m) for m in _STRING_LITERAL.finditer(match.group(1))))
    for match in _NAME_THEN_LIST.finditer(code):
        rest = " ".join(_literal_text(m) for m in _STRING_LITERAL.finditer(match.group(3)))
        found.append(f"{match.group(2)} {rest}")
    return [text for text in dict.fromkeys(found) if text.strip()]


def _shell_invocation(args: Sequence[str]) -> tuple[str | None, bool]:
    """`(command string, reads stdin)` for `bash [options] [-c string | script | -s]`."""
    has_c = reads_stdin = False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if arg in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if arg.startswith("--"):
            i += 1
            continue
        if arg[:1] in ("-", "+") and len(arg) > 1:
            has_c = has_c or "c" in arg[1:]
            reads_stdin = reads_stdin or "s" in arg[1:]
            i += 1
            continue
        break
    operands = args[i:]
    if has_c:
        return (operands[0] if operands else ""), False
    return None, reads_stdin or not operands


# ----------------------------------------------------------------------------- analyzer
class _Unsupported(Exception):
    """A bashlex node the walker does not know: the whole command goes to the fallback tokenizer."""


_Outcome = tuple[State, State, str | None]
"""A command's flow, plus what it prints when that is plain data (for `echo … | sh`)."""


class _Analyzer:
    def __init__(self, temp_root: str, max_depth: int) -> None:
        self.temp_root = temp_root
        self.max_depth = max_depth
        self.out: list[Executed] = []
        self.used_fallback = False

    # -- scripts
    def script(self, text: str, state: State, depth: int) -> Flow:
        if depth > self.max_depth:
            self.out.append(Unanalysable(f"commands nested more than {self.max_depth} levels deep"))
            return state, state
        if not text.strip():
            return state, state
        mark = len(self.out)
        if len(text) <= _BASHLEX_MAX_CHARS:
            try:
                return _BashlexWalker(self, text, depth).run(state)
            except Exception:  # noqa: BLE001 - bashlex raises ParsingError, NotImplementedError, RecursionError…
                del self.out[mark:]
        self.used_fallback = True
        return _FallbackWalker(self, text, depth).run(state)

    # -- values
    def lookup(self, name: str, state: State) -> str | None:
        if name in state.vars:
            return state.vars[name]
        if name == "TMPDIR":
            return self.temp_root
        if name == "HOME":
            return HOME
        if name == "PWD" and len(state.cwds) == 1:
            return next(iter(state.cwds))
        return None

    def expand_parameter(self, expression: str, state: State, depth: int) -> str:
        """The value of `${expression}`: plain names and the `:-`/`:=` defaults; anything else is UNKNOWN."""
        match = _PARAMETER.fullmatch(expression)
        if match is None:
            return UNKNOWN
        name, op, default = match.groups()
        value = self.lookup(name, state)
        if op is None or op in (":?", "?"):
            return UNKNOWN if value is None else value
        if op in (":+", "+") or value is None:
            if default and any(marker in default for marker in ("$(", "`")):
                self.expand_plain(default, state, depth)  # still analyse what the default would run
            return UNKNOWN
        return self.expand_plain(default or "", state, depth) if value == "" else value

    def expand_plain(self, text: str, state: State, depth: int, run_substitutions: bool = True) -> str:
        """Expand `$NAME`, `${…}` and a leading `~` in text that has no parser structure."""
        if run_substitutions and ("$(" in text or "`" in text):
            text = self.lift_substitutions(text, state, depth)
        if text.startswith("~"):
            user, slash, rest = text[1:].partition("/")
            text = (UNKNOWN if user else HOME) + slash + rest

        def replace(match: re.Match[str]) -> str:
            if match.group(1) is not None:
                return self.expand_parameter(match.group(1), state, depth)
            if match.group(2) is not None:
                value = self.lookup(match.group(2), state)
                return UNKNOWN if value is None else value
            return UNKNOWN

        return _PLAIN_PARAMETER.sub(replace, text) if "$" in text else text

    def substitution_value(self, argv: Sequence[str] | None, state: State) -> str:
        """What `$(argv)` prints, when that is known: `mktemp -d` makes a fresh temp dir, `pwd` the cwd."""
        if not argv:
            return UNKNOWN
        name = command_name(argv[0])
        if name == "mktemp":
            opts, i = parse_options(argv[1:], "p", frozenset({"tmpdir", "suffix"}))
            directory = "-d" in opts or "--directory" in opts
            in_tmp = "-t" in opts or not argv[1 + i:]
            if directory and in_tmp and "-p" not in opts and "--tmpdir" not in opts:
                return posixpath.join(self.temp_root, "tmp.mktemp")
        if name == "pwd" and len(state.cwds) == 1:
            cwd = next(iter(state.cwds))
            return UNKNOWN if cwd is None else cwd
        return UNKNOWN

    def lift_substitutions(self, text: str, state: State, depth: int) -> str:
        """Analyse each `$(…)`, `` `…` ``, `<(…)`, `>(…)` in `text` and replace it by its value."""
        out: list[str] = []
        i, n = 0, len(text)
        single = double = False
        while i < n:
            ch = text[i]
            if single:
                single = ch != "'"
                out.append(ch)
                i += 1
                continue
            if ch == "\\":
                out.append(text[i:i + 2])
                i += 2
                continue
            if ch == "'" and not double:
                single = True
            elif ch == '"':
                double = not double
            if text.startswith("$((", i):  # arithmetic: its value is a number
                out.append("0")
                i = _matching_paren(text, i + 2) + 1
                continue
            opener = text[i:i + 2]
            if opener == "$(" or (opener in ("<(", ">(") and not double):
                end = _matching_paren(text, i + 2)
                out.append(self._substitute(text[i + 2:end], state, depth, opener == "$("))
                i = end + 1
                continue
            if ch == "`":
                end = _closing_backtick(text, i + 1)
                out.append(self._substitute(text[i + 1:end].replace("\\`", "`"), state, depth, True))
                i = end + 1
                continue
            out.append(ch)
            i += 1
        return "".join(out)

    def _substitute(self, inner: str, state: State, depth: int, prints: bool) -> str:
        self.script(inner, state, depth + 1)
        return self.substitution_value(split_words(inner), state) if prints else UNKNOWN

    # -- simple commands
    def run_simple(self, argv: list[str], state: State, stdin: str | None,
                   env: Mapping[str, str | None], depth: int) -> _Outcome:
        """Follow one simple command: peel wrappers, then run it (or what it runs) through its semantics."""
        cwds = state.cwds
        env = dict(env)
        for _ in range(16):
            if not argv:
                return state, state, None
            unwrap = _WRAPPERS.get(command_name(argv[0]))
            if unwrap is None:
                break
            step = unwrap(list(argv[1:]))
            env.update(step.env)
            if step.chdir is not None:
                cwds = frozenset(chdir(cwd, step.chdir) for cwd in cwds)
            if step.script is not None:
                self.script(step.script, state.with_cwds(cwds).child_shell(env), depth + 1)
            if step.noexec or step.script is not None:
                return state, state, None
            argv = _apply_xargs(step.argv, step.xargs_replace) if step.xargs_replace is not None else step.argv
        name = command_name(argv[0])
        here = state.with_cwds(cwds)
        self.out.append(SimpleCommand((name, *argv[1:]), cwds))
        special = self._builtin(name, argv[1:], here, depth)
        if special is not None:
            return special
        return self._external(name, argv[1:], here, stdin, env, depth)

    def _builtin(self, name: str, args: list[str], state: State, depth: int) -> _Outcome | None:
        """Commands that change the shell itself (cd, variables, eval, trap)."""
        if name in ("cd", "pushd", "chdir"):
            operands = [a for a in args if not (a.startswith("-") and len(a) > 1)]
            target = operands[0] if operands else None
            if target is None or target == "-":
                return state.with_cwds(frozenset({None})), state, None
            return state.with_cwds(frozenset(chdir(cwd, target) for cwd in state.cwds)), state, None
        if name == "popd":
            return state.with_cwds(frozenset({None})), state, None
        if name in ("export", "declare", "typeset", "local", "readonly"):
            new = state
            for arg in args:
                match = _ASSIGNMENT.match(arg)
                if match:
                    new = new.with_var(match.group(1), None if match.group(2) else arg[match.end():])
            return new, new, None
        if name in ("read", "mapfile", "readarray", "getopts", "unset"):
            new = state
            for arg in args:
                if _NAME.fullmatch(arg):
                    new = new.with_var(arg, "" if name == "unset" else None)
            return new, new, None
        if name == "eval":
            succ, fail = self.script(" ".join(args), state, depth + 1)
            return succ, fail, None
        if name == "trap" and args and not args[0].startswith("-"):
            self.script(args[0], state, depth + 1)
            return state, state, None
        return None

    def _external(self, name: str, args: list[str], state: State, stdin: str | None,
                  env: Mapping[str, str | None], depth: int) -> _Outcome:
        if name in _SHELLS:
            command, reads_stdin = _shell_invocation(args)
            script = command if command is not None else (stdin if reads_stdin else None)
            if script is not None:
                self.script(script, state.child_shell(env), depth + 1)
        interp = _interpreter(name)
        if interp is not None:
            self._inline(interp, args, state, stdin, env, depth)
        if name == "find":
            self._find_exec(args, state, depth)
        if name == "git":
            call = parse_git_argv(args)
            for script in ([call.shell_alias] if call.shell_alias else []) + call.nested_scripts:
                self.script(script, state.child_shell(env), depth + 1)
        return state, state, _printed(name, args, stdin)

    def _inline(self, interp: _Interpreter, args: list[str], state: State, stdin: str | None,
                env: Mapping[str, str | None], depth: int) -> None:
        codes, reads_stdin = _inline_codes(interp, args)
        if reads_stdin and stdin is not None:
            codes.append(stdin)
        for code in codes:
            self.out.append(InlineCode(interp.language, code, state.cwds))
            for script in shell_strings_in_code(interp.language, code):
                self.script(script, state.child_shell(env), depth + 1)

    def _find_exec(self, args: list[str], state: State, depth: int) -> None:
        roots, expression = find_roots(args)
        i = 0
        while i < len(expression):
            if expression[i] in ("-exec", "-execdir", "-ok", "-okdir"):
                end = i + 1
                while end < len(expression) and expression[end] not in (";", "+"):
                    end += 1
                for root in roots:
                    argv = [root if w == "{}" else w.replace("{}", UNKNOWN) for w in expression[i + 1:end]]
                    self.run_simple(argv, state, None, {}, depth)
                i = end
            i += 1


def find_roots(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """`find [-H|-L|-P|-Dx|-Ox] roots… expression…` → (roots, expression); no root means `.`."""
    i = 0
    while i < len(args) and (args[i] in ("-H", "-L", "-P") or args[i][:2] in ("-D", "-O")):
        i += 2 if args[i] == "-D" else 1
    roots: list[str] = []
    while i < len(args) and not args[i].startswith("-") and args[i] not in ("(", "!", ")", ","):
        roots.append(args[i])
        i += 1
    return roots or ["."], list(args[i:])


def _apply_xargs(argv: list[str], replace: str) -> list[str]:
    """xargs adds arguments read from stdin: unknown words, at the replace-string or at the end."""
    if replace:
        replaced = [w.replace(replace, UNKNOWN) for w in argv]
        return replaced if replaced != argv else [*argv, UNKNOWN]
    return [*argv, UNKNOWN]


def _printed(name: str, args: Sequence[str], stdin: str | None) -> str | None:
    """What a command prints, when it is plain data (`echo …`, `printf …`, `cat` of a heredoc)."""
    if name == "echo":
        words = list(args)
        while words and re.fullmatch(r"-[neE]+", words[0]):
            words = words[1:]
        return " ".join(words)
    if name == "printf":
        return " ".join(args)
    if name == "cat" and not args and stdin is not None:
        return stdin
    return None


def _matching_paren(text: str, start: int) -> int:
    """Index of the `)` closing a group whose body starts at `start` (len(text) when unclosed)."""
    depth, i, n = 1, start, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch in ("'", '"'):
            close = text.find(ch, i + 1)
            i = n if close < 0 else close + 1
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return n


def _closing_backtick(text: str, start: int) -> int:
    i = start
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == "`":
            return i
        i += 1
    return len(text)


# ----------------------------------------------------------------------------- bashlex walker
_bashlex_paramexpand = bashlex.subst._paramexpand


def _paramexpand_terminating(parserobj: Any, string: str, sindex: int) -> Any:
    """bashlex 0.18 loops forever, growing memory, on a `${` with no `}` after it in a partly
    single-quoted word (`a'${'`): its `}` lookup returns -1 and the scan restarts at 0."""
    if string.startswith("${", sindex) and string.find("}", sindex + 2) < 0:
        raise bashlex.errors.ParsingError("unterminated ${", string, sindex)
    return _bashlex_paramexpand(parserobj, string, sindex)


bashlex.subst._paramexpand = _paramexpand_terminating


def _unquote_heredoc_delimiters(text: str) -> tuple[str, frozenset[int]]:
    """bashlex cannot end a heredoc whose delimiter is quoted (`<<'EOF'`): blank the quotes
    (same length, so node positions stay valid) and remember where the delimiters start."""
    positions: set[int] = set()

    def blank(match: re.Match[str]) -> str:
        positions.add(match.start() + len(match.group(1)) + len(match.group(2)) + 1)
        word = match.group(4) if match.group(4) is not None else match.group(5)
        if match.group(4) is not None:
            return f"{match.group(1)}{match.group(2)} {word} "
        return f"{match.group(1)}{match.group(2)} {word}"

    return _QUOTED_HEREDOC.sub(blank, text), frozenset(positions)


_LOOP_PASSES_NESTING = 3


class _BashlexWalker:
    def __init__(self, analyzer: _Analyzer, text: str, depth: int) -> None:
        self.an = analyzer
        self.source, self.quoted_heredocs = _unquote_heredoc_delimiters(text)
        self.depth = depth
        self.loops = 0

    def run(self, state: State) -> Flow:
        trees = bashlex.parse(self.source)
        return fold([(None if i == 0 else ";", self._step(tree)) for i, tree in enumerate(trees)], state)

    def _step(self, node: Any) -> Step:
        return lambda state: self.walk(node, state)

    def walk(self, node: Any, state: State) -> Flow:
        kind = node.kind
        if kind == "list":
            return self._list(node.parts, state)
        if kind == "pipeline":
            return self._pipeline(node.parts, state)
        if kind == "command":
            succ, fail, _ = self._command(node, state, None)
            return succ, fail
        if kind == "compound":
            return self._compound(node, state)
        if kind in ("if", "for", "while", "until"):
            return self._branches(node, state)
        if kind == "function":
            for part in node.parts:
                if part.kind == "compound":
                    self.walk(part, state)
            return state, state
        raise _Unsupported(kind)

    def _list(self, parts: Sequence[Any], state: State) -> Flow:
        items: list[tuple[str | None, Step]] = []
        op: str | None = None
        for part in parts:
            if part.kind == "operator":
                op = part.op
            else:
                items.append((op if items else None, self._step(part)))
        return fold(items, state)

    def _pipeline(self, parts: Sequence[Any], state: State) -> Flow:
        printed: str | None = None
        for part in parts:
            if part.kind in ("pipe", "reservedword"):
                continue
            if part.kind == "command":
                _, _, printed = self._command(part, state, printed)
            else:
                self.walk(part, state)
                printed = None
        return state, state

    def _compound(self, node: Any, state: State) -> Flow:
        for redirect in getattr(node, "redirects", None) or []:
            self._redirect(redirect, state)
        subshell = bool(node.list) and node.list[0].kind == "reservedword" and node.list[0].word == "("
        inner = [part for part in node.list if part.kind != "reservedword"]
        succ, fail = fold([(None if i == 0 else ";", self._step(p)) for i, p in enumerate(inner)], state)
        return (state, state) if subshell else (succ, fail)

    def _branches(self, node: Any, state: State) -> Flow:
        """if/while/until/for: every branch may run. A loop body is walked twice, for what one pass
        leaves to the next (only for the outer loops: nested doubling would be exponential)."""
        acc = state
        loop_var = node.parts[1].word if node.kind == "for" and len(node.parts) > 1 else None
        passes = 2 if node.kind != "if" and self.loops < _LOOP_PASSES_NESTING else 1
        self.loops += node.kind != "if"
        try:
            return self._walk_branches(node, acc, loop_var, passes)
        finally:
            self.loops -= node.kind != "if"

    def _walk_branches(self, node: Any, acc: State, loop_var: str | None, passes: int) -> Flow:
        for _ in range(passes):
            if loop_var:
                acc = acc.with_var(loop_var, None)
            for index, part in enumerate(node.parts):
                if part.kind == "reservedword" or (loop_var and index == 1):
                    continue
                if part.kind == "word":
                    self.word(part, acc)
                    continue
                succ, fail = self.walk(part, acc)
                acc = acc.join(succ).join(fail)
        return acc, acc

    def _command(self, node: Any, state: State, stdin: str | None) -> _Outcome:
        words: list[str] = []
        assignments: list[tuple[str, str | None]] = []
        for part in node.parts:
            if part.kind == "word":
                words.append(self.word(part, state))
            elif part.kind == "assignment":
                assignments.extend(self._assignment(part, state))
            elif part.kind == "redirect":
                body = self._redirect(part, state)
                stdin = body if body is not None else stdin
            else:
                raise _Unsupported(part.kind)
        if not words:
            new = state
            for name, value in assignments:
                new = new.with_var(name, value)
            return new, new, None
        return self.an.run_simple(words, state, stdin, dict(assignments), self.depth)

    def _assignment(self, node: Any, state: State) -> list[tuple[str, str | None]]:
        start, end = node.pos
        raw = self.source[start:end]
        match = _ASSIGNMENT.match(raw)
        if match is None:
            return []
        value = self._scan(raw[match.end():], start + match.end(), getattr(node, "parts", None) or [], state)
        return [(match.group(1), None if match.group(2) else value)]

    def _redirect(self, node: Any, state: State) -> str | None:
        """Handle one redirection; return the text it feeds to stdin (heredoc, here-string), if any."""
        rtype = node.type
        target = node.output
        if rtype in ("<<", "<<-"):
            body = _heredoc_body(str(node.heredoc.value), str(target.word), rtype == "<<-")
            if target.pos[0] not in self.quoted_heredocs:
                body = self.an.lift_substitutions(body, state, self.depth)
            return body
        if target is None or isinstance(target, int) or getattr(target, "kind", None) != "word":
            return None
        value = self.word(target, state)
        if rtype == "<<<":
            return value
        if rtype in (">", ">>", ">|", "&>", "&>>", ">&", "<>"):
            self.an.out.append(OutputRedirect(value, state.cwds))
        return None

    def word(self, node: Any, state: State) -> str:
        parts = getattr(node, "parts", None) or []
        if not parts:
            return str(node.word)
        start, end = node.pos
        return self._scan(self.source[start:end], start, parts, state)

    def _scan(self, raw: str, offset: int, parts: Sequence[Any], state: State) -> str:
        """Quote removal and expansion of one word, using bashlex's nodes for the expansions."""
        spans = {part.pos[0]: part for part in parts}
        out: list[str] = []
        i, double = 0, False
        while i < len(raw):
            ch = raw[i]
            if ch == "$" and not double and raw.startswith(("$'", '$"'), i):
                if raw[i + 1] == '"':
                    i += 1
                    continue
                text, i = _ansi_c(raw, i + 2)
                out.append(text)
                continue
            part = spans.get(offset + i)
            if part is not None:
                out.append(self._part(part, state))
                i = max(part.pos[1] - offset, i + 1)
                continue
            if ch == "'" and not double:
                close = raw.find("'", i + 1)
                close = len(raw) if close < 0 else close
                out.append(raw[i + 1:close])
                i = close + 1
            elif ch == '"':
                double = not double
                i += 1
            elif ch == "\\" and i + 1 < len(raw):
                following = raw[i + 1]
                if double and following not in '$`"\\\n':
                    out.append(ch)
                    i += 1
                else:
                    out.append("" if following == "\n" else following)
                    i += 2
            else:
                out.append(ch)
                i += 1
        return "".join(out)

    def _part(self, part: Any, state: State) -> str:
        kind = part.kind
        if kind == "parameter":
            return self.an.expand_parameter(str(getattr(part, "value", "")), state, self.depth)
        if kind == "tilde":
            return HOME if getattr(part, "value", "") == "~" else UNKNOWN
        if kind in ("commandsubstitution", "processsubstitution"):
            command = part.command
            self.walk(command, state)
            if kind == "processsubstitution":
                return UNKNOWN
            plain = command.kind == "command" and all(
                p.kind == "word" and not getattr(p, "parts", None) for p in command.parts)
            argv = [str(p.word) for p in command.parts] if plain else None
            return self.an.substitution_value(argv, state)
        raise _Unsupported(kind)


def _heredoc_body(value: str, delimiter: str, strip_tabs: bool) -> str:
    lines = value.split("\n")
    last = lines[-1].lstrip("\t") if strip_tabs else lines[-1]
    if lines and last == delimiter:
        lines = lines[:-1]
    return "\n".join(lines)


_ANSI_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b",
                 "f": "\f", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def _ansi_c(raw: str, start: int) -> tuple[str, int]:
    """Decode `$'…'` from the character after the opening quote; returns (text, index after the close)."""
    out: list[str] = []
    i = start
    while i < len(raw):
        ch = raw[i]
        if ch == "'":
            return "".join(out), i + 1
        if ch == "\\" and i + 1 < len(raw):
            code = raw[i + 1]
            if code == "x":
                digits = re.match(r"[0-9a-fA-F]{1,2}", raw[i + 2:])
                if digits:
                    out.append(chr(int(digits.group(), 16)))
                    i += 2 + digits.end()
                    continue
            out.append(_ANSI_ESCAPES.get(code, "\\" + code))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out), i


# ----------------------------------------------------------------------------- fallback tokenizer
_OPERATOR_CHARS = "();<>|&\n"
_RESERVED = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}",
                       "case", "esac", "in", "function", "select", "[[", "]]"})


def _tokens(text: str) -> list[str]:
    for attempt in (text, text + '"', text + "'", text + "'\""):
        try:
            lexer = shlex.shlex(attempt, posix=True, punctuation_chars=_OPERATOR_CHARS)
            lexer.whitespace = " \t\r\f\v"
            lexer.whitespace_split = True
            lexer.commenters = ""
            return list(lexer)
        except ValueError:
            continue
    return text.split()


def _is_operator(token: str) -> bool:
    return bool(token) and all(ch in _OPERATOR_CHARS for ch in token)


def _operator(token: str) -> str:
    """`&&`, `||`, `|`, `>` (any redirection) or `;` (everything else separates commands)."""
    core = token.replace("\n", "")
    if "(" in token or ")" in token:
        return ";"
    if "<" in core or ">" in core:
        return ">"
    if core in ("&&", "||", "|"):
        return core
    if core == "|&":
        return "|"
    return ";"


class _FallbackWalker:
    """Conservative analysis for what bashlex cannot parse: shlex tokens split at every operator."""

    def __init__(self, analyzer: _Analyzer, text: str, depth: int) -> None:
        self.an = analyzer
        self.text = text.replace("\\\n", "")
        self.depth = depth

    def run(self, state: State) -> Flow:
        text = self.an.lift_substitutions(self.text, state, self.depth)
        items: list[tuple[str | None, Step]] = []
        for op, pipeline in self._pipelines(_tokens(text)):
            items.append((op, self._pipeline_step(pipeline)))
        return fold(items, state)

    @staticmethod
    def _pipelines(tokens: list[str]) -> list[tuple[str | None, list[list[str]]]]:
        result: list[tuple[str | None, list[list[str]]]] = []
        pipeline: list[list[str]] = []
        command: list[str] = []
        op: str | None = None
        for token in tokens:
            kind = _operator(token) if _is_operator(token) else None
            if kind is None or kind == ">":
                command.append(token)
                continue
            pipeline.append(command)
            command = []
            if kind == "|":
                continue
            result.append((op, pipeline))
            pipeline, op = [], kind
        pipeline.append(command)
        result.append((op, pipeline))
        return [(op, [c for c in p if c]) for op, p in result if any(p)]

    def _pipeline_step(self, pipeline: list[list[str]]) -> Step:
        def step(state: State) -> Flow:
            if len(pipeline) == 1:
                succ, fail, _ = self._command(pipeline[0], state, None)
                return succ, fail
            printed: str | None = None
            for command in pipeline:
                _, _, printed = self._command(command, state, printed)
            return state, state
        return step

    def _command(self, tokens: list[str], state: State, stdin: str | None) -> _Outcome:
        while tokens and tokens[0] in _RESERVED:
            tokens = tokens[1:]
        if tokens and tokens[0].startswith("#"):
            return state, state, None
        words: list[str] = []
        i = 0
        while i < len(tokens):
            token = tokens[i]
            if _is_operator(token):
                target = tokens[i + 1] if i + 1 < len(tokens) and not _is_operator(tokens[i + 1]) else None
                stdin = self._redirect(token, target, state, stdin)
                i += 2 if target is not None else 1
                continue
            words.append(token)
            i += 1
        assignments: list[tuple[str, str | None]] = []
        while words and (match := _ASSIGNMENT.match(words[0])):
            text = self.an.expand_plain(words[0][match.end():], state, self.depth, run_substitutions=False)
            assignments.append((match.group(1), None if match.group(2) else text))
            words = words[1:]
        if not words:
            new = state
            for name, value in assignments:
                new = new.with_var(name, value)
            return new, new, None
        argv = [self.an.expand_plain(w, state, self.depth, run_substitutions=False) for w in words]
        return self.an.run_simple(argv, state, stdin, dict(assignments), self.depth)

    def _redirect(self, operator: str, target: str | None, state: State, stdin: str | None) -> str | None:
        if target is None:
            return stdin
        value = self.an.expand_plain(target, state, self.depth, run_substitutions=False)
        if operator.endswith("<<<"):
            return value
        if operator.startswith("<<"):
            return stdin  # heredoc body lines follow as commands: analysed, conservatively
        if ">" in operator and not (operator.endswith("&") and target.isdigit()):
            self.an.out.append(OutputRedirect(value, state.cwds))
        return stdin


# ----------------------------------------------------------------------------- entry point
def analyze(command: str, cwd: str | None, temp_root: str, max_depth: int = MAX_DEPTH) -> Analysis:
    """Every simple command, inline program and output redirection `command` would execute.

    `cwd` is the directory the command starts in (None when unknown); `temp_root` is
    what `$TMPDIR` and `mktemp -d` stand for.
    """
    start = normalize_path(cwd) if cwd and cwd.startswith("/") else None
    analyzer = _Analyzer(temp_root, max_depth)
    try:
        analyzer.script(command, State(frozenset({start})), 0)
    except RecursionError:
        analyzer.out.append(Unanalysable("command nested too deeply to analyse"))
    return Analysis(tuple(analyzer.out), "fallback" if analyzer.used_fallback else "bashlex")
