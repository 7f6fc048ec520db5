"""What a shell command string would *execute*: every simple command, inline program and
output redirection, each with the working directories it may run in.

Only commands that would run count, never words that are merely mentioned (echo arguments,
commit messages, quoted heredoc data). Strings a shell runs are analysed too (`bash -c`,
`eval`, heredocs and pipes fed to a shell, `ssh host CMD`, git `!aliases`, `find -exec`, …),
wrappers are peeled off (`sudo`, `env`, `timeout`, `xargs`, `npx`, `poetry run`, …), and the
working directory and simple variables are followed. Where the command that would run cannot
be known — its name comes from an expansion, a shell reads code from a pipe, a file written
by the same command is run, `eval` of unknown text — an `Unanalysable` item says so.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping, Sequence

from kilo_loop.safety.lazy_regex import LazyRegex
from kilo_loop.safety.shell import git as git_argv
from kilo_loop.safety.shell.flow import State, chdir
from kilo_loop.safety.shell.interpreters import (
    AWKS,
    SEDS,
    Interpreter,
    awk_program,
    inline_codes,
    interpreter,
    sed_scripts,
    shell_invocation,
    shell_strings_in_code,
)
from kilo_loop.safety.shell.model import (
    HOME,
    KEEP,
    LITERALLY,
    UNKNOWN,
    Analysis,
    Executed,
    InlineCode,
    OutputRedirect,
    SimpleCommand,
    Unanalysable,
    command_name,
    display,
    normalize_path,
    parse_options,
)
from kilo_loop.safety.shell.parse import PIPE, TooDeep, walk_script
from kilo_loop.safety.shell.words import echo_escapes, printf_text
from kilo_loop.safety.shell.wrappers import unwrap

MAX_DEPTH = 12
MAX_WRAPPERS = 16
"""Wrappers peeled off one simple command (`sudo env nice … CMD`); more are denied."""
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "rbash", "fish", "csh",
                    "tcsh"})
_NAME = LazyRegex(r"[A-Za-z_][A-Za-z0-9_]*")
_STDIN_FILES = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", "-"})
_COPY_WRITERS = frozenset({"cp", "mv", "install", "ln", "rsync"})

Outcome = tuple[State, State, str | None]
"""A command's flow, plus what it prints when that is plain data (for `echo … | sh`)."""
TempRoot = str | Callable[[], str]
"""What `$TMPDIR` and `mktemp -d` stand for, or how to find it out when a command uses them."""


def _unknown_code(what: str) -> Unanalysable:
    return Unanalysable(f"{what}, so what it runs cannot be known before it runs; {LITERALLY}",
                        rule="unknown-code")


class Analyzer:
    def __init__(self, temp_root: TempRoot, max_depth: int) -> None:
        self._temp_root = temp_root
        self.max_depth = max_depth
        self.out: list[Executed] = []
        self.remote: str | None = None
        self.written: dict[str, str | None] = {}
        self.links: dict[str, str] = {}
        """Symlinks this command makes (`ln -s TARGET LINK`): absolute link path → target."""

    @property
    def temp_root(self) -> str:
        return self._temp_root if isinstance(self._temp_root, str) else self._temp_root()

    # -- scripts
    def script(self, text: str, state: State, depth: int) -> tuple[State, State]:
        if depth > self.max_depth:
            self.out.append(Unanalysable(f"commands nested more than {self.max_depth} levels deep"))
            return state, state
        if not text.strip():
            return state, state
        return walk_script(self, text, state, depth)

    def _remote_script(self, host: str, text: str, state: State, depth: int) -> None:
        saved, self.remote = self.remote, host
        try:
            self.script(text, State(frozenset({None})), depth + 1)
        finally:
            self.remote = saved

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

    def variable(self, name: str, state: State) -> str:
        value = self.lookup(name, state) if _NAME.fullmatch(name) else None
        return UNKNOWN if value is None else value

    def substitution_value(self, argv: Sequence[str] | None, state: State) -> str:
        """What `$(argv)` prints, when that is known: `mktemp -d` makes a fresh temp dir, `pwd` the
        cwd, `echo`/`printf` their text."""
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
        printed = printed_text(name, argv[1:], None)
        return printed.rstrip("\n") if printed is not None else UNKNOWN

    # -- files
    def _keys(self, path: str, cwds: frozenset[str | None]) -> set[str]:
        keys = {normalize_path(path)} if path else set()
        if path and not path.startswith("/"):
            keys |= {normalize_path(posixpath.join(cwd, path)) for cwd in cwds if cwd}
        return keys

    def wrote(self, path: str, content: str | None, cwds: frozenset[str | None]) -> None:
        for key in self._keys(path, cwds):
            self.written[key] = content

    def output_redirect(self, target: str, cwds: frozenset[str | None]) -> None:
        self.out.append(OutputRedirect(target, cwds, self.remote))
        self.wrote(target, None, cwds)

    def file_content(self, path: str, cwds: frozenset[str | None]) -> str | None:
        """What reading `path` gives: a file this command wrote (PIPE when not known), else None."""
        for key in self._keys(path, cwds):
            if key in self.written:
                content = self.written[key]
                return PIPE if content is None else content
        return PIPE if UNKNOWN in path.replace(HOME, "") else None

    def _run_file(self, path: str, state: State, depth: int, language: str | None) -> None:
        """A script file is run: one written by this same command is followed (or denied)."""
        if path in _STDIN_FILES:
            return
        if UNKNOWN in path.replace(HOME, ""):
            self.out.append(_unknown_code(f"it runs the file {display(path)!r}, whose name is only known at run time"))
            return
        content = self.file_content(path, state.cwds)
        if content is None:
            return
        if content == PIPE:
            self.out.append(_unknown_code(f"it runs {display(path)!r}, a file this same command writes"))
        elif language is None:
            self.script(content, state.child_shell({}), depth + 1)
        else:
            self.out.append(InlineCode(language, content, state.cwds, self.remote))

    def _stdin_code(self, stdin: str | None, what: str, state: State, depth: int,
                    language: str | None = None) -> None:
        if stdin is None:
            return
        if stdin == PIPE:
            self.out.append(_unknown_code(f"{what} reads its code from a pipe or file whose content the guard "
                                          "cannot see"))
        elif language is None:
            self.script(stdin, state, depth + 1)
        else:
            self.out.append(InlineCode(language, stdin, state.cwds, self.remote))
            self._code_strings(language, stdin, state, depth)

    # -- simple commands
    def run_simple(self, argv: list[str], state: State, stdin: str | None,
                   env: Mapping[str, str | None], depth: int) -> Outcome:
        """Follow one simple command: peel wrappers, then run it (or what it runs) through its semantics."""
        cwds = state.cwds
        env = dict(env)
        peeled = 0
        while True:
            if not argv:
                return state, state, None
            if UNKNOWN in argv[0].replace(HOME, ""):
                self.out.append(Unanalysable(
                    f"the command name {display(argv[0])!r} is only known when it runs (a variable, substitution "
                    f"or decoded text); {LITERALLY}", rule="unknown-command"))
                return state, state, None
            step = unwrap(command_name(argv[0]), list(argv[1:]))
            if step is None:
                break
            if peeled == MAX_WRAPPERS:
                # Past the bound the rest would be judged as the wrapper itself and what it runs unseen.
                self.out.append(Unanalysable(f"more than {MAX_WRAPPERS} command wrappers (sudo, env, nice, …) "
                                             "are nested; run the command with fewer"))
                return state, state, None
            peeled += 1
            self.out.append(SimpleCommand((command_name(argv[0]), *argv[1:]), cwds, self.remote))
            env.update(step.env)
            if step.chdir is not None:
                cwds = frozenset(chdir(cwd, step.chdir) for cwd in cwds)
            here = state.with_cwds(cwds).child_shell(env)
            for local in step.local_scripts:
                self.script(local, here, depth + 1)
            if step.remote is not None and step.script is not None:
                self._remote_script(step.remote, step.script, here, depth)
                return state, state, None
            if step.script is not None:
                self.script(step.script, here, depth + 1)
            if step.reads_stdin:
                self._stdin_code(stdin, command_name(argv[0]), here, depth)
            if step.noexec or step.script is not None or step.reads_stdin:
                return state, state, None
            argv = _apply_xargs(step.argv, step.xargs_replace) if step.xargs_replace is not None else step.argv
        name = command_name(argv[0])
        if self.links:
            argv = [argv[0], *(self._through_links(arg, cwds) for arg in argv[1:])]
        here = state.with_cwds(cwds)
        known_stdin = stdin if stdin != PIPE else None
        self.out.append(SimpleCommand((name, *argv[1:]), cwds, self.remote, tuple(env.items()), known_stdin))
        special = self._builtin(name, argv[1:], here, stdin, depth)
        if special is not None:
            return special
        if "/" in argv[0] and name not in SHELLS:
            self._run_file(argv[0], here, depth, None)
        return self._external(name, argv[1:], here, stdin, env, depth)

    def _through_links(self, arg: str, cwds: frozenset[str | None]) -> str:
        """`arg` with a leading path through a link made earlier in this command replaced by its target."""
        for key in self._keys(arg, cwds) if arg and not arg.startswith("-") else ():
            for link, target in self.links.items():
                if key == link or key.startswith(link + "/"):
                    return target + key[len(link):] + ("/" if arg.endswith("/") else "")
        return arg

    def _record_link(self, args: Sequence[str], cwds: frozenset[str | None]) -> None:
        found = [a for a in args if not a.startswith("-")]
        if len(found) != 2 or not any((a.startswith("-") and "s" in a.lstrip("-")[:1]) or a == "--symbolic"
                                      for a in args):
            return
        target, link = found
        for key in self._keys(link, cwds):
            base = posixpath.dirname(key)
            self.links[key] = target if target.startswith(("/", HOME)) or UNKNOWN in target else \
                normalize_path(posixpath.join(base, target))

    def declaration(self, keyword: str, declared: Sequence[tuple[str, str | None]], state: State) -> State:
        """`export`/`declare`/`local`/`readonly`/`typeset` (a name alone keeps its value) and `unset`."""
        new = state
        for name, value in declared:
            if not _NAME.fullmatch(name):
                continue
            if keyword == "unset":
                new = new.with_var(name, "")
            elif value != KEEP:
                new = new.with_var(name, value)
        return new

    def _builtin(self, name: str, args: list[str], state: State, stdin: str | None, depth: int) -> Outcome | None:
        """Commands that change the shell itself (cd, variables, eval, source, alias, trap)."""
        if name in ("cd", "pushd", "chdir"):
            operands = [a for a in args if not (a.startswith("-") and len(a) > 1)]
            target = operands[0] if operands else None
            if target is None or target == "-":
                return state.with_cwds(frozenset({None})), state, None
            cdpath = "CDPATH" in state.vars or _environ_has("CDPATH")
            return state.with_cwds(frozenset(chdir(cwd, target, cdpath) for cwd in state.cwds)), state, None
        if name == "popd":
            return state.with_cwds(frozenset({None})), state, None
        if name in ("export", "declare", "typeset", "local", "readonly"):
            declared = [(a.split("=", 1)[0], a.split("=", 1)[1] if "=" in a else KEEP) for a in args]
            new = self.declaration(name, declared, state)
            return new, new, None
        if name in ("read", "mapfile", "readarray", "getopts", "unset", "printf"):
            return self._assigning_builtin(name, args, state)
        if name == "eval":
            succ, fail = self.script(" ".join(args), state, depth + 1)
            return succ, fail, None
        if name in ("source", "."):
            return self._source(args, state, stdin, depth)
        if name == "alias":
            for arg in args:
                if "=" in arg:
                    self.script(arg.split("=", 1)[1], state, depth + 1)
            return state, state, None
        if name == "trap" and args and not args[0].startswith("-"):
            self.script(args[0], state, depth + 1)
            return state, state, None
        return None

    def _assigning_builtin(self, name: str, args: list[str], state: State) -> Outcome | None:
        if name == "printf":
            if "-v" not in args[:-1]:
                return None
            target = args[args.index("-v") + 1]
            new = state.with_var(target, None) if _NAME.fullmatch(target) else state
            return new, new, None
        new = state
        for arg in args:
            if _NAME.fullmatch(arg):
                new = new.with_var(arg, "" if name == "unset" else None)
        return new, new, None

    def _source(self, args: list[str], state: State, stdin: str | None, depth: int) -> Outcome:
        if not args:
            return state, state, None
        path = args[0]
        if path in _STDIN_FILES:
            self._stdin_code(stdin if stdin is not None else PIPE, "source", state, depth)
        else:
            self._run_file(path, state, depth, None)
        return state, state, None

    def _external(self, name: str, args: list[str], state: State, stdin: str | None,
                  env: Mapping[str, str | None], depth: int) -> Outcome:
        if name in SHELLS:
            for startup in ("BASH_ENV", "ENV"):  # a non-interactive shell sources these first
                value = env[startup] if startup in env else state.vars.get(startup)
                if startup in env or startup in state.vars:
                    self._run_file(value if value is not None else UNKNOWN, state, depth, None)
            command, reads_stdin, script_file = shell_invocation(args)
            if command is not None:
                self.script(command, state.child_shell(env), depth + 1)
            elif reads_stdin or script_file in _STDIN_FILES:
                self._stdin_code(stdin, name, state.child_shell(env), depth)
            elif script_file is not None:
                self._run_file(script_file, state, depth, None)
        interp = interpreter(name)
        if interp is not None:
            self._inline(interp, args, state, stdin, env, depth)
        if name in AWKS or name in SEDS:
            programs = [awk_program(args)] if name in AWKS else sed_scripts(args)
            for program in programs:
                if program is not None:
                    self.out.append(InlineCode("awk" if name in AWKS else "sed", program, state.cwds, self.remote))
        if name == "find":
            self._find_exec(args, state, depth)
        if name == "ln":
            self._record_link(args, state.cwds)
        if name == "git":
            self._git(args, state, env, depth)
        if name == "tee" or name in _COPY_WRITERS or name in ("curl", "wget"):
            for target in _written_by(name, args):
                self.wrote(target, stdin if name == "tee" and stdin != PIPE else None, state.cwds)
        return state, state, printed_text(name, args, stdin)

    def _inline(self, interp: Interpreter, args: list[str], state: State, stdin: str | None,
                env: Mapping[str, str | None], depth: int) -> None:
        codes, reads_stdin, script_file = inline_codes(interp, args)
        if reads_stdin or script_file in _STDIN_FILES:
            self._stdin_code(stdin, interp.language, state, depth, interp.language)
        if script_file is not None:
            self._run_file(script_file, state, depth, interp.language)
        for code in codes:
            self.out.append(InlineCode(interp.language, code, state.cwds, self.remote))
            self._code_strings(interp.language, code, state.child_shell(env), depth)

    def _code_strings(self, language: str, code: str, state: State, depth: int) -> None:
        for script in shell_strings_in_code(language, code):
            self.script(script, state.child_shell({}), depth + 1)

    def _git(self, args: list[str], state: State, env: Mapping[str, str | None], depth: int) -> None:
        call = git_argv.parse_git_argv(args)
        for script in ([call.shell_alias] if call.shell_alias else []) + call.nested_scripts:
            self.script(script, state.child_shell(env), depth + 1)
        for variable in git_argv.EXEC_ENV:
            value = env[variable] if variable in env else state.vars.get(variable, "")
            if value is None:
                self.out.append(_unknown_code(f"git runs ${variable}, whose value is only known at run time"))
            elif value:
                self.script(value, state.child_shell(env), depth + 1)

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


def _environ_has(name: str) -> bool:
    import os

    return bool(os.environ.get(name))


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


def _written_by(name: str, args: Sequence[str]) -> list[str]:
    """Files a command writes (for `cmd … && sh FILE`)."""
    if name == "tee":
        return [a for a in args if not a.startswith("-")]
    if name in ("curl", "wget"):
        return _option_values(args, "o" if name == "curl" else "O", ("--output", "--output-document"))
    operands = [a for a in args if not a.startswith("-")]
    return operands[-1:] if len(operands) >= 2 else []


def _option_values(args: Sequence[str], letter: str, long: tuple[str, ...]) -> list[str]:
    """Every value of the short option `letter` (also at the end of a cluster: `-qO FILE`) or the
    long options `long`, wherever they stand among `args`."""
    values: list[str] = []
    for index, arg in enumerate(args):
        following = args[index + 1] if index + 1 < len(args) else ""
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if name in long:
                values.append(value if eq else following)
        elif arg.startswith("-") and letter in arg[1:]:
            attached = arg[arg.index(letter, 1) + 1:]
            values.append(attached or following)
    return [v for v in values if v and v != "-"]


def printed_text(name: str, args: Sequence[str], stdin: str | None) -> str | None:
    """What a command prints, when it is plain data (`echo …`, `printf …`, `cat` of a heredoc)."""
    if name == "echo":
        words = list(args)
        escapes = False
        while words and re.fullmatch(r"-[neE]+", words[0]):
            escapes = escapes or "e" in words[0]
            words = words[1:]
        text = " ".join(words) + "\n"
        return echo_escapes(text) if escapes else text
    if name == "printf":
        return printf_text(list(args))
    known = stdin is not None and stdin != PIPE
    if ((name == "cat" and not args) or name == "tee") and known:
        return stdin
    return None


def analyze(command: str, cwd: str | None, temp_root: TempRoot, max_depth: int = MAX_DEPTH) -> Analysis:
    """Every simple command, inline program and output redirection `command` would execute.

    `cwd` is the directory the command starts in (None when unknown); `temp_root` is
    what `$TMPDIR` and `mktemp -d` stand for (or a function giving it, called only when needed).
    """
    start = normalize_path(cwd) if cwd and cwd.startswith("/") else None
    analyzer = Analyzer(temp_root, max_depth)
    try:
        analyzer.script(command, State(frozenset({start})), 0)
    except (RecursionError, TooDeep):
        analyzer.out.append(Unanalysable("command nested too deeply to analyse; write it with less nesting"))
    return Analysis(tuple(analyzer.out))
