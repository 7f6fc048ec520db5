"""How git reads its command line: global options, `-c` settings, aliases, and the shell
commands git itself would run (`!aliases`, `core.sshCommand`, `rebase --exec`, …)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import NamedTuple

from kilo_loop.guard.shell.model import UNKNOWN, parse_options, split_words

# Config keys (lower case; `*` is any subsection) whose value git runs as a shell command.
EXEC_CONFIG_KEYS = (
    "core.fsmonitor", "core.sshcommand", "core.pager", "core.editor", "core.askpass", "core.hookspath",
    "core.gitproxy", "sequence.editor", "credential.helper", "gpg.program", "gpg.*.program", "diff.external",
    "diff.*.textconv", "diff.*.command", "merge.*.driver", "filter.*.clean", "filter.*.smudge",
    "filter.*.process", "pager.*", "uploadpack.packobjectshook", "remote.*.receivepack",
    "remote.*.uploadpack", "protocol.ext.allow", "protocol.allow", "include.path", "includeif.*.path",
    "credential.*.helper", "core.alternaterefscommand", "mergetool.*.cmd", "difftool.*.cmd",
    "gpg.ssh.defaultkeycommand", "sendemail.sendmailcmd", "sendemail.tocmd", "sendemail.cccmd", "browser.*.cmd",
    "sequence.editor", "init.templatedir",
    # also run: `add -p`'s diff filter, `git help`'s man viewer, trailer commands, `git archive` compressors
    "interactive.difffilter", "man.*.cmd", "man.*.path", "trailer.*.command", "trailer.*.cmd", "tar.*.command",
    "sendemail.smtpserver",
)
# Environment variables whose value git runs as a command.
EXEC_ENV = ("GIT_SSH_COMMAND", "GIT_SSH", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_EDITOR", "GIT_ASKPASS",
            "GIT_SEQUENCE_EDITOR", "GIT_PROXY_COMMAND", "GIT_CONFIG_PARAMETERS", "GIT_EXEC_PATH", "PAGER", "EDITOR",
            "VISUAL", "SSH_ASKPASS")
# Options of clone/fetch/push/ls-remote/archive/difftool whose value git runs as a command.
_EXEC_OPTIONS = ("--upload-pack", "--receive-pack", "--exec", "--extcmd", "--tool-cmd", "--open-files-in-pager",
                 "--sendmail-cmd", "--to-cmd", "--cc-cmd")
_GIT_LONG_ARG = ("--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix", "--list-cmds",
                 "--exec-path", "--attr-source")
_GIT_INFO = ("--version", "--help", "--html-path", "--man-path", "--info-path")


def env_settings(env: Mapping[str, str | None], variables: Mapping[str, str | None]) -> list[str]:
    """`GIT_CONFIG_COUNT=n GIT_CONFIG_KEY_i=… GIT_CONFIG_VALUE_i=…` as the `-c key=value` options they stand for
    (a value not known here stays unknown)."""
    def get(name: str) -> str | None:
        if name in env:
            return env[name]
        return variables.get(name, "") if name in variables else ""

    options: list[str] = []
    parameters = get("GIT_CONFIG_PARAMETERS")  # what `git -c` passes to child gits: 'key=value' 'key'='value'
    if parameters is None:
        options += ["-c", f"{UNKNOWN}={UNKNOWN}"]
    elif parameters:
        for setting in split_words(parameters.replace("'='", "=")):
            options += ["-c", setting]
    for variable, setting in (("GIT_CONFIG_GLOBAL", "include.path"), ("GIT_CONFIG_SYSTEM", "include.path"),
                              ("GIT_CONFIG", "include.path"), ("GIT_TEMPLATE_DIR", "init.templateDir")):
        named = get(variable)
        if named != "" and named != "/dev/null":  # a config file read whole, or templates copied into .git
            options += ["-c", f"{setting}={named if named is not None else UNKNOWN}"]
    keys = sorted({name[len("GIT_CONFIG_KEY_"):] for name in (*env, *variables) if name.startswith("GIT_CONFIG_KEY_")})
    for index in keys:
        key, value = get(f"GIT_CONFIG_KEY_{index}"), get(f"GIT_CONFIG_VALUE_{index}")
        options += ["-c", f"{key if key is not None else UNKNOWN}={value if value is not None else UNKNOWN}"]
    return options


def exec_config_key(key: str) -> bool:
    """`key` (any case) is a git setting whose value git runs as a command."""
    parts = key.lower().split(".")
    for pattern in EXEC_CONFIG_KEYS:
        want = pattern.split(".")
        if want[1:2] == ["*"] and len(parts) >= 3 and parts[0] == want[0] and parts[-1] == want[-1]:
            return True
        if want[-1] == "*" and len(parts) >= 2 and parts[0] == want[0]:
            return True
        if parts == want:
            return True
    return False


def _submodule_update(key: str) -> bool:
    parts = key.lower().split(".")
    return len(parts) >= 3 and parts[0] == "submodule" and parts[-1] == "update"


class GitCall(NamedTuple):
    """A git invocation with its global options resolved."""

    subcommand: str | None
    args: tuple[str, ...]
    chdirs: tuple[str, ...] = ()
    shell_alias: str | None = None
    info_only: bool = False
    settings: tuple[tuple[str, str], ...] = ()
    """`-c key=value` pairs, keys as written."""
    exec_path: str | None = None
    """`--exec-path=DIR`: where git looks for its subcommands' programs."""

    @property
    def nested_scripts(self) -> list[str]:
        """Shell command strings git itself would run for this call."""
        args = list(self.args)
        # a credential helper or alias starting with `!` is a shell command
        scripts = [value.removeprefix("!") for key, value in self.settings if exec_config_key(key) and value]
        # `submodule.NAME.update=!CMD` runs CMD on `git submodule update` (other values name a merge strategy)
        scripts += [value[1:] for key, value in self.settings if _submodule_update(key) and value.startswith("!")]
        if self.subcommand == "submodule" and args[:1] == ["foreach"]:
            rest = [a for a in args[1:] if a not in ("--recursive", "-q", "--quiet")]
            scripts += [" ".join(rest)] if rest else []
        if self.subcommand == "rebase":
            opts, _ = parse_options(args, "x", frozenset({"exec"}))
            scripts += [v for k, v in opts.items() if k in ("-x", "--exec") and v]
        if self.subcommand == "clone":  # `clone -c key=value` writes the new repository's config
            for index, arg in enumerate(args[:-1]):
                if arg in ("-c", "--config"):
                    key, _, value = args[index + 1].partition("=")
                    scripts += [value.removeprefix("!")] if exec_config_key(key) else []
        if self.subcommand == "bisect" and args[:1] == ["run"] and len(args) > 1:
            scripts.append(shlex.join(args[1:]))  # an argv: git quotes it for the shell it runs it with
        for index, arg in enumerate(args):
            name, eq, value = arg.partition("=")
            if arg == "--":
                break
            # git takes any unique prefix of a long option (`--upload-p` is `--upload-pack`)
            long = len(name) > 4 and name.startswith("--") and any(o.startswith(name) for o in _EXEC_OPTIONS)
            if long or (name in ("-u", "-x") and self.subcommand in ("clone", "difftool")):
                scripts.append(value if eq else (args[index + 1] if index + 1 < len(args) else ""))
            elif self.subcommand == "grep" and arg.startswith("-O") and len(arg) > 2:
                scripts.append(arg[2:])
        return [script for script in scripts if script]


def _global_long(arg: str) -> str | None:
    """The global long option `arg` names (git accepts unique prefixes), or None."""
    name = arg.split("=", 1)[0]
    if len(name) < 3:
        return None
    hits = [o for o in (*_GIT_LONG_ARG, *_GIT_INFO) if o.startswith(name)]
    return hits[0] if len(hits) == 1 else None


def parse_git_argv(args: Sequence[str]) -> GitCall:
    """Split `git [global options] <subcommand> args…`, expanding `-c alias.X=…` aliases
    (alias names are case-insensitive, like every git config key)."""
    return _parse_git_argv(tuple(args))


@lru_cache(maxsize=512)  # every git rule asks for the same command's split
def _parse_git_argv(args: tuple[str, ...]) -> GitCall:
    chdirs: list[str] = []
    settings: list[tuple[str, str]] = []
    aliases: dict[str, str] = {}
    exec_path: str | None = None
    i = 0
    while i < len(args) and args[i].startswith("-"):
        arg = args[i]
        option = _global_long(arg) if arg.startswith("--") else None
        if option == "--exec-path" and "=" in arg:
            exec_path = arg.split("=", 1)[1]
        if option in _GIT_INFO or arg in ("-v", "-h"):
            return GitCall(None, tuple(args[i + 1:]), tuple(chdirs), info_only=True, settings=tuple(settings))
        if option == "--config-env":
            spec = arg.split("=", 1)[1] if "=" in arg else (args[i + 1] if i + 1 < len(args) else "")
            key, _, variable = spec.rpartition("=")
            settings.append((key, "$" + variable if variable else ""))
            i += 1 if "=" in arg else 2
            continue
        if arg in ("-C", "-c") or (option in _GIT_LONG_ARG and "=" not in arg):
            value = args[i + 1] if i + 1 < len(args) else ""
            if arg == "-C":
                chdirs.append(value)
            elif arg == "-c":
                key, _, setting = value.partition("=")
                settings.append((key, setting))
                if key.lower().startswith("alias."):
                    aliases[key[6:].lower()] = setting
            i += 2
            continue
        i += 1
    if i >= len(args):
        return GitCall(None, (), tuple(chdirs), settings=tuple(settings))
    sub, rest = args[i], tuple(args[i + 1:])
    alias = aliases.get(sub.lower())
    if alias is not None:
        if alias.startswith("!"):
            return GitCall(sub, rest, tuple(chdirs), shell_alias=" ".join([alias[1:], *rest]),
                           settings=tuple(settings))
        words = split_words(alias)
        if words:
            sub, rest = words[0], (*words[1:], *rest)
    info = "--help" in rest or sub == "help"
    return GitCall(sub, rest, tuple(chdirs), info_only=info, settings=tuple(settings), exec_path=exec_path)


def alias_definition(call: GitCall) -> str | None:
    """`git config [--global] alias.NAME VALUE` (or `config set`): the VALUE of a non-shell alias."""
    if call.subcommand != "config":
        return None
    words = [a for a in call.args if not a.startswith("-")]
    if words[:1] == ["set"]:
        words = words[1:]
    if len(words) == 2 and words[0].lower().startswith("alias.") and not words[1].startswith("!"):
        return words[1]
    return None


def clone_directory(call: GitCall) -> list[str]:
    """The directory `git clone URL [DIR]` fills."""
    _, i = parse_options(call.args, "obcujl", frozenset({"origin", "branch", "config", "upload-pack", "template",
                                                         "reference", "depth", "separate-git-dir", "filter",
                                                         "jobs", "shallow-since", "shallow-exclude"}))
    operands = list(call.args[i:])
    if len(operands) >= 2:
        return [operands[1]]
    if operands:
        base = operands[0].rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
        return [base.removesuffix(".git")] if base else []
    return []
