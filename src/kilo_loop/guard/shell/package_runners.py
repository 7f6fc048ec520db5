"""Package and environment runners: `npx X`, `npm exec`, `yarn dlx`, `corepack`, `poetry run X`, `nix develop -c`,
`deno run npm:X`; and what `go run` builds and runs.

Each runs a package's command (or a command inside a project environment) only in the verbs
that run one; `poetry install` runs nothing, so its handler returns None.
"""

from __future__ import annotations

from kilo_loop.guard.shell.model import UNKNOWN, command_name, parse_options
from kilo_loop.guard.shell.unwrapped import NOEXEC, Unwrap, Unwrapped


def subcommand_runner(verbs: frozenset[str], short_arg: str = "", long_arg: frozenset[str] = frozenset()) -> Unwrap:
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


def _nix(args: list[str]) -> Unwrapped | None:
    """`nix develop -c CMD…` / `nix shell PKG… --command CMD…` run CMD."""
    if args[:1] not in (["develop"], ["shell"]):
        return None
    for flag in ("-c", "--command"):
        if flag in args:
            return Unwrapped(args[args.index(flag) + 1:])
    return None


def _nix_run(args: list[str]) -> Unwrapped:
    """`nix run PKG -- ARGS…` runs PKG's main program (named after the package) with ARGS."""
    _, i = parse_options(args[1:], "f", frozenset({"file", "expr", "override-input", "inputs-from"}))
    found = args[1 + i:]
    package = found[0] if found and found[0] != "--" else "nixpkgs#default"
    rest = found[found.index("--") + 1:] if "--" in found else found[1:]
    program = package.rsplit("#", 1)[-1].rsplit(".", 1)[-1] or UNKNOWN
    return Unwrapped([program, *rest])


def _yarn(args: list[str]) -> Unwrapped | None:
    """`yarn exec CMD`, `yarn dlx PKG`, and `yarn workspaces foreach [opts] CMD…` (runs `yarn CMD…`)."""
    if args[:2] == ["workspaces", "foreach"]:
        _, i = parse_options(args[2:], "jW", frozenset({"include", "exclude", "from", "jobs", "since"}))
        rest = args[2 + i:]
        return Unwrapped(["yarn", *rest]) if rest else NOEXEC
    if args and args[0] in _PACKAGE_BINS:  # `yarn rimraf ~` runs the package's binary
        return Unwrapped(args)
    return subcommand_runner(frozenset({"exec", "dlx"}))(args)


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
    return subcommand_runner(frozenset({"exec", "x"}), "cw", frozenset({"package", "call", "workspace"}))(args)


_DENO_VALUE_OPTIONS = frozenset({"config", "import-map", "cert", "location", "seed", "ext", "log-level"})
"""deno's options whose value may be the next word (the rest take theirs after `=`)."""


def _deno(args: list[str]) -> Unwrapped | None:
    """`deno run [flags] npm:PKG ARGS…` runs the package's command, like `npx PKG ARGS…`; other uses of
    deno (a local program, `deno task`) are not a wrapper."""
    if args[:1] != ["run"]:
        return None
    _, i = parse_options(args[1:], "cL", _DENO_VALUE_OPTIONS)
    rest = args[1 + i:]
    if not rest or not rest[0].startswith("npm:"):
        return None
    return Unwrapped([_package_command(rest[0][4:]), *rest[1:]])


_GO_VALUE_FLAGS = frozenset({"C", "p", "asmflags", "buildmode", "compiler", "gccgoflags", "gcflags", "installsuffix",
                             "ldflags", "mod", "modfile", "overlay", "pgo", "pkgdir", "tags", "toolexec", "exec", "o",
                             "coverpkg", "covermode"})


def go_run(args: list[str]) -> tuple[str | None, list[str]]:
    """`go run [build flags] PACKAGE [ARGS…]`: the package, and the programs its `-exec` / `-toolexec`
    flags run (with the built binary, or each build tool, as arguments)."""
    programs: list[str] = []
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "--":
        flag, eq, value = args[i].lstrip("-").partition("=")
        if flag in _GO_VALUE_FLAGS and not eq:
            value = args[i + 1] if i + 1 < len(args) else ""
            i += 1
        if flag in ("exec", "toolexec") and value:
            programs.append(value)
        i += 1
    if i < len(args) and args[i] == "--":
        i += 1
    return (args[i] if i < len(args) else None), programs


PACKAGE_RUNNERS: dict[str, Unwrap] = {
    "deno": _deno,
    "npx": _npx,
    "pnpx": _npx,
    "bunx": _npx,
    "uvx": _npx,
    "pipx": subcommand_runner(frozenset({"run"})),
    "corepack": _corepack,
    "npm": _npm,
    "pnpm": lambda args: Unwrapped(args) if args[:1] and args[0] in _PACKAGE_BINS else subcommand_runner(
        frozenset({"exec", "dlx"}), "C", frozenset({"dir", "filter"}))(args),  # `pnpm rimraf ~` runs the binary
    "devbox": subcommand_runner(frozenset({"run"}), "c", frozenset({"config", "environment", "env-file"})),
    "pixi": subcommand_runner(frozenset({"run", "exec"}), "e", frozenset({"environment", "manifest-path"})),
    "nix": lambda args: _nix_run(args) if args[:1] == ["run"] else _nix(args),
    "yarn": _yarn,
    "bun": subcommand_runner(frozenset({"x"})),
    "poetry": subcommand_runner(frozenset({"run"}), "C", frozenset({"directory", "project"})),
    "pipenv": subcommand_runner(frozenset({"run"})),
    "uv": subcommand_runner(frozenset({"run"}), "p", frozenset({"with", "python", "directory", "project",
                                                                "package", "extra", "group"})),
    "pdm": subcommand_runner(frozenset({"run"})),
    "hatch": subcommand_runner(frozenset({"run"})),
    "rye": subcommand_runner(frozenset({"run"})),
    "conda": subcommand_runner(frozenset({"run"}), "np", frozenset({"name", "prefix"})),
    "mamba": subcommand_runner(frozenset({"run"}), "np", frozenset({"name", "prefix"})),
    "micromamba": subcommand_runner(frozenset({"run"}), "np", frozenset({"name", "prefix"})),
    "bundle": subcommand_runner(frozenset({"exec"})),
    "asdf": subcommand_runner(frozenset({"exec"})),
}
