"""Commands that run another command: what each one runs, given its arguments.

A wrapper either runs an argv (`sudo -u me git push` runs `git push`), a shell string
(`su -c 'git push'`, `tmux new -d 'git push'`, `ssh host 'git push'`), or what it reads on
stdin (`at now`). `unwrap()` returns None for a command that is not a wrapper (or not in
this use: `poetry install` runs nothing, `poetry run x` runs `x`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import NamedTuple

from kilo_loop.safety.lazy_regex import LazyRegex
from kilo_loop.safety.shell.model import UNKNOWN, command_name, parse_options, split_words

_ASSIGNMENT = LazyRegex(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=")


class Unwrapped(NamedTuple):
    argv: list[str]
    chdir: str | None = None
    script: str | None = None
    env: Mapping[str, str | None] = MappingProxyType({})
    xargs_replace: str | None = None
    noexec: bool = False
    reads_stdin: bool = False
    """The wrapper runs the shell code it reads on stdin (`at now`, `batch`)."""
    remote: str | None = None
    """The code runs on another machine (`ssh host …`)."""
    local_scripts: tuple[str, ...] = ()
    """Extra shell strings the wrapper itself runs here (`ssh -o ProxyCommand=…`)."""


NOEXEC = Unwrapped([], noexec=True)
Unwrap = Callable[[list[str]], "Unwrapped | None"]


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


def _subcommand_runner(verbs: frozenset[str], short_arg: str = "", long_arg: frozenset[str] = frozenset()) -> Unwrap:
    """`poetry run X`, `uv run X`, `pnpm exec X`: runs X only after one of `verbs`."""
    def unwrap(args: list[str]) -> Unwrapped | None:
        _opts, i = parse_options(args, short_arg, long_arg)
        if i >= len(args) or args[i] not in verbs:
            return None
        _, j = parse_options(args[i + 1:], short_arg, long_arg)
        return Unwrapped(args[i + 1 + j:])
    return unwrap


def _npx(args: list[str]) -> Unwrapped:
    opts, i = parse_options(args, "pc", frozenset({"package", "call", "cache", "userconfig", "registry"}))
    call = opts.get("-c", opts.get("--call"))
    if call is not None:
        return Unwrapped([], script=call)
    rest = list(args[i:])
    if rest:
        rest[0] = _package_command(rest[0])
    return Unwrapped(rest)


_BIN_OF = {"@changesets/cli": "changeset", "@vscode/vsce": "vsce", "@lerna/cli": "lerna"}


def _package_command(spec: str) -> str:
    """`rimraf@5` → `rimraf`, `@scope/tool@1` → `tool`: the command a package spec runs."""
    scoped = spec.lower().rsplit("@", 1)[0] if spec.count("@") > 1 else spec.lower()
    if scoped in _BIN_OF:
        return _BIN_OF[scoped]
    name = command_name(spec)
    return name.split("@", 1)[0] if not name.startswith("@") else name


def _corepack(args: list[str]) -> Unwrapped | None:
    if not args or command_name(args[0]).split("@")[0] not in ("npm", "pnpm", "yarn", "npx", "pnpx"):
        return None
    return Unwrapped([command_name(args[0]).split("@")[0], *args[1:]])


def _at(args: list[str]) -> Unwrapped:
    opts, _ = parse_options(args, "qfMmt", frozenset())
    if any(k in opts for k in ("-l", "-d", "-r", "-c")):
        return NOEXEC
    if "-f" in opts:
        return Unwrapped([], script=UNKNOWN)  # runs a file's contents later: unknown here
    return Unwrapped([], reads_stdin=True)


def _screen(args: list[str]) -> Unwrapped:
    opts, i = parse_options(args, "SXpctTeLhl", frozenset({"logfile"}))
    if "-X" in opts:
        command = [opts["-X"], *args[i:]]
        if command[0] in ("stuff", "exec", "screen"):
            return Unwrapped([], script=" ".join(command[1:]).replace("\\n", "\n").replace("^M", "\n"))
        return NOEXEC
    if any(k in opts for k in ("-r", "-R", "-x", "-ls", "-list", "-wipe")) and not args[i:]:
        return NOEXEC
    return Unwrapped(args[i:])


_TMUX_RUNS = frozenset({"new-session", "new", "new-window", "neww", "split-window", "splitw", "respawn-pane",
                        "respawnp", "respawn-window", "respawnw", "run-shell", "run", "send-keys", "send",
                        "display-popup", "popup", "if-shell", "if", "pipe-pane", "pipep"})


def _tmux(args: list[str]) -> Unwrapped:
    _, i = parse_options(args, "LSfcT")
    if "-c" in args[:i]:
        opts, _ = parse_options(args, "LSfcT")
        return Unwrapped([], script=opts.get("-c", ""))
    rest = args[i:]
    if not rest or rest[0] not in _TMUX_RUNS:
        return NOEXEC
    verb = rest[0]
    opts, j = parse_options(rest[1:], "tsnxycFeEwhlp", frozenset())
    words = rest[1 + j:]
    if verb in ("send-keys", "send"):
        keys = [{"Enter": "\n", "C-m": "\n", "KPEnter": "\n"}.get(w, w) for w in words]
        return Unwrapped([], script=" ".join(keys).replace(" \n", "\n"))
    return Unwrapped([], script=" ".join(words)) if words else NOEXEC


_SSH_VALUE = "BbcDEeFIiJLlmOoPpQRSWw"


def _ssh(args: list[str]) -> Unwrapped:
    _opts, i = parse_options(args, _SSH_VALUE)
    local = tuple(v.split("=", 1)[1] for k, v in _ssh_options(args) if k in ("proxycommand", "localcommand"))
    remote_command = [v.split("=", 1)[1] for k, v in _ssh_options(args) if k == "remotecommand"]
    if i >= len(args):
        return Unwrapped([], noexec=True, local_scripts=local)
    host, command = args[i], args[i + 1:]
    command = command[1:] if command[:1] == ["--"] else command
    command = command or remote_command
    if not command:  # the remote login shell reads its commands from stdin
        return Unwrapped([], reads_stdin=True, remote=f"ssh {host}", local_scripts=local)
    return Unwrapped([], script=" ".join(command), remote=f"ssh {host}", local_scripts=local)


def _ssh_options(args: list[str]) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for index, arg in enumerate(args):
        value = arg[2:] if arg.startswith("-o") and len(arg) > 2 else (
            args[index + 1] if arg == "-o" and index + 1 < len(args) else None)
        if value and "=" in value:
            found.append((value.split("=", 1)[0].strip().lower(), value))
        elif value and " " in value:
            key, _, rest = value.partition(" ")
            found.append((key.lower(), f"{key}={rest}"))
    return found


_TCL_RUNS = LazyRegex(r"\b(?:spawn|exec)\s+([^;\n\]\}]+)")
_TCL_SEND = LazyRegex(r"\bsend\s+(?:--\s+)?\"((?:[^\"\\]|\\.)*)\"")


def _expect(args: list[str]) -> Unwrapped:
    """expect runs what its script `spawn`s or `exec`s."""
    opts, _ = parse_options(args, "cf")
    if "-f" in opts:
        return Unwrapped([], script=UNKNOWN)
    code = "\n".join(args[i + 1] for i, a in enumerate(args[:-1]) if a == "-c")
    runs = [m.group(1).strip() for m in _TCL_RUNS.finditer(code)]
    # what `send` types into a spawned program runs there when that program is a shell
    runs += [m.group(1).replace("\\r", "\n").replace("\\n", "\n") for m in _TCL_SEND.finditer(code)]
    return Unwrapped([], script="\n".join(runs)) if runs else NOEXEC


_APPLESCRIPT_SHELL = LazyRegex(r"do\s+shell\s+script\s+(\"(?:[^\"\\\\]|\\\\.)*\"|\S+)")


def _osascript(args: list[str]) -> Unwrapped:
    """AppleScript's `do shell script "…"` runs a shell command (a non-literal one is unknown)."""
    code = "\n".join(args[i + 1] for i, a in enumerate(args[:-1]) if a == "-e")
    runs = [m.group(1) for m in _APPLESCRIPT_SHELL.finditer(code)]
    scripts = [r[1:-1].replace('\\"', '"') if r.startswith('"') else UNKNOWN for r in runs]
    return Unwrapped([], script="\n".join(scripts)) if scripts else NOEXEC


_KUBECTL_GLOBAL = frozenset({"namespace", "context", "kubeconfig", "cluster", "user", "server", "as", "token"})


def _kubectl_exec(args: list[str]) -> Unwrapped | None:
    """`kubectl [-n NS] exec POD -- CMD…` (also `oc`, and `debug … -- CMD`), and `oc rsh POD CMD…`."""
    _, i = parse_options(args, "ns", _KUBECTL_GLOBAL)
    verb = args[i] if i < len(args) else ""
    if verb == "rsh" and len(args) > i + 2:
        return Unwrapped([], script=" ".join(args[i + 2:]), remote="oc rsh")
    if verb not in ("exec", "debug") or "--" not in args:
        return None
    command = args[args.index("--") + 1:]
    return Unwrapped([], script=" ".join(command), remote="kubectl exec") if command else NOEXEC


def _container_exec(args: list[str]) -> Unwrapped | None:
    """`docker exec [opts] CONTAINER CMD…` (also `docker container exec`, podman, nerdctl)."""
    rest = args[1:] if args[:1] == ["container"] else args
    if rest[:1] != ["exec"]:
        return None
    _, i = parse_options(rest[1:], "euw", frozenset({"env", "env-file", "user", "workdir", "detach-keys"}))
    command = rest[1 + i + 1:]
    return Unwrapped([], script=" ".join(command), remote="container exec") if command else NOEXEC


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


def _remote_runner(host_opts: str, host_long: frozenset[str], label: str) -> Unwrap:
    """`mosh [opts] HOST -- CMD…`: the command after the host runs on that host."""
    def unwrap(args: list[str]) -> Unwrapped:
        _, i = parse_options(args, host_opts, host_long)
        command = args[i + 1:]
        command = command[1:] if command[:1] == ["--"] else command
        if i >= len(args) or not command:
            return NOEXEC
        return Unwrapped([], script=" ".join(command), remote=f"{label} {args[i]}")
    return unwrap


def _option_script(keys: tuple[str, ...], short_arg: str = "", long_arg: frozenset[str] = frozenset(),
                   remote: str | None = None, verbs: tuple[str, ...] = ()) -> Unwrap:
    """A command that runs the shell string given to one of `keys` (`nix-shell --run CMD`,
    `vagrant ssh -c CMD`, `nodemon --exec CMD`); only after `verbs` when they are given."""
    def unwrap(args: list[str]) -> Unwrapped | None:
        if verbs and args[:len(verbs)] != list(verbs):
            return None
        scripts: list[str] = []
        for index, arg in enumerate(args):
            name, eq, value = arg.partition("=")
            if name in keys:
                scripts.append(value if eq and name.startswith("--") else (
                    args[index + 1] if index + 1 < len(args) else ""))
        if not scripts:
            return None if verbs else NOEXEC
        return Unwrapped([], script="\n".join(scripts), remote=remote)
    return unwrap


def _every_operand_a_script(value_short: str, value_long: frozenset[str], script_keys: frozenset[str]) -> Unwrap:
    """`hyperfine 'CMD' 'CMD'…`, `concurrently 'CMD'…`: each operand (and some option values) is a shell string."""
    def unwrap(args: list[str]) -> Unwrapped:
        scripts: list[str] = []
        i = 0
        while i < len(args):
            arg = args[i]
            name, eq, value = arg.partition("=")
            takes = (name.startswith("--") and name[2:] in value_long) or (
                len(arg) == 2 and arg.startswith("-") and arg[1] in value_short)
            if takes:
                if not eq:
                    value = args[i + 1] if i + 1 < len(args) else ""
                    i += 1
                if name in script_keys:
                    scripts.append(value)
            elif not arg.startswith("-") or arg == "-":
                scripts.append(arg)
            i += 1
        return Unwrapped([], script="\n".join(scripts)) if scripts else NOEXEC
    return unwrap


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


def _socat(args: list[str]) -> Unwrapped:
    """socat's `EXEC:CMD` and `SYSTEM:CMD` addresses run a command."""
    scripts = []
    for arg in args:
        kind, colon, rest = arg.partition(":")
        if colon and kind.upper() in ("EXEC", "SYSTEM"):
            scripts.append(rest.split(",", 1)[0] if kind.upper() == "EXEC" else rest)
    return Unwrapped([], script="\n".join(scripts)) if scripts else NOEXEC


def _netcat(args: list[str]) -> Unwrapped:
    """`nc -e PROG`, `nc -c CMD`, `ncat --sh-exec CMD`: a program fed by the network."""
    for index, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if name in ("-c", "--sh-exec", "-e", "--exec", "--lua-exec"):
            value = value if eq else (args[index + 1] if index + 1 < len(args) else "")
            # `-e PROG` runs PROG with the connection as its stdin: code from the network
            return Unwrapped([], script=value if name in ("-c", "--sh-exec") else value + " < /dev/fd/9")
    return NOEXEC


def _remote_runner_after(verbs: tuple[str, ...], keys: tuple[str, ...], label: str) -> Unwrap:
    """`heroku run CMD`, `fly ssh console -C CMD`, `gcloud compute ssh VM -- CMD`: a command on another machine."""
    def unwrap(args: list[str]) -> Unwrapped | None:
        if args[:len(verbs)] != list(verbs):
            return None
        rest = args[len(verbs):]
        if "--" in rest:
            command = rest[rest.index("--") + 1:]
            return Unwrapped([], script=" ".join(command), remote=label) if command else NOEXEC
        for index, arg in enumerate(rest):
            name, eq, value = arg.partition("=")
            if name in keys:
                return Unwrapped([], script=value if eq else (rest[index + 1] if index + 1 < len(rest) else ""),
                                 remote=label)
        if not keys:
            operands = [a for a in rest if not a.startswith("-")]
            return Unwrapped([], script=operands[0], remote=label) if operands else NOEXEC
        return NOEXEC
    return unwrap


def _ansible(args: list[str]) -> Unwrapped:
    """`ansible HOSTS -m shell -a 'CMD'`: the command, shell and raw modules run their argument."""
    values: dict[str, str] = {}
    hosts = "hosts"
    for index, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if name in ("-m", "--module-name", "-a", "--args"):
            values[name.lstrip("-")[:1]] = value if eq else (args[index + 1] if index + 1 < len(args) else "")
        elif index == 0 and not arg.startswith("-"):
            hosts = arg
    module = values.get("m", "command")
    command = values.get("a")
    if command is not None and module.rsplit(".", 1)[-1] == "file" and "state=absent" in command:
        path = next((w.split("=", 1)[1] for w in command.split() if w.startswith(("path=", "dest=", "name="))), "")
        return Unwrapped([], script=f"rm -rf {path or UNKNOWN}", remote=f"ansible {hosts}")
    if command is None or module.rsplit(".", 1)[-1] not in ("command", "shell", "raw", "script"):
        return NOEXEC
    return Unwrapped([], script=command, remote=f"ansible {hosts}")


def _nix(args: list[str]) -> Unwrapped | None:
    """`nix develop -c CMD…` / `nix shell PKG… --command CMD…` run CMD."""
    if args[:1] not in (["develop"], ["shell"]):
        return None
    for flag in ("-c", "--command"):
        if flag in args:
            return Unwrapped(args[args.index(flag) + 1:])
    return None


def _yarn(args: list[str]) -> Unwrapped | None:
    """`yarn exec CMD`, `yarn dlx PKG`, and `yarn workspaces foreach [opts] CMD…` (runs `yarn CMD…`)."""
    if args[:2] == ["workspaces", "foreach"]:
        _, i = parse_options(args[2:], "jW", frozenset({"include", "exclude", "from", "jobs", "since"}))
        rest = args[2 + i:]
        return Unwrapped(["yarn", *rest]) if rest else NOEXEC
    if args and args[0] in _PACKAGE_BINS:  # `yarn rimraf ~` runs the package's binary
        return Unwrapped(args)
    return _subcommand_runner(frozenset({"exec", "dlx"}))(args)


_PACKAGE_BINS = frozenset({"rimraf", "del-cli", "shx", "lerna", "changeset", "semantic-release", "release-it", "np",
                           "trash"})


def _npm(args: list[str]) -> Unwrapped | None:
    """`npm exec -c CMD` / `--call CMD` runs a shell string; `npm exec X` runs X."""
    _, i = parse_options(args, "w", frozenset({"workspace"}))
    if i < len(args) and args[i] in ("exec", "x"):
        opts, _ = parse_options(args[i + 1:], "cw", frozenset({"package", "call", "workspace"}))
        call = opts.get("-c", opts.get("--call"))
        if call is not None:
            return Unwrapped([], script=call)
    return _subcommand_runner(frozenset({"exec", "x"}), "cw", frozenset({"package", "call", "workspace"}))(args)


WRAPPERS: dict[str, Unwrap] = {
    "sudo": _sudo,
    "doas": _doas,
    "pkexec": _plain("", frozenset({"user"})),
    "runuser": _script_runner("cgGsuw", frozenset({"command", "group", "supp-group", "shell", "session-command",
                                                   "user", "whitelist-environment"}),
                              ("-c", "--command", "--session-command"), operands_run=True),
    "su": _script_runner("cgGsw", frozenset({"command", "group", "supp-group", "shell", "session-command",
                                             "whitelist-environment"}), ("-c", "--command", "--session-command")),
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
    "coproc": _plain(),
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
    "nsenter": _plain("tSGnumipUCr", frozenset({"target"})),
    "chroot": _plain("", frozenset({"userspec", "groups"}), skip=1),
    "systemd-run": _plain("pEu", frozenset({"property", "setenv", "unit", "uid", "gid", "working-directory"})),
    "busybox": lambda args: Unwrapped(args),
    "toybox": lambda args: Unwrapped(args),
    "strace": _plain("aeoOpPsSuXbIE"),
    "ltrace": _plain("aeoOpPsSuXbIE"),
    "valgrind": _plain(),
    "xargs": _xargs,
    "parallel": _parallel,
    "watch": _watch,
    "flock": _flock,
    "at": _at,
    "batch": _at,
    "screen": _screen,
    "tmux": _tmux,
    "ssh": _ssh,
    "sshpass": _plain("pfdP"),
    "expect": _expect,
    "osascript": _osascript,
    "npx": _npx,
    "pnpx": _npx,
    "bunx": _npx,
    "uvx": _npx,
    "pipx": _subcommand_runner(frozenset({"run"})),
    "corepack": _corepack,
    "npm": _npm,
    "pnpm": _subcommand_runner(frozenset({"exec", "dlx"}), "C", frozenset({"dir", "filter"})),
    "yarn": _yarn,
    "bun": _subcommand_runner(frozenset({"x"})),
    "poetry": _subcommand_runner(frozenset({"run"}), "C", frozenset({"directory", "project"})),
    "pipenv": _subcommand_runner(frozenset({"run"})),
    "uv": _subcommand_runner(frozenset({"run"}), "p", frozenset({"with", "python", "directory", "project",
                                                                 "package", "extra", "group"})),
    "pdm": _subcommand_runner(frozenset({"run"})),
    "hatch": _subcommand_runner(frozenset({"run"})),
    "rye": _subcommand_runner(frozenset({"run"})),
    "conda": _subcommand_runner(frozenset({"run"}), "np", frozenset({"name", "prefix"})),
    "mamba": _subcommand_runner(frozenset({"run"}), "np", frozenset({"name", "prefix"})),
    "micromamba": _subcommand_runner(frozenset({"run"}), "np", frozenset({"name", "prefix"})),
    "direnv": lambda args: Unwrapped(args[2:]) if args[:1] == ["exec"] else None,
    "kubectl": _kubectl_exec,
    "oc": _kubectl_exec,
    "k": _kubectl_exec,
    "docker": _container_exec,
    "podman": _container_exec,
    "nerdctl": _container_exec,
    "lxc": _after_verb(frozenset({"exec"}), skip=1),
    "incus": _after_verb(frozenset({"exec"}), skip=1),
    "multipass": _after_verb(frozenset({"exec"}), skip=1),
    "bundle": _subcommand_runner(frozenset({"exec"})),
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
    "perf": _subcommand_runner(frozenset({"stat", "record", "trace"}), "eoptrCGFcm"),
    "dotenv": _plain("evcp"),
    "dotenvx": _after_verb(frozenset({"run"}), "f", frozenset({"env-file", "env"})),
    "op": _after_verb(frozenset({"run"}), "", frozenset({"env-file"})),
    "doppler": _after_verb(frozenset({"run"}), "pc", frozenset({"project", "config"})),
    "infisical": _after_verb(frozenset({"run"}), "", frozenset({"env", "path"})),
    "aws-vault": _after_verb(frozenset({"exec"}), skip=1),
    "mise": _after_verb(frozenset({"exec", "x"})),
    "rtx": _after_verb(frozenset({"exec", "x"})),
    "asdf": _subcommand_runner(frozenset({"exec"})),
    "lerna": _after_verb(frozenset({"exec"})),
    "nx": _after_verb(frozenset({"exec"})),
    "nix-shell": _option_script(("--run", "--command")),
    "nix": _nix,
    "nodemon": _option_script(("--exec", "-x")),
    "entr": lambda args: Unwrapped([], script=" ".join(args[parse_options(args)[1]:])) if "-s" in args else
    _plain()(args),
    "gcloud": lambda args: _remote_runner_after(("compute", "ssh"), ("--command",), "gcloud compute ssh")(
        [*args[:2], *args[3:]] if args[:2] == ["compute", "ssh"] else args),
    "heroku": _remote_runner_after(("run",), (), "heroku run"),
    "az": lambda args: _option_script(("--scripts",), remote="az vm run-command")(args) if args[:2] == [
        "vm", "run-command"] else None,
    "fly": _remote_runner_after(("ssh", "console"), ("-C", "--command"), "fly ssh"),
    "flyctl": _remote_runner_after(("ssh", "console"), ("-C", "--command"), "fly ssh"),
    "pdsh": lambda args: Unwrapped([], script=" ".join(args[parse_options(args, "wxlRfuNtS")[1]:]),
                                   remote="pdsh") if args else NOEXEC,
    "clush": lambda args: Unwrapped([], script=" ".join(args[parse_options(args, "wxgXlRfut")[1]:]),
                                    remote="clush") if args else NOEXEC,
    "salt": lambda args: Unwrapped([], script=" ".join(args[2:]), remote="salt") if len(args) > 2 and args[1] in (
        "cmd.run", "cmd.shell", "cmd.script") else None,
    "socat": _socat,
    "nc": _netcat,
    "ncat": _netcat,
    "netcat": _netcat,
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
    "watchexec": lambda args: Unwrapped(args[args.index("--") + 1:]) if "--" in args else _every_operand_a_script(
        "wepdi", frozenset({"watch", "exts", "filter", "ignore", "debounce", "shell", "signal"}), frozenset())(args),
    "hyperfine": _every_operand_a_script(
        "wrmMpcsnuSPLN", frozenset({"warmup", "runs", "min-runs", "max-runs", "prepare", "cleanup", "setup",
                                    "conclude", "command-name", "time-unit", "shell", "export-json",
                                    "export-csv", "export-markdown", "style", "output"}),
        frozenset({"-p", "-c", "-s", "--prepare", "--cleanup", "--setup", "--conclude"})),
    "concurrently": _every_operand_a_script("npcsk", frozenset({"names", "prefix", "prefix-colors", "kill-signal",
                                                               "max-processes", "success", "restart-tries"}),
                                            frozenset()),
    "mosh": _remote_runner("p", frozenset({"ssh", "port", "predict", "server", "family", "bind-server"}), "mosh"),
    "autossh": _remote_runner("M" + _SSH_VALUE, frozenset(), "ssh"),
    "vagrant": _option_script(("-c", "--command"), remote="vagrant ssh", verbs=("ssh",)),
    "ansible": _ansible,
}


def unwrap(name: str, args: list[str]) -> Unwrapped | None:
    """What wrapper `name` runs with `args`; None when `name` is not a wrapper in this use."""
    handler = WRAPPERS.get(name)
    return handler(args) if handler is not None else None
