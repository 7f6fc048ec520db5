"""What a shell command string would *execute*: every simple command, inline program and
output redirection, each with the working directories it may run in.

Only commands that would run count, never words that are merely mentioned (echo arguments,
commit messages, quoted heredoc data). Strings a shell runs are analysed too (`bash -c`,
`eval`, heredocs and pipes fed to a shell, `ssh host CMD`, git `!aliases`, `find -exec`, …),
wrappers are peeled off (`sudo`, `env`, `timeout`, `xargs`, `npx`, `poetry run`, …), and the
working directory and simple variables are followed. Script files a shell or SQL client is
handed are read from disk (`scripts_on_disk`) and followed like inline text. Where the command
that would run cannot be known — its name comes from an expansion, a shell reads code from a
pipe, a file written by the same command is run, `eval` of unknown text — an `Unanalysable`
item says so.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping, Sequence

from kilo_loop.guard.lazy_regex import LazyRegex
from kilo_loop.guard.shell import git as git_argv
from kilo_loop.guard.shell import project_runners
from kilo_loop.guard.shell.file_changes import edited_in_place, rewrites_tree
from kilo_loop.guard.shell.flow import Outcome, State, chdir
from kilo_loop.guard.shell.interpreters import (
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
from kilo_loop.guard.shell.model import (
    HOME,
    KEEP,
    LITERALLY,
    READ,
    SHELL_PID,
    UNKNOWN,
    Analysis,
    Executed,
    InlineCode,
    OutputRedirect,
    SimpleCommand,
    Unanalysable,
    Unread,
    command_name,
    display,
    normalize_path,
    parse_options,
    split_words,
)
from kilo_loop.guard.shell.package_runners import go_run
from kilo_loop.guard.shell.parse import PIPE, TooDeep, walk_script
from kilo_loop.guard.shell.scripts_on_disk import (
    ScriptFile,
    committed_unchanged,
    places,
    program_interpreters,
    read_script,
    repository_root,
    searched,
)
from kilo_loop.guard.shell.sql_scripts import SQL_CLIENTS, included_files, option_files, word_text
from kilo_loop.guard.shell.words import echo_escapes, printf_text
from kilo_loop.guard.shell.wrappers import unwrap

MAX_DEPTH = 12
MAX_WRAPPERS = 16
"""Wrappers peeled off one simple command (`sudo env nice … CMD`); more are denied."""
MAX_SCRIPTS_READ = 64
"""Script files on disk read for one command (each may run others); more are denied."""
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "rbash", "fish", "csh",
                    "tcsh", "nu", "xonsh", "elvish", "osh", "ysh", "oksh", "loksh", "hush", "murex"})
_VERSIONED_SHELL = LazyRegex(r"((?:ba|z|k|da|mk|pdk|a|ya|po|rba|tc|c|fi)sh)[-.]?(?:[0-9][0-9.]*|static)")
_NAME = LazyRegex(r"[A-Za-z_][A-Za-z0-9_]*")
_STDIN_FILES = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", "-"})
_COPY_WRITERS = frozenset({"cp", "mv", "install", "ln", "rsync", "sponge", "scp"})
_GLOB = LazyRegex(r"[*?\[]")
_NAME_GLOB = LazyRegex(r"[*?]|\[[^\]]+\]")
_SUBSCRIPT_CODE = LazyRegex(r"\[[^\]]*(?:\$\(|`)")
_SUBSCRIPT_BUILTINS = frozenset({"test", "[", "let", "printf", "read", "unset", "declare", "local", "export", "typeset",
                                 "readonly", "mapfile", "readarray", "wait", "getopts", "shift", "return", "exit"})
_POSITIONAL = LazyRegex(r"\"\$\{?([@*])\}?\"|\$\{([@*])\}|\$([@*])|\$\{([1-9])(?![0-9])|\$([1-9])")
"""`$1`, `${1…}` (named as a variable, so `${1:-x}` keeps its operator) and the whole `"$@"` / `$*`
(replaced by the words); `${@:2}` or `${10}` are left as unknown."""
_ARGUMENT = "__kilo_loop_arg_"
_DEFINES_FUNCTION = LazyRegex(r"\(\s*\)\s*[{(\n]|\bfunction\s+[\w.:-]")
_REPOSITIONS = LazyRegex(r"\bshift\b|\bset\s+(?:--|-[a-zA-Z]*\s+--|[^-\s])")
_SYMLINK_CODE = LazyRegex(r"\b(?:symlink|symlinkSync|symlink_to|hardlink_to|make_symlink|ln_s|ln_sf)\b"
                          r"|\b(?:link|linkSync)\s*\(|\bFileUtils\s*\.\s*ln"
                          )
_TREE_CHANGERS = frozenset({"chmod", "chown", "chgrp", "setfacl", "chattr"})
_MAKEFILES = frozenset({"Makefile", "makefile", "GNUmakefile"})
_RECIPE_FILES: dict[str, tuple[str, ...]] = {
    "just": ("justfile", "Justfile", ".justfile"), "task": ("Taskfile.yml", "Taskfile.yaml", "taskfile.yml"),
    "rake": ("Rakefile", "rakefile", "Rakefile.rb"), "tox": ("tox.ini",), "nox": ("noxfile.py",),
    "invoke": ("tasks.py",), "inv": ("tasks.py",), "gulp": ("gulpfile.js",), "grunt": ("Gruntfile.js",),
    "cargo": ("build.rs",), "pre-commit": (".pre-commit-config.yaml",), "mise": ("mise.toml", ".mise.toml"),
    "deno": ("deno.json", "deno.jsonc"), "poe": ("pyproject.toml",), "pdm": ("pyproject.toml",),
}
"""Files whose recipes or scripts a task runner runs: written by the same command, what runs is unseen."""
_OUTPUT_OPTIONS = ("--output", "--output-file", "--outfile", "--out-file", "--output-document", "-out", "--out",
                   "--output-dir")
_COMPILERS = frozenset({"gcc", "cc", "clang", "g++", "c++", "go", "rustc"})
_SHORT_OUTPUT = frozenset({"gpg", "gpg2", "iconv", "pandoc", "base64", "gcc", "cc", "clang", "g++", "c++", "go",
                           "rustc", "zstd", "xz", "gzip", "lz4", "jq", "yq", "sops", "age", "ffmpeg", "convert"})
_PACKAGE_RUNNERS = frozenset({"npm", "pnpm", "yarn", "bun"})
_STACK_INDEX = LazyRegex(r"[+-][0-9]+")
_MOUNTERS = frozenset({"bindfs", "sshfs", "rclone", "s3fs", "gcsfuse", "goofys", "mount.fuse", "fuse-overlayfs"})
_DD_WRITERS = frozenset({"dd", "dcfldd", "dc3dd"})
_CODE_WRITES = LazyRegex(r"\b(?:write|writeFile|writeFileSync|appendFile|appendFileSync|write_text|write_bytes|copy"
                         r"|copyfile|copyFileSync|createWriteStream|syswrite)\b|['\"][wa]b?\+?['\"]|>")
_CODE_PATH_LITERAL = LazyRegex(r"'([^'\s]*[/.][^'\s]*)'|\"([^\"\s]*[/.][^\"\s]*)\"")
_LOADER_VARIABLES = frozenset({"LD_PRELOAD", "LD_AUDIT", "DYLD_INSERT_LIBRARIES"})
_HOOK_VARIABLES = frozenset({
    "PROMPT_COMMAND",
    # programs other tools start by name from these (man, psql, systemctl, git, sudo, ssh, `fc`)
    "PAGER", "MANPAGER", "PSQL_PAGER", "SYSTEMD_PAGER", "SYSTEMD_EDITOR", "EDITOR", "VISUAL", "FCEDIT", "BROWSER",
    "GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "SUDO_EDITOR", "SUDO_ASKPASS", "SSH_ASKPASS", "MYSQL_PAGER",
})
_TERRAFORMS = frozenset({"terraform", "tofu", "terragrunt"})
_PROMPT_VARIABLES = frozenset({"PS0", "PS1", "PS2", "PS3", "PS4"})
_PROC_EXE = LazyRegex(r"/proc/[^/]+/(?:exe|fd/\d+|cwd/.*)|/dev/fd/\d+")
_ON_DISK = UNKNOWN + "<on-disk>"
"""stdin from a file on disk (`bash < x.sh`), read only if the command turns out to run it as code."""

TempRoot = str | Callable[[], str]
"""What `$TMPDIR` and `mktemp -d` stand for, or how to find it out when a command uses them."""


_UNKNOWABLE = frozenset({"unknown-code", "unknown-command", "unparsable", "unanalysable"})


def _unknowable(item: object) -> bool:
    """A finding that says what runs cannot be known statically (not what it is known to do)."""
    return isinstance(item, Unanalysable) and item.rule in _UNKNOWABLE


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
        """Paths that stand for others: symlinks this command makes (`ln -s TARGET LINK`), bind mounts,
        and what it moves (`mv SRC DST`): absolute path → what it really is."""
        self.moved: dict[str, str] = {}
        """What this command moves (`mv SRC DST`): absolute destination → source. Deleting the
        destination, or a directory holding it, deletes what was at the source."""
        self.unknown_links = False
        """Program text in this command made links the guard cannot see (`os.symlink(…)`)."""
        self.aliases: dict[str, str] = {}
        self.functions: dict[str, str] = {}
        self.calling: list[str] = []
        self.written_dirs: set[str] = set()
        self.descriptors = 0
        self.cdable_vars = False
        """`<(…)` substitutions whose output is known, each a /dev/fd/N this command wrote."""
        """Directories this command fills with files it does not show (`git clone URL DIR`)."""
        self.start_cwd: str | None = None
        """The directory the command starts in, when the caller knows it."""
        self.reading: list[str] = []
        """Real paths of the script files on disk being followed, innermost last (one running itself is denied)."""
        self.scripts_read = 0
        self.files_read: list[str] = []
        """Real paths of the script files on disk this command hands to a shell or SQL client."""
        self.committed: dict[str, bool] = {}
        """Whether git has each script read as committed, asked once per file (two git processes)."""
        self.tree_rewriter: str | None = None
        """A command earlier in this one that may rewrite files it does not name (`git checkout`, `tar x`)."""
        self.disk_inputs: list[tuple[str, frozenset[str | None]]] = []
        """`< FILE` redirections of files on disk: the path and the directories it is opened from."""

    @property
    def temp_root(self) -> str:
        return self._temp_root if isinstance(self._temp_root, str) else self._temp_root()

    # -- scripts
    def script(self, text: str, state: State, depth: int, stdin: str | None = None) -> tuple[State, State]:
        if depth > self.max_depth:
            self.out.append(Unanalysable(f"commands nested more than {self.max_depth} levels deep"))
            return state, state
        if not text.strip():
            return state, state
        return walk_script(self, text, state, depth, stdin)

    def _remote_script(self, host: str, text: str | None, state: State, depth: int, stdin: str | None) -> None:
        """Code run on another machine: `text`, reading `stdin`; or (no text) what the remote shell reads
        on stdin (`ssh host <<< CMD`)."""
        saved, self.remote = self.remote, host
        try:
            if text is None:
                self._stdin_code(stdin, host, State(frozenset({None})), depth)
            else:
                self.script(text, State(frozenset({None})), depth + 1, stdin)
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
        if name == "$" or (name == "PPID" and name not in state.vars):
            return SHELL_PID
        value = self.lookup(name, state) if _NAME.fullmatch(name) else None
        return UNKNOWN if value is None else value

    def substitution_value(self, argv: Sequence[str] | None, state: State) -> str:
        """What `$(argv)` prints, when that is known: `mktemp -d` makes a fresh temp dir, `pwd` the
        cwd, `echo`/`printf` their text."""
        if not argv:
            return READ
        name = command_name(argv[0])
        if name == "mktemp":
            return self._mktemp_value(argv[1:], state)
        if name == "git" and "rev-parse" in argv and any(a in ("--git-dir", "--git-common-dir", "--absolute-git-dir")
                                                         or a.startswith("--git-path") for a in argv):
            at = argv.index("--git-path") + 1 if "--git-path" in argv else 0
            return posixpath.join(".git", argv[at]) if at and at < len(argv) else ".git"
        if name == "pwd" and len(state.cwds) == 1:
            cwd = next(iter(state.cwds))
            return UNKNOWN if cwd is None else cwd
        if name == "git" and list(argv[1:]) == ["rev-parse", "--show-toplevel"] and self.remote is None and \
                len(state.cwds) == 1 and "GIT_WORK_TREE" not in state.vars and "GIT_DIR" not in state.vars:
            cwd = next(iter(state.cwds))  # `cd "$(git rev-parse --show-toplevel)"`: the checkout on disk
            root = repository_root(cwd) if cwd is not None else None
            return root if root is not None else READ
        printed = printed_text(name, argv[1:], None)
        return printed.rstrip("\n") if printed is not None else READ

    @staticmethod
    def printed(argv: Sequence[str]) -> str | None:
        return printed_text(command_name(argv[0]), argv[1:], None) if argv else None

    def _mktemp_value(self, args: Sequence[str], state: State) -> str:
        """The path `mktemp [-d] [-p DIR] [TEMPLATE]` makes: a fresh name in DIR, the template's directory
        or the temp dir."""
        opts, i = parse_options(args, "p", frozenset({"tmpdir", "suffix"}))
        template = args[i] if i < len(args) else ""
        given = opts.get("-p") or opts.get("--tmpdir")
        tmpdir = self.lookup("TMPDIR", state) or self.temp_root  # `export TMPDIR=~` moves where mktemp makes it
        if given is not None and "/" not in template:
            directory = given or tmpdir
        elif template and "-t" not in opts:  # a template names its directory, else the working directory
            directory = posixpath.dirname(template)
            if not directory.startswith("/"):
                return posixpath.join(directory, "tmp.mktemp")
        else:
            directory = tmpdir
        if UNKNOWN in directory or not directory.startswith("/"):
            return READ
        return posixpath.join(directory, "tmp.mktemp")

    # -- files
    def _keys(self, path: str, cwds: frozenset[str | None]) -> set[str]:
        keys = {normalize_path(path)} if path else set()
        if path and not path.startswith("/"):
            keys |= {normalize_path(posixpath.join(cwd, path)) for cwd in cwds if cwd}
        return keys

    def wrote(self, path: str, content: str | None, cwds: frozenset[str | None]) -> None:
        for key in self._keys(path, cwds):
            self.written[key] = content

    def output_redirect(self, target: str, cwds: frozenset[str | None], record: bool = True) -> None:
        if self.links:
            target = self._through_links(target, cwds)
        self.out.append(OutputRedirect(target, cwds, self.remote))
        if record:
            self.wrote(target, None, cwds)

    def file_content(self, path: str, cwds: frozenset[str | None]) -> str | None:
        """What reading `path` gives: a file this command wrote (PIPE when not known), else None."""
        for key in self._keys(path, cwds):
            if key in self.written:
                content = self.written[key]
                return PIPE if content is None else content
            if any(key.startswith(d + "/") for d in self.written_dirs):
                return PIPE
        if path.startswith(("/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/")):
            return PIPE  # another descriptor of this shell: a pipe or process substitution
        return PIPE if UNKNOWN in path.replace(HOME, "") else None

    def _run_file(self, path: str, state: State, depth: int, language: str | None, disk: str | None = None,
                  args: Sequence[str] | None = None) -> tuple[State, State] | None:
        """A script file is run: one written by this same command is followed (or denied). With `disk`
        ("script": a shell runs it, "sourced": this shell does, "program": it is executed), one already
        on disk is read and followed too, with `args` as its positional parameters; what a sourced
        script leaves the shell in is returned."""
        if path in _STDIN_FILES:
            return None
        if UNKNOWN in path.replace(HOME, ""):
            self.out.append(_unknown_code(f"it runs the file {display(path)!r}, whose name is only known at run time"))
            return None
        content = self.file_content(path, state.cwds)
        if content is None:
            if disk is not None and language is None and self.remote is None:
                return self._disk_script(path, state, depth, disk, args)
            return None
        if content == PIPE:
            self.out.append(_unknown_code(f"it runs {display(path)!r}, a file this same command writes"))
        elif language is None:
            self.script(content, state.child_shell({}), depth + 1)
        else:
            self.out.append(InlineCode(language, content, state.cwds, self.remote))
        return None

    # -- script files already on disk
    def _disk_script(self, path: str, state: State, depth: int, how: str,
                     args: Sequence[str] | None) -> tuple[State, State] | None:
        """Read a script file on disk (in every directory the command may be in) and follow its text."""
        start, files_start = len(self.out), len(self.files_read)
        try:
            return self._read_and_follow(path, state, depth, how, args)
        finally:
            # arguments only known at run time may be what the script runs (`exec "$@"`)
            if not any(UNKNOWN in arg for arg in args or ()):
                self._trust_committed_scripts(start, files_start)

    def _read_and_follow(self, path: str, state: State, depth: int, how: str,
                         args: Sequence[str] | None) -> tuple[State, State] | None:
        found = self._places(path, state.cwds)
        if found is not None and how != "program":
            found = searched(path, found, how == "sourced")
        flows: list[tuple[State, State]] = []
        for place in found or ():
            if how == "program" and not any(_is_shell(name) for name in program_interpreters(place)):
                continue  # a binary, or a program in another language: not read
            flow = self._follow_script(display(path), read_script(place), state, depth, how, args)
            if flow is not None:
                flows.append(flow)
        if not flows:
            return None
        succ, fail = flows[0]
        for more_succ, more_fail in flows[1:]:
            succ, fail = succ.join(more_succ), fail.join(more_fail)
        return succ, fail

    def _trust_committed_scripts(self, start: int, files_start: int) -> None:
        """What cannot be known statically in scripts git has as committed (`./gradlew`'s
        `exec "$JAVACMD" "$@"`, a generated configure script) is let through: that is the project's own
        code, not text the agent wrote since. A script that is new, edited, ignored or outside git — or
        that a command earlier in this one may rewrite — stays strictly judged; what any script is known
        to do (`rm -rf ~`, `DROP DATABASE`) is judged in every case. Found in the items since `start`."""
        read = dict.fromkeys(self.files_read[files_start:])
        unknowns = [item for item in self.out[start:] if _unknowable(item)]
        if not read or not unknowns or self.tree_rewriter is not None:
            return
        if all(self._is_committed(path) for path in read):
            self.out[start:] = [item for item in self.out[start:] if not _unknowable(item)]

    def _is_committed(self, path: str) -> bool:
        if path not in self.committed:  # a nested script is asked about again by each script around it
            self.committed[path] = committed_unchanged(path)
        return self.committed[path]

    def _places(self, path: str, cwds: frozenset[str | None]) -> list[str] | None:
        """Where the file `path` may be; when that depends on a directory only known at run time (after
        `cd "$DIR"`) the command is denied, unless the caller gave no working directory at all."""
        found = places(path, cwds)
        if found is None and self.start_cwd is not None:
            self.out.append(Unanalysable(
                f"it runs the file {display(path)!r} from a working directory only known when it runs, so which "
                "file that is cannot be known; run it by its absolute path, or cd to a literal directory first",
                rule="unknown-code"))
        return found

    def _readable(self, shown: str, script: ScriptFile) -> str | None:
        """The script's text, or None (nothing there, or a problem reported as a deny)."""
        self.files_read.append(script.path)
        problem = script.problem
        if problem is None and script.text is not None:
            self.scripts_read += 1
            if self.scripts_read > MAX_SCRIPTS_READ:
                problem = f"is one of more than {MAX_SCRIPTS_READ} script files this command runs"
            elif self.tree_rewriter is not None:
                problem = (f"`{self.tree_rewriter}` earlier in this command may rewrite, so what it holds when it "
                           "runs is not what is on disk now; run it in a separate command")
            elif script.path in self.reading:
                problem = "runs itself again, so where it stops is only known when it runs"
            elif len(self.reading) >= self.max_depth:
                problem = f"is nested more than {self.max_depth} script files deep"
        if problem is not None:
            real = "" if script.path == shown else f" ({script.path})"
            self.out.append(Unanalysable(f"it runs the script {shown!r}{real}, which {problem}; run the commands "
                                         "in it directly instead", rule="unknown-code"))
            return None
        return script.text

    def _follow_script(self, shown: str, script: ScriptFile, state: State, depth: int, how: str,
                       args: Sequence[str] | None) -> tuple[State, State] | None:
        text = self._readable(shown, script)
        if text is None:
            return None
        shell = state if how == "sourced" else state.child_shell({})
        # A sourced script without arguments sees the shell's own `$1…`; in one that defines functions
        # `$1…` and "$@" may be theirs, given when they are called: both are left unknown.
        if (how != "sourced" or args) and not _DEFINES_FUNCTION.search(text):
            text, shell = _with_positionals(text, [shown, *(args or ())], shell) or (text, shell)
        start = len(self.out)
        self.reading.append(script.path)
        try:
            flow = self.script(text, shell, depth + 1)
        finally:
            self.reading.pop()
        self._mark_script(start, shown if script.path.endswith("/" + shown.lstrip("./")) else
                          f"{shown} → {script.path}")
        return flow

    def _mark_script(self, start: int, script: str) -> None:
        """Say which script file the items found since `start` come from (the innermost one)."""
        for index in range(start, len(self.out)):
            item = self.out[index]
            if isinstance(item, Unanalysable):
                if not item.reason.startswith("in the script "):
                    self.out[index] = item._replace(reason=f"in the script {script}: {item.reason}")
            elif item.script is None:
                self.out[index] = item._replace(script=script)

    def disk_input(self, target: str, cwds: frozenset[str | None]) -> str | None:
        """`< target` opens a file on disk: a marker for stdin, read only if a shell or SQL client runs it."""
        if self.remote is not None or UNKNOWN in target.replace(HOME, ""):
            return None
        self.disk_inputs.append((target, cwds))
        return f"{_ON_DISK}{len(self.disk_inputs) - 1}"

    def _sql_stdin(self, marker: str) -> str | None:
        """`mysql < dump.sql`: the SQL text of the file behind a `disk_input` marker."""
        start, files_start = len(self.out), len(self.files_read)
        try:
            return self._disk_input_text(marker)
        finally:
            self._trust_committed_scripts(start, files_start)

    def _disk_input_text(self, marker: str) -> str | None:
        """The text of the file behind a `disk_input` marker (None when there is none)."""
        target, cwds = self.disk_inputs[int(marker[len(_ON_DISK):])]
        texts: list[str] = []
        for place in self._places(target, cwds) or ():
            text = self._readable(display(target), read_script(place))
            if text is not None:
                texts.append(text)
        return "\n".join(texts) if texts else None

    def _sql_files(self, name: str, args: Sequence[str], stdin: str | None, state: State) -> None:
        """SQL files the client reads (`-f FILE`, `\\i FILE`, `.read FILE`, `source FILE`): each judged as if
        it were given on stdin; one this same command writes is followed (`psql -f <(echo SQL)`)."""
        files = option_files(name, args) + [f for arg in args for f in included_files(word_text(arg))]
        if stdin is not None and stdin != PIPE:
            files += included_files(stdin)
        for sql_file in files:
            content = self.file_content(sql_file, state.cwds)
            if content is None:
                if self.remote is None:
                    self._sql_on_disk(name, sql_file, state)
            else:
                self.out.append(SimpleCommand((name,) if content != PIPE else (name, "-f", UNKNOWN), state.cwds,
                                              self.remote, (), content if content != PIPE else None))

    def _sql_on_disk(self, name: str, sql_file: str, state: State) -> None:
        """An SQL file on disk, and the files it includes, each judged as SQL the client reads."""
        start, files_start = len(self.out), len(self.files_read)
        try:
            self._sql_file_and_includes(name, sql_file, state)
        finally:
            self._trust_committed_scripts(start, files_start)

    def _sql_file_and_includes(self, name: str, sql_file: str, state: State) -> None:
        if UNKNOWN in sql_file.replace(HOME, ""):
            return  # the databases pack denies an SQL file only known at run time
        for place in self._places(sql_file, state.cwds) or ():
            script = read_script(place)
            text = self._readable(display(sql_file), script)
            if text is None:
                continue
            self.out.append(SimpleCommand((name,), state.cwds, self.remote, (), text, display(sql_file)))
            self.reading.append(script.path)
            try:
                for nested in included_files(text):
                    self._sql_file_and_includes(name, nested, state)
            finally:
                self.reading.pop()

    def _stdin_code(self, stdin: str | None, what: str, state: State, depth: int,
                    language: str | None = None) -> None:
        if stdin is not None and stdin.startswith(_ON_DISK):
            # a file on disk: read when a shell runs it (an interpreter's program on disk is not read)
            start, files_start = len(self.out), len(self.files_read)
            try:
                self._stdin_code(self._disk_input_text(stdin) if language is None else None, what, state, depth)
            finally:
                self._trust_committed_scripts(start, files_start)
            return
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
        expanded: set[str] = set()
        while True:
            if not argv:
                return state, state, None
            if UNKNOWN in argv[0].replace(HOME, ""):
                self.out.append(Unanalysable(
                    f"the command name {display(argv[0])!r} is only known when it runs (a variable, substitution "
                    f"or decoded text); {LITERALLY}", rule="unknown-command"))
                return state, state, None
            if argv[0] not in ("[", "[[") and _NAME_GLOB.search(argv[0]):
                self.out.append(Unanalysable(
                    f"the command name {argv[0]!r} is a wildcard: what it matches is only known when it runs; "
                    f"{LITERALLY}", rule="unknown-command"))
                return state, state, None
            if _PROC_EXE.fullmatch(argv[0]):
                self.out.append(Unanalysable(
                    f"the command {argv[0]!r} is whatever program or file that descriptor or process holds when it "
                    f"runs; {LITERALLY}", rule="unknown-command"))
                return state, state, None
            if argv[0] in self.aliases and argv[0] not in expanded:  # bash expands a name once per command
                expanded.add(argv[0])
                if peeled == MAX_WRAPPERS:
                    self.out.append(Unanalysable(f"more than {MAX_WRAPPERS} aliases or wrappers are nested; "
                                                 "run the command with fewer"))
                    return state, state, None
                argv = [*split_words(self.aliases[argv[0]]), *argv[1:]]
                peeled += 1
                continue
            if argv[0] in self.functions:
                return self._call(argv, state.with_cwds(cwds), depth)
            if "/" not in argv[0] and self._written_name(argv[0], cwds):
                self.out.append(Unanalysable(
                    f"`{argv[0]}` may run a file this same command wrote under that name; {LITERALLY}",
                    rule="unknown-command"))
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
            for variable, value in step.env.items():
                self.assigned(variable, value, state, depth)
            if step.chdir is not None:
                cwds = frozenset(chdir(cwd, step.chdir) for cwd in cwds)
            here = state.with_cwds(cwds).child_shell(env)
            for local in step.local_scripts:
                self.script(local, here, depth + 1)
            if step.remote is not None and (step.script is not None or step.reads_stdin):
                self._remote_script(step.remote, step.script, here, depth, stdin)
                return state, state, None
            if step.script is not None:
                self.script(step.script, here, depth + 1)
            if step.reads_stdin:
                self._stdin_code(stdin, command_name(argv[0]), here, depth)
            if step.noexec or step.script is not None or step.reads_stdin:
                return state, state, None
            if command_name(argv[0]) == "coproc" and stdin is None:
                stdin = PIPE  # what the shell writes to "${COPROC[1]}" later
            argv = _apply_xargs(step.argv, step.xargs_replace) if step.xargs_replace is not None else step.argv
        name = command_name(argv[0])
        versioned = _VERSIONED_SHELL.fullmatch(name)
        if versioned:  # `bash5.2`, `ksh93`, `zsh-5.9`, `dash.static`: the shell itself
            name = versioned.group(1)
        if self.unknown_links:
            argv = [argv[0], *(UNKNOWN + arg if arg.startswith("/") else arg for arg in argv[1:])]
        if self.links or self.moved:
            argv = [argv[0], *(self._through_links(arg, cwds) for arg in argv[1:])]
        if name == "git":
            argv = [argv[0], *git_argv.env_settings(env, state.vars), *argv[1:]]
        if name in _TERRAFORMS:
            argv = [*argv, *self._terraform_env_args(argv[1:], env, state)]
        here = state.with_cwds(cwds)
        if stdin is not None and stdin.startswith(_ON_DISK):
            # `mysql < drop.sql` is read now; a shell reads it only if it runs stdin; to any other command
            # the file is data it reads, as before (`cat < x.sh | python3` still pipes unknown code)
            stdin = self._sql_stdin(stdin) if name in SQL_CLIENTS else \
                stdin if name in SHELLS or name in ("source", ".") else None
        known_stdin = stdin if stdin != PIPE and not (stdin or "").startswith(_ON_DISK) else None
        self.out.append(SimpleCommand((name, *argv[1:]), cwds, self.remote, tuple(env.items()), known_stdin))
        if name in _SUBSCRIPT_BUILTINS:
            for arg in argv[1:]:  # an array subscript in a name these evaluate runs its substitutions
                if _SUBSCRIPT_CODE.search(arg):
                    self.script(": " + arg, here, depth + 1)
        if name in ("read", "mapfile", "readarray") and known_stdin and _SUBSCRIPT_CODE.search(known_stdin):
            self.script(": " + known_stdin, here, depth + 1)  # a value read here, evaluated as arithmetic later
        special = self._builtin(name, argv[1:], here, stdin, depth)
        if special is not None:
            return special
        if "/" in argv[0] and name not in SHELLS:
            self._run_file(argv[0], here, depth, None, "program", argv[1:])
        return self._external(name, argv[1:], here, stdin, env, depth)

    def _terraform_env_args(self, args: Sequence[str], env: Mapping[str, str | None], state: State) -> list[str]:
        """`TF_CLI_ARGS` and `TF_CLI_ARGS_<subcommand>` add arguments (`-destroy`) terraform reads as its own."""
        words = [a for a in args if not a.startswith("-")]
        added: list[str] = []
        for variable in ("TF_CLI_ARGS", f"TF_CLI_ARGS_{words[0]}" if words else "TF_CLI_ARGS"):
            if variable not in env and variable not in state.vars:
                continue
            value = env[variable] if variable in env else state.vars[variable]
            if value is None or UNKNOWN in value:
                self.out.append(Unanalysable(f"terraform adds ${variable} to its arguments, and its value is only "
                                             f"known at run time; {LITERALLY}", rule="unknown-command"))
            else:
                added += split_words(value)
        return list(dict.fromkeys(added))

    def _through_links(self, arg: str, cwds: frozenset[str | None]) -> str:
        """`arg` with a leading path through a link made earlier in this command replaced by its target
        (`of=PATH` too); a wildcard that may match such a link is unknown."""
        prefix = ""
        if arg.startswith(("of=", "if=")):
            prefix, arg = arg[:3], arg[3:]
        for key in self._keys(arg, cwds) if arg and not arg.startswith("-") else ():
            for link, target in self.links.items():
                if key == link or key.startswith(link + "/"):
                    return prefix + target + key[len(link):] + ("/" if arg.endswith("/") else "")
                if _GLOB.search(key) and _glob_may_match(key, link):
                    return prefix + UNKNOWN + arg
            for destination, source in self.moved.items():
                if destination.startswith(key + "/"):
                    return prefix + source
        return prefix + arg

    def _written_here(self, path: str, cwds: frozenset[str | None]) -> bool:
        """This command writes the file `path` itself (not just a directory it is in)."""
        return UNKNOWN not in path and any(key in self.written for key in self._keys(path, cwds))

    def _written_name(self, name: str, cwds: frozenset[str | None]) -> bool:
        """A file this command wrote (or linked) is named like the command about to run."""
        return any(posixpath.basename(key) == name for key in (*self.written, *self.links))

    def _call(self, argv: list[str], state: State, depth: int) -> Outcome:
        """A shell function defined in this command: its body runs with the call's arguments."""
        name = argv[0]
        if name in self.calling:
            self.out.append(Unanalysable(f"the function {name!r} calls itself (a fork bomb is one); {LITERALLY}",
                                         rule="unknown-command"))
            return state, state, None
        called = _with_positionals(self.functions[name], argv, state)
        if called is None:
            self.script(self.functions[name], state, depth + 1)
            return state, state, None
        self.calling.append(name)
        try:
            succ, fail = self.script(*called, depth + 1)
        finally:
            self.calling.pop()
        return succ, fail, None

    def _record_link(self, args: Sequence[str], cwds: frozenset[str | None]) -> None:
        directory = None
        rest: list[str] = []
        for index, arg in enumerate(args):
            if arg.startswith("--target-directory="):
                directory = arg.split("=", 1)[1]
            elif _names_directory(arg) and index + 1 < len(args):
                directory = args[index + 1]
            elif not (index and _names_directory(args[index - 1])):
                rest.append(arg)
        found = [a for a in rest if not a.startswith("-")]
        symbolic = any((a.startswith("-") and not a.startswith("--") and "s" in a) or a == "--symbolic" for a in args)
        if not symbolic:
            return
        if directory is not None:
            for target in found:
                self._link(target, posixpath.join(directory, posixpath.basename(target.rstrip("/")) or "x"), cwds)
            return
        if len(found) != 2:
            return
        self._link(found[0], found[1], cwds)

    def _link(self, target: str, link: str, cwds: frozenset[str | None]) -> None:
        for key in self._keys(link, cwds):
            base = posixpath.dirname(key)
            self.links[key] = target if target.startswith(("/", HOME)) or UNKNOWN in target else \
                normalize_path(posixpath.join(base, target))

    @staticmethod
    def watches(name: str) -> bool:
        return name in _LOADER_VARIABLES or name in _HOOK_VARIABLES or name in _PROMPT_VARIABLES

    def assigned(self, name: str, value: str | None, state: State, depth: int) -> None:
        """A variable set here (`X=v`, `X=v cmd`, `export X=v`, `env X=v cmd`) that the shell or the dynamic
        loader acts on: its value is code that runs later, so it is judged now."""
        if name in _LOADER_VARIABLES and value != "":
            self.out.append(_unknown_code(f"${name} loads a shared library into every program started with it"))
        elif name in _HOOK_VARIABLES:
            if value is None:
                self.out.append(_unknown_code(f"the shell runs ${name}, whose value is only known at run time"))
            elif value:
                self.script(value, state, depth + 1)
        elif name.startswith("BASH_FUNC_"):  # a function bash imports: its body runs when the name is called
            body = value if value is not None else UNKNOWN
            self.script(f"{name[10:].rstrip('%') or 'f'} {body}" if body.lstrip().startswith("()") else
                        "$" + "{__kilo_loop_unknown__}", state, depth + 1)
        elif name in _PROMPT_VARIABLES and value and ("$(" in value or "`" in value):
            self.script(": " + value, state, depth + 1)  # a prompt string runs its command substitutions
        elif value and _SUBSCRIPT_CODE.search(value):
            # every arithmetic context (`[[ x -eq 1 ]]`, `(( x ))`, `${a[x]}`, `${s:x}`, `[ "$x" -eq 1 ]`,
            # `printf %d "$x"`) evaluates the value, running the substitutions in its array subscripts
            self.script(": " + value, state, depth + 1)

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
            rotates = name == "pushd" and any(_STACK_INDEX.fullmatch(a) for a in args)  # `pushd +1`: a stack entry
            if target is None or target == "-" or rotates:
                return state.with_cwds(frozenset({None})), state, None
            cdpath = "CDPATH" in state.vars or _environ_has("CDPATH") or self.cdable_vars
            return state.with_cwds(frozenset(chdir(cwd, target, cdpath) for cwd in state.cwds)), state, None
        if name == "popd":
            return state.with_cwds(frozenset({None})), state, None
        if name in ("export", "declare", "typeset", "local", "readonly"):
            nameref = any(a.startswith("-") and "n" in a for a in args)
            declared = [(a.split("=", 1)[0], None if nameref else a.split("=", 1)[1] if "=" in a else KEEP)
                        for a in args]
            for variable, value in declared:
                if value != KEEP:
                    self.assigned(variable, value, state, depth)
            new = self.declaration(name, declared, state)
            return new, new, None
        if name in ("read", "mapfile", "readarray", "getopts", "unset", "printf"):
            if name in ("mapfile", "readarray"):
                opts, _ = parse_options(args, "dnOsuCct")
                if "-C" in opts:  # the callback is evaluated for every few lines read
                    self.script(opts["-C"], state, depth + 1)
            return self._assigning_builtin(name, args, state, depth)
        if name == "eval":
            succ, fail = self.script(" ".join(args[1:] if args[:1] == ["--"] else args), state, depth + 1)
            return succ, fail, None
        if name in ("source", "."):
            return self._source(args[1:] if args[:1] == ["--"] else args, state, stdin, depth)
        if name == "alias":
            for arg in args:
                if "=" in arg:
                    alias, value = arg.split("=", 1)
                    self.script(value, state, depth + 1)
                    self.aliases[alias] = value
            return state, state, None
        if name == "hash" and "-p" in args:
            at = args.index("-p")
            if len(args) > at + 2:  # `hash -p /bin/rm ls`: the name `ls` now runs /bin/rm
                self.aliases[args[at + 2]] = shlex_quote(args[at + 1])
            return state, state, None
        if name == "shopt" and "cdable_vars" in args and not any(a.startswith("-") and "u" in a for a in args):
            self.cdable_vars = True  # `cd NAME` now goes to $NAME when ./NAME does not exist
        if name == "fc" and not any(a.startswith("-") and "l" in a for a in args):
            self.out.append(_unknown_code("fc runs commands again from the shell history"))
            return state, state, None
        if name == "enable" and any(a.startswith("-") and "f" in a for a in args):
            self.out.append(_unknown_code("enable -f loads a builtin from a shared library"))
            return state, state, None
        if name == "trap":
            handler = args[1:] if args[:1] == ["--"] else args
            if handler and not handler[0].startswith("-"):
                self.script(handler[0], state, depth + 1)
            return state, state, None
        return None

    def _assigning_builtin(self, name: str, args: list[str], state: State, depth: int = 0) -> Outcome | None:
        if name == "printf":
            if "-v" not in args[:-1]:
                return None
            target = args[args.index("-v") + 1]
            new = state.with_var(target, None) if _NAME.fullmatch(target) else state
            return new, new, None
        new = state
        for arg in args:
            if _NAME.fullmatch(arg):
                new = new.with_var(arg, "" if name == "unset" else READ if name in ("read", "mapfile", "readarray")
                                   else None)
        return new, new, None

    def _source(self, args: list[str], state: State, stdin: str | None, depth: int) -> Outcome:
        if not args:
            return state, state, None
        path = args[0]
        if path in _STDIN_FILES:
            self._stdin_code(stdin if stdin is not None else PIPE, "source", state, depth)
            return state, state, None
        flow = self._run_file(path, state, depth, None, "sourced", args[1:])
        return (*flow, None) if flow is not None else (state, state, None)

    def _external(self, name: str, args: list[str], state: State, stdin: str | None,
                  env: Mapping[str, str | None], depth: int) -> Outcome:
        if name in SHELLS:
            for startup in ("BASH_ENV", "ENV"):  # a non-interactive shell sources these first
                value = env[startup] if startup in env else state.vars.get(startup)
                if startup in env or startup in state.vars:
                    self._run_file(value if value is not None else UNKNOWN, state, depth, None, "script", ())
            for index, arg in enumerate(args[:-1]):
                if arg in ("--rcfile", "--init-file"):  # read like a script before anything else
                    self._run_file(args[index + 1], state, depth, None, "script", ())
            command, reads_stdin, script_file = shell_invocation(args)
            if command is not None:
                self.script(command, state.child_shell(env), depth + 1)
            elif reads_stdin or script_file in _STDIN_FILES:
                self._stdin_code(stdin, name, state.child_shell(env), depth)
            elif script_file is not None:
                self._run_file(script_file, state, depth, None, None if _syntax_check(args) else "script",
                               _script_arguments(args))
        interp = interpreter(name)
        if interp is not None:
            self._inline(interp, args, state, stdin, env, depth)
        if name == "cmd" and args[:1] and args[0].lower() in ("/c", "/k", "/r"):
            self.out.append(InlineCode("cmd", " ".join(args[1:]), state.cwds, self.remote))
        if name in AWKS or name in SEDS:
            programs = [awk_program(args)] if name in AWKS else sed_scripts(args)
            if set(_option_values(args, "f", ("--file",))) & (_STDIN_FILES | {"-"}):
                self._stdin_code(stdin if stdin is not None else PIPE, name, state, depth,
                                 "awk" if name in AWKS else "sed")
            for program in programs:
                if program is not None:
                    self.out.append(InlineCode("awk" if name in AWKS else "sed", program, state.cwds, self.remote))
                    self._code_writes(program, state.cwds)
        if name == "find":
            self._find_exec(args, state, depth)
        if name == "ln":
            self._record_link(args, state.cwds)
        if name == "mv":
            found = _mv_operands(args)
            for source in found[:-1] if len(found) >= 2 else ():
                destination = found[-1]
                if destination.endswith("/") or _is_directory(destination, state.cwds):
                    destination = posixpath.join(destination, posixpath.basename(source.rstrip("/")))
                origin = source if source.startswith(("/", HOME)) or UNKNOWN in source else \
                    _absolute_or_unknown(source, state.cwds)
                self._link(origin, destination, state.cwds)
                for key in self._keys(destination, state.cwds):
                    self.moved[key] = origin
        if name in _MOUNTERS and (name != "rclone" or args[:1] in (["mount"], ["nfsmount"])):
            found = [a for a in args if not a.startswith("-")]
            if len(found) >= 2:
                self._link(found[-2] if name == "bindfs" else UNKNOWN + found[-2], found[-1], state.cwds)
        if name == "mount" and len([a for a in args if not a.startswith("-")]) >= 2:
            found = [a for a in args if not a.startswith("-")]
            self._link(found[-2], found[-1], state.cwds)
        self._runs_other_code(name, args, state, env, stdin, depth)
        if name == "git":
            self._git(args, state, env, depth)
        for edited in edited_in_place(name, args):  # `sed -i … x.sh; bash x.sh` runs the edited text
            self.wrote(edited, None, state.cwds)
        if self.tree_rewriter is None and rewrites_tree(name, args):
            self.tree_rewriter = display(" ".join([name, *args[:2]]))
        if name == "tee" or name in _COPY_WRITERS or name in ("curl", "wget"):
            for target in _written_by(name, args):
                self.wrote(target, stdin if name == "tee" and stdin != PIPE else None, state.cwds)
        if name in _DD_WRITERS:
            for target in (a[3:] for a in args if a.startswith("of=")):
                self.wrote(target, stdin if stdin != PIPE else None, state.cwds)
        return state, state, printed_text(name, args, stdin)

    def _runs_other_code(self, name: str, args: list[str], state: State, env: Mapping[str, str | None],
                         stdin: str | None, depth: int) -> None:
        """Commands that run a shell command given in an option, a package script, a Makefile or stdin."""
        child = state.child_shell(env)
        for script in _option_scripts(name, args):
            self.script(script, child, depth + 1)
        if name == "npm" and args[:2] == ["pkg", "set"]:
            for setting in args[2:]:
                key, _, value = setting.partition("=")
                if key.startswith("scripts."):
                    self.script(value, child, depth + 1)
        if name in ("make", "gmake"):
            files = _option_values(args, "f", ("--file", "--makefile")) or sorted(_MAKEFILES)
            if any(a.startswith(("--eval", "-E")) for a in args) or any(
                    self._written_here(f, state.cwds) for f in files):
                self.out.append(_unknown_code("make runs recipes from text this same command writes or passes"))
        for recipes in _RECIPE_FILES.get(name, ()):
            if self._written_here(recipes, state.cwds):
                self.out.append(_unknown_code(f"{name} runs recipes from {recipes}, which this same command writes"))
        for target in _option_outputs(name, args):  # `gpg -o FILE`, `openssl -out FILE`: like a redirect
            # (what a compiler writes is the program just built: running it next is the point of building it)
            self.output_redirect(target, state.cwds, record=name not in _COMPILERS)
        if name == "gdb":  # `gdb -ex … --args PROG ARGS…` (not peeled as a wrapper): the program runs too
            at = next((i for i, a in enumerate(args) if a in ("--args", "-args")), None)
            if at is not None and at + 1 < len(args):
                self.run_simple(args[at + 1:], state, None, {}, depth + 1)
        if name == "go" and args[:1] == ["run"]:
            self._go_run(args[1:], state, depth)
        if name in ("rg", "ripgrep"):
            for program in _option_values(args, "\x01", ("--pre",)):
                self.run_simple([program, READ], state, None, {}, depth + 1)  # once per file searched
        if name in SQL_CLIENTS:
            self._sql_files(name, args, stdin, state)
        if name in ("mkfifo", "mknod"):
            for fifo in [a for a in args if not a.startswith("-")][:1 if name == "mknod" else None]:
                self.wrote(fifo, None, state.cwds)  # reading it gives whatever another command writes
        if name in _PACKAGE_RUNNERS and self._written_here("package.json", state.cwds):
            self.out.append(_unknown_code(f"{name} runs scripts from a package.json this same command writes"))
        if self.remote is None:
            self._project_files(name, args, state, depth, stdin)
        if name == "less":
            for variable in ("LESSOPEN", "LESSCLOSE"):
                preprocessor = env[variable] if variable in env else state.vars.get(variable, "")
                if preprocessor is None:
                    self.out.append(_unknown_code(f"less runs ${variable}, whose value is only known at run time"))
                elif preprocessor:
                    self.script(preprocessor.lstrip("|-").replace("%s", "file"), child, depth + 1)
        if name in ("ed", "red", "ex", "m4", "tclsh", "wish", "lua", "luajit"):
            language = "tcl" if name in ("tclsh", "wish") else "lua" if name.startswith("lua") else \
                "m4" if name == "m4" else "ed"
            if not (language == "lua" and [a for a in args if not a.startswith("-")]):
                self._stdin_code(stdin, name, child, depth, language)

    def _project_files(self, name: str, args: list[str], state: State, depth: int, stdin: str | None) -> None:
        """A runner executing commands written in project files (`make`, `npm run X`, `deno task X`, `tox`,
        `task X`, `pre-commit`, `go generate`, `awk -f`, `sed -f`, `vim -S`): the files are read and what
        they run is followed; what the guard does not read is reported as `Unread`."""
        for shown, lines, language in self._runner_lines(name, args, state, stdin):
            start, files_start = len(self.out), len(self.files_read)
            try:
                for line in lines:
                    if language is None:
                        self.script(line, state.child_shell({}), depth + 1)
                    else:
                        self.out.append(InlineCode(language, line, state.cwds, self.remote))
            finally:
                self._mark_script(start, shown)
                self._trust_committed_scripts(start, files_start)
        what = project_runners.unread(name, args)
        if what is not None:
            self.out.append(Unread(f"`{name}` runs {what}", self.remote))

    def _runner_lines(self, name: str, args: list[str], state: State,
                      stdin: str | None) -> list[tuple[str, list[str], str | None]]:
        """(file shown, command lines, language or None for shell) for each project file `name args` runs
        (a file that is stdin — `-f -`, `-f /dev/stdin` — is what this command reads there)."""
        cwds = state.cwds
        if name in ("make", "gmake"):
            targets, files, variables = project_runners.make_targets(args)
            directory = _option_values(args, "C", ("--directory",))
            if directory:
                cwds = frozenset(posixpath.join(c, directory[-1]) if c else None for c in cwds) \
                    if not directory[-1].startswith("/") else frozenset({directory[-1]})
            makefiles = files or ["GNUmakefile", "makefile", "Makefile"]
            return self._read_first(stdin, makefiles, cwds, lambda t: project_runners.makefile_commands(t, targets, variables),
                                    all_of=bool(files))
        if name in _PACKAGE_RUNNERS:
            return self._read_first(stdin, ["package.json"], cwds, lambda t: project_runners.package_scripts(t, name, args))
        if name == "deno" and args[:1] == ["task"]:
            return self._read_first(stdin, ["deno.json", "deno.jsonc"], cwds,
                                    lambda t: project_runners.deno_tasks(t, args[1:]))
        if name == "tox":
            tox = self._read_first(stdin, ["tox.ini"], cwds, project_runners.tox_commands)
            if not tox:
                self.out.append(Unread("`tox` runs the commands of its configuration in pyproject.toml or setup.cfg"))
            return tox
        if name in ("task", "go-task"):
            return self._read_first(stdin, ["Taskfile.yml", "Taskfile.yaml", "taskfile.yml", "taskfile.yaml",
                                     "Taskfile.dist.yml"], cwds, lambda t: project_runners.taskfile_commands(t, args))
        if name in ("pre-commit", "prek") and (not args or args[0] in ("run", "try-repo", "hook-impl")):
            hooks = self._read_first(stdin, [".pre-commit-config.yaml", ".pre-commit-config.yml"], cwds,
                                     project_runners.precommit_commands)
            self.out.append(Unread("`pre-commit` runs the hooks of every repository in its configuration other than `local` (their code is not read)"))
            return hooks
        if name == "go" and args[:1] == ["generate"]:
            return self._go_generate(args[1:], cwds)
        if name in AWKS or name in SEDS:
            language = "awk" if name in AWKS else "sed"
            files = _file_options(args, "-f", ("--file",))
            return self._read_first(stdin, files, cwds, lambda t: [t], language, all_of=True)
        if name in ("vim", "vi", "nvim", "view", "ex"):
            return self._read_first(stdin, _file_options(args, "-S", ()), cwds, _vim_commands, all_of=True)
        if name == "gdb":
            files = _file_options(args, "-x", ("-command", "--command", "-ix", "-init-command", "--init-command"))
            return self._read_first(stdin, files, cwds, _gdb_commands, all_of=True)
        return []

    def _read_first(self, stdin: str | None, names: Sequence[str], cwds: frozenset[str | None],
                    extract: Callable[[str], list[str]], language: str | None = None,
                    all_of: bool = False) -> list[tuple[str, list[str], str | None]]:
        """Read the first of `names` that exists (every one, with `all_of`) in each working directory; a name
        that is stdin (`-`, `/dev/stdin`) reads `stdin`."""
        read: list[tuple[str, list[str], str | None]] = []
        for file_name in names:
            if file_name in _STDIN_FILES:
                text = self._stdin_text(stdin)
                if text is not None:
                    read.append(("stdin", extract(text), language))
                continue
            if UNKNOWN in file_name.replace(HOME, ""):
                self.out.append(_unknown_code(f"it runs the file {display(file_name)!r}, named only at run time"))
                continue
            if self._written_here(file_name, cwds):
                self.out.append(_unknown_code(f"it runs commands from {file_name}, which this same command writes"))
                continue
            for place in self._places(file_name, cwds) or ():
                text = self._readable(display(file_name), read_script(place))
                if text is not None:
                    read.append((file_name, extract(text), language))
            if read and not all_of:
                break
        return read

    def _stdin_text(self, stdin: str | None) -> str | None:
        """What a command reads as a file on stdin: known text, a file on disk (`< f`), or a deny for a pipe."""
        if stdin is not None and stdin.startswith(_ON_DISK):
            return self._disk_input_text(stdin)
        if stdin == PIPE:
            self.out.append(_unknown_code("it reads its code from a pipe or file whose content the guard cannot see"))
            return None
        return stdin

    def _go_generate(self, packages: list[str], cwds: frozenset[str | None]) -> list[tuple[str, list[str], str | None]]:
        """`go generate [packages]`: the `//go:generate` lines of the packages' Go files (`./...` walks down)."""
        import os

        found: list[tuple[str, list[str], str | None]] = []
        for cwd in cwds:
            if cwd is None:
                continue
            for package in [p for p in packages if not p.startswith("-")] or ["."]:
                recursive = package.endswith("/...")
                root = posixpath.normpath(posixpath.join(cwd, package.removesuffix("/...") or "."))
                walk = os.walk(root) if recursive else [(root, [], os.listdir(root) if os.path.isdir(root) else [])]
                for directory, _dirs, files in walk:
                    for file_name in sorted(f for f in files if f.endswith(".go")):
                        if len(found) >= MAX_SCRIPTS_READ:
                            self.out.append(_unknown_code(f"go generate reads more than {MAX_SCRIPTS_READ} Go files"))
                            return found
                        path = posixpath.join(directory, file_name)
                        text = self._readable(path, read_script(path))
                        lines = project_runners.go_generate_commands(text or "")
                        if lines:
                            found.append((path, lines, None))
        return found

    def _inline(self, interp: Interpreter, args: list[str], state: State, stdin: str | None,
                env: Mapping[str, str | None], depth: int) -> None:
        codes, reads_stdin, script_file = inline_codes(interp, args)
        if any("://" in a and not a.startswith("-") for a in args[:4]) and (script_file or "").startswith(
                ("run", "http")):  # `deno run https://…`: a program fetched when it runs
            self.out.append(_unknown_code(f"{interp.language} runs a program from a URL"))
        if reads_stdin or script_file in _STDIN_FILES:
            self._stdin_code(stdin, interp.language, state, depth, interp.language)
        if script_file is not None:
            self._run_file(script_file, state, depth, interp.language)
        for code in codes:
            self.out.append(InlineCode(interp.language, code, state.cwds, self.remote))
            self._code_strings(interp.language, code, state.child_shell(env), depth)
            self._code_writes(code, state.cwds)  # after: a path the program writes is not a command it runs
            if _SYMLINK_CODE.search(code):
                self.unknown_links = True

    def _go_run(self, args: list[str], state: State, depth: int) -> None:
        package, programs = go_run(args)
        if package is not None and "@" in package.lstrip("@"):
            self.out.append(Unanalysable(
                f"`go run {package}` downloads that module version and runs it, so what it does cannot be known "
                "before it runs; add it to go.mod and read it first, or `go install` it and run the binary by "
                "name", rule="unknown-code"))
        for program in programs:  # `-exec PROG`: PROG runs with the built binary as its first argument
            self.run_simple([*split_words(program), READ], state, None, {}, depth + 1)

    def _code_writes(self, code: str, cwds: frozenset[str | None]) -> None:
        """Program text that writes files: every path named in it may be written (so running one of them
        later in this command runs unknown content)."""
        if _CODE_WRITES.search(code):
            for literal in _CODE_PATH_LITERAL.finditer(code):
                self.wrote(literal.group(1) or literal.group(2), None, cwds)

    def _code_strings(self, language: str, code: str, state: State, depth: int) -> None:
        for script in shell_strings_in_code(language, code):
            self.script(script, state.child_shell({}), depth + 1)

    def _git(self, args: list[str], state: State, env: Mapping[str, str | None], depth: int) -> None:
        call = git_argv.parse_git_argv(args)
        for script in ([call.shell_alias] if call.shell_alias else []) + call.nested_scripts:
            self.script(script, state.child_shell(env), depth + 1)
        alias = git_argv.alias_definition(call)
        if alias is not None:  # `git config alias.p push`: what `git p` will run is judged now
            self.script("git " + alias, state.child_shell(env), depth + 1)
        if call.subcommand == "clone":
            for directory in git_argv.clone_directory(call):
                self.written_dirs |= self._keys(directory, state.cwds)
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
                    words = expression[i + 1:end]
                    runs_code = bool(words) and (command_name(words[0]) in SHELLS or
                                                 interpreter(command_name(words[0])) is not None)
                    found = _found_below(root, expression)
                    argv = [UNKNOWN if w == "{}" and runs_code else found if w == "{}" else
                            w.replace("{}", UNKNOWN) for w in words]
                    if argv and command_name(argv[0]) in _TREE_CHANGERS:
                        argv.insert(1, "-R")  # applied to every file under the root: a recursive change
                    self.run_simple(argv, state, None, {}, depth)
                i = end
            i += 1


_FIND_NAME_TESTS = ("-name", "-iname")
_FIND_NEGATIONS = frozenset({"!", "-not", "-o", "-or", ","})


def _found_below(root: str, expression: Sequence[str]) -> str:
    """What `{}` stands for in `find ROOT … -exec CMD {}`: with a `-name PATTERN` test the root's own name
    does not pass (and no `!`/`-o`), a path below the root named like PATTERN; else the root itself."""
    if UNKNOWN in root or set(expression) & _FIND_NEGATIONS:
        return root
    from fnmatch import fnmatchcase

    base = posixpath.basename(normalize_path(root)) if root not in (".", "./") else "."
    for index, word in enumerate(expression[:-1]):
        pattern = expression[index + 1]
        if word in _FIND_NAME_TESTS and "/" not in pattern and pattern not in ("*", ".*", "?*") and \
                not fnmatchcase(base, pattern):
            return posixpath.join(root, pattern)
    return root


def _file_options(args: Sequence[str], short: str, long: tuple[str, ...]) -> list[str]:
    """Every file named by `short FILE`, `shortFILE`, `long FILE` or `long=FILE` (`-` kept: it is stdin)."""
    found: list[str] = []
    for index, arg in enumerate(args):
        following = args[index + 1] if index + 1 < len(args) else ""
        key, eq, value = arg.partition("=")
        if arg == short or (key in long and not eq):
            found.append(following)
        elif key in long:
            found.append(value)
        elif arg.startswith(short) and len(arg) > len(short) and not arg.startswith("--"):
            found.append(arg[len(short):])
    return [f for f in found if f]


def _gdb_commands(text: str) -> list[str]:
    """The shell commands a gdb command file runs (`shell CMD`, `!CMD`); its Python is only known at run time."""
    scripts: list[str] = []
    for line in text.splitlines():
        scripts += _option_scripts("gdb", ["-ex", line.strip()]) if line.strip() else []
    return scripts


def _vim_commands(text: str) -> list[str]:
    """The shell commands a vim script runs (`:!cmd`, `silent !cmd`); code vim evaluates (`call system(…)`,
    `:py3 …`) is a value only known at run time."""
    scripts: list[str] = []
    for line in text.splitlines():
        scripts += _option_scripts("vim", ["-c", line.strip()]) if line.strip() else []
    return [UNKNOWN if s == UNKNOWN else s for s in scripts]


def _is_shell(name: str) -> bool:
    return name in SHELLS or _VERSIONED_SHELL.fullmatch(name) is not None


def _script_arguments(args: Sequence[str]) -> list[str]:
    """The words after the script file in `bash [options] FILE ARGS…`: its `$1…`."""
    i = 0
    while i < len(args) and args[i] != "--" and args[i][:1] in ("-", "+") and len(args[i]) > 1:
        i += 2 if args[i] in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file") else 1
    if i < len(args) and args[i] == "--":
        i += 1
    return list(args[i + 1:])


def _syntax_check(args: Sequence[str]) -> bool:
    """`bash -n FILE` / `-o noexec`: the shell only parses the script, it runs nothing in it."""
    for index, arg in enumerate(args):
        if arg == "--" or not arg.startswith("-") or arg.startswith("--"):
            return False
        if "n" in arg[1:] or (arg == "-o" and args[index + 1:index + 2] == ["noexec"]):
            return True
    return False


def _with_positionals(body: str, argv: Sequence[str], state: State) -> tuple[str, State] | None:
    """`body` (a function's or a script's) run with the words after argv[0] as `$1…`: `$@`/`$*` replaced
    by the words, `$N` by a variable holding word N. None when the body moves them itself (`shift`,
    `set --`), so they are no longer the call's words."""
    if _REPOSITIONS.search(body):
        return None
    words = " ".join(_shell_word(a) for a in argv[1:])

    def positional(found: re.Match[str]) -> str:
        if found.group(4):  # `${N…`: the rest of the expansion (`}`, `:-default}`) stays as it is
            return "${" + _ARGUMENT + found.group(4)
        if found.group(5):
            return "${" + _ARGUMENT + found.group(5) + "}"
        return words

    for index in range(1, 10):
        state = state.with_var(f"{_ARGUMENT}{index}", argv[index] if index < len(argv) else "")
    return _POSITIONAL.sub(positional, body), state


def _shell_word(word: str) -> str:
    """`word` quoted for a shell; one holding a marker (`~`, an unknown value) is double-quoted, so the
    walker still sees it expand."""
    if UNKNOWN not in word:
        return shlex_quote(word)
    return '"' + re.sub(r'([\\"$`])', r"\\\1", word) + '"'


def shlex_quote(word: str) -> str:
    import shlex

    return shlex.quote(word)


def _glob_may_match(pattern: str, path: str) -> bool:
    """The wildcard path `pattern` may match `path` or something below it."""
    from fnmatch import fnmatchcase

    want, have = pattern.split("/"), path.split("/")
    return len(want) >= len(have) and all(fnmatchcase(h, w) for w, h in zip(want, have, strict=False))


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


def _mv_operands(args: Sequence[str]) -> list[str]:
    """`mv [opts] SRC… DST`, with `-t DIR` / `--target-directory=DIR` moved to the end as the destination."""
    found: list[str] = []
    target: list[str] = []
    skip = False
    for index, arg in enumerate(args):
        if skip:
            skip = False
        elif arg in ("-t", "--target-directory") and index + 1 < len(args):
            target, skip = [args[index + 1]], True
        elif arg.startswith("--target-directory="):
            target = [arg.split("=", 1)[1]]
        elif arg in ("-S", "--suffix"):
            skip = True
        elif not arg.startswith("-"):
            found.append(arg)
    return found + target


def _names_directory(arg: str) -> bool:
    """`ln -t DIR` / `-st DIR` / `--target-directory DIR`: the next word is the directory links go in."""
    return arg == "--target-directory" or (arg.startswith("-") and not arg.startswith("--") and arg.endswith("t"))


def _is_directory(path: str, cwds: frozenset[str | None]) -> bool:
    import os

    if UNKNOWN in path:
        return False
    return any(os.path.isdir(p) for p in ([path] if path.startswith("/") else
                                          [posixpath.join(c, path) for c in cwds if c]))


def _absolute_or_unknown(path: str, cwds: frozenset[str | None]) -> str:
    known = [c for c in cwds if c]
    return normalize_path(posixpath.join(known[0], path)) if len(known) == 1 and None not in cwds else UNKNOWN


_EDITOR_CODE = LazyRegex(r"^(?:silent!?\s+)?(?:py3?|python3?|pyx|lua|perl|ruby|term(?:inal)?|call|exe(?:cute)?)\b"
                         r"|\bsystem\s*\(")
_SCRIPT_OPTIONS: dict[str, tuple[str, ...]] = {
    "tar": ("--to-command", "--checkpoint-action", "--use-compress-program", "-I", "--info-script", "-F",
            "--new-volume-script", "--rsh-command"),
    "rsync": ("-e", "--rsh", "--rsync-path"),
    "zip": ("-TT", "--unzip-command"),
    "vim": ("-c", "--cmd"), "vi": ("-c", "--cmd"), "nvim": ("-c", "--cmd"), "view": ("-c", "--cmd"),
    "gdb": ("-ex", "--ex", "-iex", "-eval-command", "--eval-command"),
    "man": ("-P", "--pager"),
    "scp": ("-S",),
}


def _option_scripts(name: str, args: Sequence[str]) -> list[str]:
    """Shell strings given to a command's options that run them (`tar --to-command=CMD`, `rsync -e CMD`,
    vim's and gdb's `!CMD` / `shell CMD`)."""
    keys = _SCRIPT_OPTIONS.get(name, ())
    scripts: list[str] = []
    for index, arg in enumerate(args):
        key, eq, value = arg.partition("=")
        if key not in keys:
            if name in ("vim", "vi", "nvim", "view") and arg.startswith("+"):
                key, value, eq = "-c", arg[1:], "="
            else:
                continue
        value = value if eq else (args[index + 1] if index + 1 < len(args) else "")
        if key == "--checkpoint-action":
            value = value.split("=", 1)[1] if value.startswith("exec=") else ""
        if name in ("vim", "vi", "nvim", "view", "gdb"):
            stripped = value.lstrip(": ")
            if stripped.startswith("!"):
                value = stripped[1:]
            elif stripped.startswith("shell "):
                value = stripped[6:]
            elif _EDITOR_CODE.search(stripped):
                value = UNKNOWN
            else:
                continue
        scripts.append(value)
    return [s for s in scripts if s]


def _option_outputs(name: str, args: Sequence[str]) -> list[str]:
    """Files a command writes because an option names them (`--output FILE`, `-out FILE`, `gpg -o FILE`) or its
    second operand is the output (`uniq IN OUT`, `xxd -r IN OUT`)."""
    found: list[str] = []
    for index, arg in enumerate(args):
        key, eq, value = arg.partition("=")
        if key in _OUTPUT_OPTIONS or (key == "-o" and name in _SHORT_OUTPUT):
            found.append(value if eq else (args[index + 1] if index + 1 < len(args) else ""))
        elif name in _SHORT_OUTPUT and arg.startswith("-o") and len(arg) > 2 and not arg.startswith("--"):
            found.append(arg[2:])
    if name in ("uniq", "xxd"):
        operands = [a for a in args if not a.startswith("-") or a == "-"]
        found += operands[1:2]
    if name == "patch":
        operands = [a for a in args if not a.startswith("-")]
        found += operands[:1]
    if name in ("7z", "7za", "7zz"):
        found += [a[2:] for a in args if a.startswith("-o") and len(a) > 2]
    return [f for f in found if f and f != "-"]


def _apply_xargs(argv: list[str], replace: str) -> list[str]:
    """xargs adds arguments read from stdin: unknown words, at the replace-string or at the end."""
    if replace:
        replaced = [w.replace(replace, UNKNOWN) for w in argv]
        return replaced if replaced != argv else [*argv, UNKNOWN]
    return [*argv, UNKNOWN]


def downloaded_files(name: str, args: Sequence[str]) -> list[str]:
    """The files `curl`/`wget` save: `-o FILE`/`-O FILE`, or the URL's last part (`curl -O URL`, `wget URL`)."""
    named = _option_values(args, "o" if name == "curl" else "O", ("--output", "--output-document"))
    urls = [a for a in args if "://" in a and not a.startswith("-")]
    short_o = any(a.startswith("-") and not a.startswith("--") and "O" in a for a in args)
    if name == "wget":
        remote_name = not short_o and not any(a.startswith("--output-document") for a in args)
    else:
        remote_name = short_o or any(a in ("--remote-name", "--remote-name-all") for a in args)
    if remote_name:
        prefix = _option_values(args, "P", ("--directory-prefix",)) if name == "wget" else [
            a.split("=", 1)[1] if "=" in a else args[i + 1] for i, a in enumerate(args[:-1] if args else [])
            if a.split("=", 1)[0] == "--output-dir"]
        directory = prefix[-1] if prefix else ""
        for url in urls:
            base = url.split("?", 1)[0].split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]
            if base and "://" not in base:
                named.append(posixpath.join(directory, base) if directory else base)
    return named


def _written_by(name: str, args: Sequence[str]) -> list[str]:
    """Files a command writes (for `cmd … && sh FILE`)."""
    if name == "tee":
        return [a for a in args if not a.startswith("-")]
    if name in ("curl", "wget"):
        return downloaded_files(name, args)
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
    analyzer.start_cwd = start
    try:
        analyzer.script(command, State(frozenset({start})), 0)
    except (RecursionError, TooDeep):
        analyzer.out.append(Unanalysable("command nested too deeply to analyse; write it with less nesting"))
    return Analysis(tuple(analyzer.out))
