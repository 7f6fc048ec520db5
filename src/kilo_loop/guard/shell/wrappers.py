"""Commands that run another command: what each one runs, given its arguments.

A wrapper either runs an argv (`sudo -u me git push` runs `git push`), a shell string
(`su -c 'git push'`, `tmux new -d 'git push'`, `ssh host 'git push'`), or what it reads on
stdin (`at now`). `unwrap()` returns None for a command that is not a wrapper (or not in
this use: `poetry install` runs nothing, `poetry run x` runs `x`).

This module holds the local wrappers (`sudo`, `env`, `timeout`, `xargs`, `nice`, …) and the
dispatch table; package runners, remote runners and programs that run option-given scripts
have their own modules, whose tables are merged into `WRAPPERS`.
"""

from __future__ import annotations

from kilo_loop.guard.lazy_regex import LazyRegex
from kilo_loop.guard.shell.model import READ, UNKNOWN, parse_options, split_words
from kilo_loop.guard.shell.package_runners import PACKAGE_RUNNERS, subcommand_runner
from kilo_loop.guard.shell.remote import REMOTE_RUNNERS
from kilo_loop.guard.shell.script_options import SCRIPT_OPTIONS
from kilo_loop.guard.shell.unwrapped import NOEXEC, Unwrap, Unwrapped

_ASSIGNMENT = LazyRegex(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=")


def strip_assignments(args: list[str]) -> tuple[list[str], dict[str, str | None]]:
    env: dict[str, str | None] = {}
    while args and (args[0] == "-" or _ASSIGNMENT.match(args[0])):
        match = _ASSIGNMENT.match(args[0])
        if match:
            env[match.group(1)] = args[0][match.end():]
        args = args[1:]
    return args, env


def _sudo(args: list[str]) -> Unwrapped:
    opts, i = parse_options(args, "ugpCDrtUTh", frozenset(
        {"user", "group", "prompt", "close-from", "chdir", "role", "type", "other-user", "host",
         "command-timeout"}))
    if any(k in opts for k in ("-l", "-v", "-V", "-K", "-k", "-e", "--list", "--validate", "--version", "--edit")):
        return NOEXEC
    rest, env = strip_assignments(args[i:])
    chdir_to = opts.get("-D") or opts.get("--chdir")
    if any(k in opts for k in ("-s", "-i", "--shell", "--login")):
        return Unwrapped([], chdir_to, script=" ".join(rest), env=env) if rest else \
            Unwrapped([], chdir_to, env=env, reads_stdin=True)
    return Unwrapped(rest, chdir_to, env=env)


def _doas(args: list[str]) -> Unwrapped:
    opts, i = parse_options(args, "uC")
    if "-s" in opts:
        return Unwrapped([], reads_stdin=True)
    return Unwrapped(args[i:])


def _env(args: list[str]) -> Unwrapped:
    opts, i = parse_options(args, "uCS", frozenset({"unset", "chdir", "split-string", "block-signal",
                                                    "default-signal", "ignore-signal"}))
    rest, env = strip_assignments(args[i:])
    while rest and "=" in rest[0] and not rest[0].startswith("="):  # env takes `BASH_FUNC_x%%=…` too
        key, _, value = rest[0].partition("=")
        env[key] = value
        rest = rest[1:]
    split = opts.get("-S", opts.get("--split-string"))
    if split is not None:
        rest = split_words(split) + rest
    return Unwrapped(rest, opts.get("-C") or opts.get("--chdir"), env=env)


def _command(args: list[str]) -> Unwrapped:
    opts, i = parse_options(args)
    if "-v" in opts or "-V" in opts:
        return NOEXEC
    return Unwrapped(args[i:])


def _timeout(args: list[str]) -> Unwrapped:
    _, i = parse_options(args, "sk", frozenset({"signal", "kill-after"}))
    return Unwrapped(args[i + 1:])


def _ionice(args: list[str]) -> Unwrapped:
    opts, i = parse_options(args, "cnpPu", frozenset({"class", "classdata", "pid", "pgid", "uid"}))
    if any(k in opts for k in ("-p", "-P", "-u", "--pid", "--pgid", "--uid")):
        return NOEXEC
    return Unwrapped(args[i:])


def _taskset(args: list[str]) -> Unwrapped:
    opts, i = parse_options(args)
    if "-p" in opts or "--pid" in opts:
        return NOEXEC
    return Unwrapped(args[i + 1:])


def _xargs(args: list[str]) -> Unwrapped:
    opts, i = parse_options(args, "IELnPsdaR", frozenset(
        {"replace", "eof", "max-lines", "max-args", "max-procs", "max-chars", "delimiter", "arg-file",
         "process-slot-var"}))
    replace = opts.get("-I") or opts.get("--replace") or ("{}" if "-i" in opts else "")
    return Unwrapped(args[i:] or ["echo"], xargs_replace=replace)


def _parallel(args: list[str]) -> Unwrapped:
    """GNU parallel runs its command template through a shell, once per input."""
    cut = next((k for k, a in enumerate(args) if a.startswith(":::")), len(args))
    _opts, i = parse_options(args[:cut], "jSIaEXNnlLsPdC", frozenset(
        {"jobs", "sshlogin", "arg-file", "delimiter", "colsep", "max-args", "workdir", "joblog", "results",
         "tmpdir", "env", "halt", "timeout", "retries", "basefile", "tag-string", "shebang-wrap"}))
    template = args[i:cut]
    if not template:
        inputs = [a for a in args[cut:] if not a.startswith(":::")]
        return Unwrapped([], script="\n".join(inputs) if cut < len(args) else UNKNOWN)
    return Unwrapped([], script=" ".join([*(t.replace("{}", UNKNOWN) for t in template), UNKNOWN]))


def _watch(args: list[str]) -> Unwrapped:
    opts, i = parse_options(args, "nqd", frozenset({"interval", "equexit", "differences"}))
    if "-x" in opts or "--exec" in opts:
        return Unwrapped(args[i:])
    return Unwrapped([], script=" ".join(args[i:]))


def _flock(args: list[str]) -> Unwrapped:
    opts, i = parse_options(args, "wEc", frozenset({"wait", "timeout", "conflict-exit-code", "command"}))
    rest = args[i + 1:]
    if rest[:1] in (["-c"], ["--command"]):
        return Unwrapped([], script=rest[1] if len(rest) > 1 else "")
    command = opts.get("-c", opts.get("--command"))
    return Unwrapped([], script=command) if command is not None else Unwrapped(rest)


def _script_runner(short: str, long: frozenset[str], keys: tuple[str, ...], operands_run: bool = False) -> Unwrap:
    """`su -c CMD`, `script -c CMD`, `runuser -u USER -- CMD…`, `sg GROUP -c CMD`."""
    def unwrap(args: list[str]) -> Unwrapped:
        opts, i = parse_options(args, short, long)
        script = next((opts[k] for k in keys if k in opts), None)
        if script is not None:
            return Unwrapped([], script=script)
        if operands_run and ("-u" in opts or "--user" in opts) and args[i:]:
            return Unwrapped(args[i:])
        later, _ = parse_options(args[i + 1:], short, long)  # `su me -c CMD`: options after the user
        script = next((later[k] for k in keys if k in later), None)
        return Unwrapped([], script=script) if script is not None else NOEXEC
    return unwrap


def _plain(short_arg: str = "", long_arg: frozenset[str] = frozenset(), skip: int = 0) -> Unwrap:
    """A wrapper that runs its operands (after options, and `skip` more operands) as an argv."""
    def unwrap(args: list[str]) -> Unwrapped:
        _, i = parse_options(args, short_arg, long_arg)
        return Unwrapped(args[i + skip:])
    return unwrap


_GDB_COMMANDS = frozenset({"-ex", "--ex", "-iex", "--iex", "-eval-command", "--eval-command", "-init-eval-command",
                           "--init-eval-command", "-x", "--x", "-command", "--command", "-ix", "--ix", "-init-command",
                           "--init-command"})


def _gdb(args: list[str]) -> Unwrapped | None:
    """`gdb [options] --args PROG ARGS…` runs PROG ARGS. With commands of its own (`-ex …`) gdb is not
    peeled: the analyzer judges those and the program together."""
    at = next((i for i, a in enumerate(args) if a in ("--args", "-args")), None)
    if at is None or at + 1 >= len(args) or any(a.split("=", 1)[0] in _GDB_COMMANDS for a in args[:at]):
        return None
    return Unwrapped(args[at + 1:])


def _at(args: list[str]) -> Unwrapped:
    opts, _ = parse_options(args, "qfMmt", frozenset())
    if any(k in opts for k in ("-l", "-d", "-r", "-c")):
        return NOEXEC
    if "-f" in opts:
        return Unwrapped([], script=UNKNOWN)  # runs a file's contents later: unknown here
    return Unwrapped([], reads_stdin=True)


def _after_verb(verbs: frozenset[str], short_arg: str = "", long_arg: frozenset[str] = frozenset(),
                skip: int = 0) -> Unwrap:
    """`op run -- CMD`, `aws-vault exec PROFILE -- CMD`, `lerna exec -- CMD`: after `--` when there is one,
    else after the verb's options (and `skip` operands)."""
    def unwrap(args: list[str]) -> Unwrapped | None:
        _, i = parse_options(args, short_arg, long_arg)
        if i >= len(args) or args[i] not in verbs:
            return None
        rest = args[i + 1:]
        if "--" in rest:
            return Unwrapped(rest[rest.index("--") + 1:])
        _, j = parse_options(rest, short_arg, long_arg)
        return Unwrapped(rest[j + skip:])
    return unwrap


def _coproc(args: list[str]) -> Unwrapped:
    """`coproc CMD…`, `coproc NAME { CMD; }`: the body runs (the name only labels it)."""
    if args[:1] in (["{"], ["("]):
        return Unwrapped(args[1:])
    if args[1:2] in (["{"], ["("]):
        return Unwrapped(args[2:])
    return Unwrapped(args)


_SU = _script_runner("cgGsw", frozenset({"command", "group", "supp-group", "shell", "session-command",
                                          "whitelist-environment"}), ("-c", "--command", "--session-command"))


def _su(args: list[str]) -> Unwrapped | None:
    """`su - root -c CMD`: a lone `-` is `--login`."""
    return _SU([a for a in args if a != "-"])


def _start_stop_daemon(args: list[str]) -> Unwrapped:
    """`start-stop-daemon --start --exec PROG -- ARGS…` runs PROG with ARGS."""
    opts, _ = parse_options(args, "xanpucgNrdPkISoOqbvmTHVR", frozenset(
        {"exec", "startas", "name", "pidfile", "user", "chuid", "group", "nicelevel", "chroot", "chdir",
         "signal", "retry", "make-pidfile", "remove-pidfile", "procsched", "iosched", "umask", "output"}))
    if not any(k in opts for k in ("-S", "--start")):
        return NOEXEC
    program = opts.get("-a") or opts.get("--startas") or opts.get("-x") or opts.get("--exec")
    rest = args[args.index("--") + 1:] if "--" in args else []
    return Unwrapped([program, *rest]) if program else NOEXEC


_FD_PLACEHOLDERS = LazyRegex(r"\{(?:/|//|\.|/\.)?\}")


def _fd(args: list[str]) -> Unwrapped | None:
    """`fd PATTERN -x CMD…` / `-X CMD…` runs CMD on every file found (`{}` and its variants stand for one)."""
    at = next((i for i, a in enumerate(args) if a in ("-x", "--exec", "-X", "--exec-batch")), None)
    if at is None:
        return None
    command = args[at + 1:]
    if ";" in command:
        command = command[:command.index(";")]
    replaced = [_FD_PLACEHOLDERS.sub(READ, w) for w in command]
    return Unwrapped(replaced if replaced != command else [*command, READ]) if command else NOEXEC


def _uv(args: list[str]) -> Unwrapped | None:
    """`uv run CMD`, and `uv tool run PKG …` (what `uvx` runs)."""
    if args[:2] == ["tool", "run"]:
        return PACKAGE_RUNNERS["uvx"](args[2:])
    return PACKAGE_RUNNERS["uv"](args)


def _bwrap(args: list[str]) -> Unwrapped:
    """`bwrap [--bind SRC DST | --dev DIR | …] CMD…`: options take zero, one or two values."""
    two = {"--bind", "--ro-bind", "--dev-bind", "--bind-try", "--ro-bind-try", "--dev-bind-try", "--symlink",
           "--setenv", "--file", "--bind-data", "--ro-bind-data"}
    i = 0
    while i < len(args) and args[i].startswith("--"):
        if args[i] == "--":
            i += 1
            break
        i += 3 if args[i] in two else 1 if args[i] in _BWRAP_FLAGS else 2
    return Unwrapped(args[i:])


_BWRAP_FLAGS = frozenset({"--unshare-all", "--share-net", "--unshare-user", "--unshare-ipc", "--unshare-pid",
                          "--unshare-net", "--unshare-uts", "--unshare-cgroup", "--die-with-parent", "--new-session",
                          "--as-pid-1", "--clearenv", "--disable-userns", "--unshare-user-try",
                          "--unshare-cgroup-try"})


_HUB_RUNS = "git"  # hub is git with GitHub commands added

WRAPPERS: dict[str, Unwrap] = {
    "sudo": _sudo,
    "doas": _doas,
    "pkexec": _plain("", frozenset({"user"})),
    "runuser": _script_runner("cgGsuw", frozenset({"command", "group", "supp-group", "shell", "session-command",
                                                   "user", "whitelist-environment"}),
                              ("-c", "--command", "--session-command"), operands_run=True),
    "su": _su,
    "sg": lambda args: Unwrapped([], script=args[2]) if args[1:2] == ["-c"] and len(args) > 2 else Unwrapped(
        [], script=" ".join(args[1:])) if len(args) > 1 else NOEXEC,
    "script": _script_runner("cEIOBTm", frozenset({"command", "echo", "log-in", "log-out", "log-io",
                                                   "log-timing", "logging-format"}), ("-c", "--command")),
    "env": _env,
    "command": _command,
    "builtin": _plain(),
    "exec": _plain("a"),
    "nohup": _plain(),
    "nice": _plain("n", frozenset({"adjustment"})),
    "time": _plain("fo", frozenset({"format", "output"})),
    "coproc": _coproc,
    "run0": _plain("ugD", frozenset({"user", "group", "chdir", "unit", "property", "description", "slice", "nice",
                                      "setenv", "background", "machine"})),
    "prlimit": lambda args: NOEXEC if any(a.startswith(("-p", "--pid")) for a in args) else _plain()(args),
    "cgexec": _plain("g"),
    "ip": lambda args: Unwrapped(args[3:]) if args[:2] == ["netns", "exec"] else None,
    "start-stop-daemon": _start_stop_daemon,
    "sem": lambda args: _parallel(args),
    "limactl": _after_verb(frozenset({"shell"}), skip=1),
    "machinectl": _after_verb(frozenset({"shell"}), skip=1),
    "fd": _fd,
    "fdfind": _fd,
    "microk8s": lambda args: Unwrapped(args) if args[:1] in (["kubectl"], ["helm"], ["helm3"], ["ctr"]) else None,
    "k3s": lambda args: Unwrapped(args) if args[:1] in (["kubectl"], ["crictl"], ["ctr"]) else None,
    "kubecolor": lambda args: Unwrapped(["kubectl", *args]),
    "timeout": _timeout,
    "gtimeout": _timeout,
    "stdbuf": _plain("ioe", frozenset({"input", "output", "error"})),
    "ionice": _ionice,
    "taskset": _taskset,
    "chrt": _plain("", skip=1),
    "numactl": _plain("CNmpi", frozenset({"cpunodebind", "membind", "physcpubind", "preferred", "interleave"})),
    "setsid": _plain(),
    "unbuffer": _plain(),
    "chronic": _plain(),
    "caffeinate": _plain("tw"),
    "xvfb-run": _plain("nslfe", frozenset({"server-num", "server-args", "auth-file", "error-file"})),
    "dbus-run-session": _plain(),
    "firejail": _plain(),
    "unshare": _plain(),
    # (namespace options take a file only when it is attached: `-m` alone, `--mount=FILE`)
    "nsenter": _plain("tSGw", frozenset({"target", "setuid", "setgid", "wd"})),
    "capsh": lambda args: Unwrapped(["bash", *args[args.index("--") + 1:]]) if "--" in args else NOEXEC,
    "wsl": lambda args: Unwrapped(args[args.index("--") + 1:] if "--" in args else args[args.index("-e") + 1:]
                                  if "-e" in args else args[parse_options(args, "dux", frozenset(
                                      {"distribution", "user", "cd", "exec"}))[1]:]),
    "chroot": _plain("", frozenset({"userspec", "groups"}), skip=1),
    "systemd-run": _plain("pEu", frozenset({"property", "setenv", "unit", "uid", "gid", "working-directory"})),
    "busybox": lambda args: Unwrapped(args),
    "coreutils": lambda args: Unwrapped([args[0].split("=", 1)[1], *args[1:]]) if args[:1] and args[0].startswith(
        "--coreutils-prog=") else Unwrapped(args[1:]) if args[:1] == ["--coreutils-prog"] else NOEXEC,
    "hub": lambda args: Unwrapped([_HUB_RUNS, *args]),
    "toybox": lambda args: Unwrapped(args),
    "strace": _plain("aeoOpPsSuXbIE", frozenset({"output", "trace", "signal", "string-limit", "attach", "user",
                                                  "columns", "const-print-style", "detach-on", "trace-path",
                                                  "interruptible", "env", "summary-sort", "status", "abbrev",
                                                  "verbose", "raw", "read", "write", "fault", "inject", "kvm"})),
    "ltrace": _plain("aADeFlnopsuwx", frozenset({"align", "config", "library", "indent", "output"})),
    "valgrind": _plain(),
    "gdb": _gdb,
    "xargs": _xargs,
    "parallel": _parallel,
    "watch": _watch,
    "flock": _flock,
    "at": _at,
    "batch": _at,
    "sshpass": _plain("pfdP"),
    "direnv": lambda args: Unwrapped(args[2:]) if args[:1] == ["exec"] else None,
    "lxc": _after_verb(frozenset({"exec"}), skip=1),
    "incus": _after_verb(frozenset({"exec"}), skip=1),
    "multipass": _after_verb(frozenset({"exec"}), skip=1),
    "shx": _plain(),
    "cross-env": lambda args: Unwrapped(strip_assignments(args)[0]),
    "cross-env-shell": lambda args: Unwrapped([], script=" ".join(strip_assignments(args)[0])),
    "env-cmd": _plain("fre", frozenset({"file", "environments"})),
    "gosu": _plain(skip=1),
    "su-exec": _plain(skip=1),
    "setuidgid": _plain(skip=1),
    "chpst": _plain("ugUen/"),
    "fakeroot": _plain("lisb", frozenset({"lib", "faked"})),
    "eatmydata": _plain(),
    "nocache": _plain(),
    "tini": _plain("ep"),
    "dumb-init": _plain("r", frozenset({"rewrite"})),
    "setpriv": _plain("", frozenset({"reuid", "regid", "ruid", "euid", "rgid", "egid", "groups", "inh-caps",
                                      "ambient-caps", "bounding-set", "securebits", "selinux-label",
                                      "apparmor-profile", "pdeathsig", "landlock-access", "landlock-rule"})),
    "systemd-inhibit": _plain("", frozenset({"what", "who", "why", "mode"})),
    "faketime": _plain("f", skip=1),
    "proxychains": _plain("fq"),
    "proxychains4": _plain("fq"),
    "torsocks": _plain("uapP"),
    "perf": subcommand_runner(frozenset({"stat", "record", "trace"}), "eoptrCGFcm"),
    "dotenv": _plain("evcp"),
    "dotenvx": _after_verb(frozenset({"run"}), "f", frozenset({"env-file", "env"})),
    "op": _after_verb(frozenset({"run"}), "", frozenset({"env-file"})),
    "doppler": _after_verb(frozenset({"run"}), "pc", frozenset({"project", "config"})),
    "infisical": _after_verb(frozenset({"run"}), "", frozenset({"env", "path"})),
    "aws-vault": _after_verb(frozenset({"exec"}), skip=1),
    "mise": _after_verb(frozenset({"exec", "x"})),
    "rtx": _after_verb(frozenset({"exec", "x"})),
    "lerna": _after_verb(frozenset({"exec"})),
    "nx": _after_verb(frozenset({"exec"})),
    "entr": lambda args: Unwrapped([], script=" ".join(args[parse_options(args)[1]:])) if "-s" in args else
    _plain()(args),
    "catchsegv": _plain(),
    "dbus-launch": _plain("", frozenset({"config-file", "autolaunch"})),
    "ssh-agent": _plain("aEPt"),
    "pueue": _after_verb(frozenset({"add"}), "wgd", frozenset({"working-directory", "group", "delay", "label",
                                                                 "after", "priority"})),
    "tsp": _plain("LDNEgw"),
    "nq": _plain(),
    "xcrun": _plain("", frozenset({"sdk", "toolchain"})),
    "arch": lambda args: Unwrapped(args[parse_options(args, "")[1]:]) if args else NOEXEC,
    "bwrap": _bwrap,
    "proot": _plain("rbwqkR"),
    "flatpak-spawn": _plain(),
    "distrobox-host-exec": _plain(),
    "host-spawn": _plain(),
    "toolbox": _after_verb(frozenset({"run"}), "cdr", frozenset({"container", "distro", "release"})),
    "distrobox": _after_verb(frozenset({"enter"}), "n", frozenset({"name"}), skip=1),
    "zellij": _after_verb(frozenset({"run"})),
    "tox": _after_verb(frozenset({"exec"}), "e", frozenset({"env"})),
    "xterm": lambda args: Unwrapped(args[args.index("-e") + 1:]) if "-e" in args else NOEXEC,
    "gnome-terminal": lambda args: Unwrapped(args[args.index("--") + 1:]) if "--" in args else NOEXEC,
    "x-terminal-emulator": lambda args: Unwrapped(args[args.index("-e") + 1:]) if "-e" in args else NOEXEC,
    "konsole": lambda args: Unwrapped(args[args.index("-e") + 1:]) if "-e" in args else NOEXEC,
    **PACKAGE_RUNNERS,
    **REMOTE_RUNNERS,
    **SCRIPT_OPTIONS,
    "uv": _uv,
}


def unwrap(name: str, args: list[str]) -> Unwrapped | None:
    """What wrapper `name` runs with `args`; None when `name` is not a wrapper in this use."""
    handler = WRAPPERS.get(name)
    return handler(args) if handler is not None else None
