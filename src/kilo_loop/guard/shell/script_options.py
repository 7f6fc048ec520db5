"""Programs that run shell code given as an option or an operand, not as an argv.

`tmux new 'CMD'`, `screen -X stuff`, `expect -c 'spawn …'`, `osascript -e 'do shell script …'`,
`nix-shell --run CMD`, `hyperfine 'CMD'…`, `socat EXEC:CMD`, `nc -e PROG`.
"""

from __future__ import annotations

from kilo_loop.guard.lazy_regex import LazyRegex
from kilo_loop.guard.shell.model import UNKNOWN, parse_options
from kilo_loop.guard.shell.unwrapped import NOEXEC, Unwrap, Unwrapped


def option_script(keys: tuple[str, ...], short_arg: str = "", long_arg: frozenset[str] = frozenset(),
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


SCRIPT_OPTIONS: dict[str, Unwrap] = {
    "screen": _screen,
    "tmux": _tmux,
    "expect": _expect,
    "osascript": _osascript,
    "nix-shell": option_script(("--run", "--command")),
    "nodemon": option_script(("--exec", "-x")),
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
    "socat": _socat,
    "nc": _netcat,
    "ncat": _netcat,
    "netcat": _netcat,
}
