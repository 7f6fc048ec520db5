"""Runners that execute commands written in project files: what each would run, read from the file.

`make` runs a Makefile's recipes, `npm run X` a package.json script with its `preX`/`postX` hooks
(and `npm install` the package's own lifecycle scripts), `deno task X` a deno.json task, `tox` the
`commands` of tox.ini, `task X` a Taskfile's `cmds`, `pre-commit` its local hooks' entries and
`go generate` the `//go:generate` lines of the package's files. Each extractor here is pure: file
text in, shell command lines out; the analyzer reads the files and follows the lines like inline
text. Runners whose files are programs the guard does not read (noxfile.py, a Rakefile, conftest.py,
setup.py, a compose file's containers, build.rs) are named in `UNREAD`, so an allow can say so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

from kilo_loop.guard.shell.model import UNKNOWN

_UNKNOWN_WORD = "${__kilo_loop_unknown__}"
"""What a value only known at run time becomes in a command line handed back to the shell walker."""


# ------------------------------------------------------------------ make
_MAKE_VALUE_OPTIONS = frozenset({"-f", "--file", "--makefile", "-C", "--directory", "-I", "--include-dir", "-o",
                                 "--old-file", "--assume-old", "-W", "--what-if", "--new-file", "--assume-new",
                                 "-l", "--load-average", "--eval", "-E", "--jobserver-style", "-O", "--output-sync"})
_MAKE_ASSIGN = re.compile(r"^(?:export\s+|override\s+)*([A-Za-z_][\w.-]*)\s*(::?=|:::=|\?=|\+=|!=|=)\s*(.*)$")
_MAKE_RULE = re.compile(r"^([^\t:=#][^:=#]*?)\s*::?(?!=)\s*([^=;#]*?)\s*(?:;\s*(.*))?$")
_MAKE_REFERENCE = re.compile(r"\$(?:\(([^()$]*)\)|\{([^{}$]*)\}|([^({$]))")
_MAKE_DEFAULTS = {"CC": "cc", "CXX": "c++", "CPP": "cc -E", "AR": "ar", "AS": "as", "LD": "ld", "RM": "rm -f",
                  "MAKE": "make", "FC": "f77", "LEX": "lex", "YACC": "yacc", "INSTALL": "install", "SHELL": "/bin/sh",
                  "CURDIR": ".", "MAKEFLAGS": ""}
_AUTOMATIC = frozenset("@<^?*+|%")


def make_targets(args: Sequence[str]) -> tuple[list[str], list[str], dict[str, str]]:
    """`make [options] [VAR=value…] [targets…]`: (targets, makefiles named with -f, variables set)."""
    targets: list[str] = []
    files: list[str] = []
    variables: dict[str, str] = {}
    skip = False
    for index, arg in enumerate(args):
        if skip:
            skip = False
            continue
        key, eq, value = arg.partition("=")
        if arg in _MAKE_VALUE_OPTIONS:
            skip = True
            if arg in ("-f", "--file", "--makefile") and index + 1 < len(args):
                files.append(args[index + 1])
        elif arg.startswith("-"):
            if key in ("--file", "--makefile") and eq:
                files.append(value)
            elif arg.startswith("-f") and len(arg) > 2:
                files.append(arg[2:])
        elif eq and re.fullmatch(r"[A-Za-z_][\w.-]*", key):
            variables[key] = value
        else:
            targets.append(arg)
    return targets, files, variables


def makefile_commands(text: str, targets: Sequence[str], overrides: dict[str, str] | None = None) -> list[str]:
    """The shell lines `make TARGETS` runs: the recipes of the targets and what they depend on (every
    pattern rule's too), and every `$(shell …)` (run when the file is read), variables expanded."""
    variables: dict[str, str] = dict(_MAKE_DEFAULTS)
    rules: dict[str, tuple[list[str], list[str]]] = {}
    patterns: list[str] = []
    order: list[str] = []
    shells: list[str] = []
    current: list[list[str]] = []
    for line in _make_lines(text):
        if line.startswith("\t"):
            for lines_of in current:
                lines_of.append(line[1:])
            continue
        stripped = line.split("#", 1)[0].strip() if "#" in line and "$(" not in line else line.strip()
        if not stripped:
            continue
        shells += _shell_calls(stripped)
        assign = _MAKE_ASSIGN.match(stripped)
        if assign:
            name, operator, value = assign.groups()
            if operator == "!=":
                shells.append(value)
                variables[name] = UNKNOWN
            elif operator == "+=":
                variables[name] = f"{variables.get(name, '')} {value}".strip()
            elif operator != "?=" or name not in variables:
                variables[name] = value
            current = []
            continue
        rule = _MAKE_RULE.match(stripped)
        if rule is None:
            current = []
            continue
        names, prerequisites, inline = rule.group(1).split(), rule.group(2).split(), rule.group(3)
        current = []
        for name in names:
            recipe: list[str] = [inline] if inline else []
            entry = rules.setdefault(name, ([], []))
            entry[0].extend(prerequisites)
            entry[1].extend(recipe)
            current.append(entry[1])
            if "%" in name or (name.startswith(".") and name.count(".") >= 2 and "/" not in name):
                patterns.append(name)
            elif not name.startswith(".") and name not in order:
                order.append(name)
    variables.update(overrides or {})
    wanted = list(targets) or order[:1]
    lines = [*shells, *_recipes(wanted, rules), *(line for name in patterns for line in rules[name][1])]
    return [_make_expand(line, variables) for line in lines]


def _make_lines(text: str) -> Iterator[str]:
    """Logical lines: a backslash-newline joins (in a recipe the shell sees the pair: it is kept there)."""
    pending = ""
    for raw in text.splitlines():
        line = pending + (raw[1:] if pending and pending.startswith("\t") and raw.startswith("\t") else raw)
        if line.endswith("\\"):
            pending = line[:-1] + ("\\\n" if line.startswith("\t") else " ")
            continue
        pending = ""
        yield line
    if pending:
        yield pending


def _shell_calls(text: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"\$\(shell\s+([^()]*(?:\([^()]*\)[^()]*)*)\)", text)]


def _recipes(wanted: Sequence[str], rules: dict[str, tuple[list[str], list[str]]]) -> list[str]:
    seen: set[str] = set()
    lines: list[str] = []
    stack = list(reversed(wanted))
    while stack:
        name = stack.pop()
        if name in seen or name not in rules:
            continue
        seen.add(name)
        prerequisites, recipe = rules[name]
        stack.extend(reversed([p for p in prerequisites if p != "|"]))
        lines += recipe
    return lines


def _make_expand(line: str, variables: dict[str, str], depth: int = 0) -> str:
    """Make's expansion of one recipe line: `$(VAR)`, `${VAR}`, `$X`, `$$` → `$`, automatic variables
    as a plain word; what make computes (`$(wildcard …)`, an unset variable) as a value only known at run time."""
    line = line.lstrip("@-+ \t")

    def reference(found: re.Match[str]) -> str:
        name = found.group(1) if found.group(1) is not None else found.group(2) if found.group(2) is not None \
            else found.group(3)
        if name == "$":
            return "\x01"
        if name in _AUTOMATIC or (len(name) == 2 and name[0] in _AUTOMATIC and name[1] in "DF"):
            return "target"
        if name in variables and depth < 8:
            value = variables[name]
            return _UNKNOWN_WORD if value == UNKNOWN else _make_expand(value, variables, depth + 1)
        return _UNKNOWN_WORD

    return _MAKE_REFERENCE.sub(reference, line).replace("\x01", "$")


# ------------------------------------------------------------------ package.json scripts
_LIFECYCLE = {
    "install": ("preinstall", "install", "postinstall", "prepublish", "preprepare", "prepare", "postprepare"),
    "ci": ("preinstall", "install", "postinstall", "prepublish", "preprepare", "prepare", "postprepare"),
    "test": ("pretest", "test", "posttest"), "start": ("prestart", "start", "poststart"),
    "stop": ("prestop", "stop", "poststop"), "restart": ("prerestart", "restart", "postrestart"),
    "pack": ("prepack", "prepare", "postpack"), "publish": ("prepublishOnly", "prepack", "prepare", "postpack",
                                                            "publish", "postpublish"),
    "version": ("preversion", "version", "postversion"),
}
_INSTALL_ALIASES = {"i": "install", "add": "install", "isntall": "install", "in": "install", "ins": "install",
                    "inst": "install", "insta": "install", "instal": "install", "install-test": "install",
                    "it": "install", "t": "test", "tst": "test", "rb": "rebuild", "clean-install": "ci",
                    "install-clean": "ci", "ic": "ci"}
_RUN_VERBS = frozenset({"run", "run-script", "rum", "urn"})


def package_scripts(text: str, runner: str, args: Sequence[str]) -> list[str]:
    """The package.json script lines `npm|pnpm|yarn|bun ARGS` runs: `run X` → preX, X, postX; a
    lifecycle verb → its hooks (`install` with a package name adds that package, not ours: nothing read)."""
    scripts = _json_object(text).get("scripts")
    if not isinstance(scripts, dict):
        return []
    operands = [a for a in args if not a.startswith("-")]
    if not operands:
        verb = "install" if runner in ("npm", "pnpm", "yarn", "bun") and not args else ""
        names: Sequence[str] = _LIFECYCLE.get(verb, ())
    else:
        verb = _INSTALL_ALIASES.get(operands[0], operands[0])
        if verb in _RUN_VERBS or (runner in ("yarn", "pnpm", "bun") and verb in scripts and verb not in _LIFECYCLE):
            script = operands[1] if verb in _RUN_VERBS and len(operands) > 1 else verb
            names = (f"pre{script}", script, f"post{script}")
        elif verb in ("install", "ci") and len(operands) > 1:
            names = ()  # `npm install PKG`: that package's scripts, not the project's
        else:
            names = _LIFECYCLE.get(verb, ())
    return [str(scripts[name]) for name in names if isinstance(scripts.get(name), str)]


def _json_object(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError:
        try:
            import json5

            data = json5.loads(text)
        except Exception:  # noqa: BLE001 - a file that is not JSON runs nothing the guard can name
            return {}
    return data if isinstance(data, dict) else {}


# ------------------------------------------------------------------ deno tasks
def deno_tasks(text: str, args: Sequence[str]) -> list[str]:
    """`deno task NAME`: the task's command and the tasks it depends on (deno.json / deno.jsonc)."""
    tasks = _json_object(text).get("tasks")
    operands = [a for a in args if not a.startswith("-")]
    if not isinstance(tasks, dict) or not operands:
        return []
    lines: list[str] = []
    seen: set[str] = set()
    stack = [operands[0]]
    while stack:
        name = stack.pop()
        if name in seen or name not in tasks:
            continue
        seen.add(name)
        task = tasks[name]
        if isinstance(task, str):
            lines.append(task)
        elif isinstance(task, dict):
            if isinstance(task.get("command"), str):
                lines.append(task["command"])
            stack += [d for d in task.get("dependencies", []) if isinstance(d, str)]
    return lines


# ------------------------------------------------------------------ tox
def tox_commands(text: str) -> list[str]:
    """Every `commands`/`commands_pre`/`commands_post` line of every tox environment in tox.ini (tox quotes
    its words like a shell; `{posargs}` and other substitutions are values only known at run time)."""
    import configparser

    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return [_UNKNOWN_WORD]
    lines: list[str] = []
    for section in parser.sections():
        if section != "testenv" and not section.startswith("testenv:"):
            continue
        for key in ("commands_pre", "commands", "commands_post"):
            for line in parser.get(section, key, fallback="").splitlines():
                line = line.strip().lstrip("-!").strip()
                if line and not line.startswith("#"):
                    lines.append(re.sub(r"\{[^{}]*\}", _UNKNOWN_WORD, line))
    return lines


# ------------------------------------------------------------------ YAML runners
def _yaml(text: str) -> Any:
    try:
        import yaml

        return yaml.safe_load(text)
    except Exception:  # noqa: BLE001 - unreadable YAML runs nothing the guard can name
        return None


def taskfile_commands(text: str, args: Sequence[str]) -> list[str]:
    """`task [NAME…]`: the `cmds` of the named tasks (`default` without a name) and their `deps`."""
    data = _yaml(text)
    tasks = data.get("tasks") if isinstance(data, dict) else None
    if not isinstance(tasks, dict):
        return []
    names = [a for a in args if not a.startswith("-") and "=" not in a] or ["default"]
    lines: list[str] = []
    seen: set[str] = set()
    stack = list(names)
    while stack:
        name = stack.pop()
        task = tasks.get(name)
        if name in seen or task is None:
            continue
        seen.add(name)
        if isinstance(task, list):
            task = {"cmds": task}
        if isinstance(task, str):
            task = {"cmds": [task]}
        if not isinstance(task, dict):
            continue
        for dep in task.get("deps", []) or []:
            named = dep.get("task") if isinstance(dep, dict) else dep
            if isinstance(named, str):
                stack.append(named)
        for command in task.get("cmds", []) or []:
            if isinstance(command, str):
                lines.append(command)
            elif isinstance(command, dict):
                if isinstance(command.get("cmd"), str):
                    lines.append(command["cmd"])
                if isinstance(command.get("task"), str):
                    stack.append(command["task"])
    return [re.sub(r"\{\{[^{}]*\}\}", _UNKNOWN_WORD, line) for line in lines]


def precommit_commands(text: str) -> list[str]:
    """The entries of `.pre-commit-config.yaml`'s local hooks that run commands (`language: system|script`);
    a hook from another repository is code the guard does not read (`UNREAD`)."""
    data = _yaml(text)
    repos = data.get("repos") if isinstance(data, dict) else None
    lines: list[str] = []
    for repo in repos if isinstance(repos, list) else []:
        if not isinstance(repo, dict) or repo.get("repo") != "local":
            continue
        for hook in repo.get("hooks", []) or []:
            if isinstance(hook, dict) and isinstance(hook.get("entry"), str) and \
                    hook.get("language") in ("system", "script", "unsupported", "unsupported_script"):
                lines.append(hook["entry"] + " " + _UNKNOWN_WORD)  # the staged files are its arguments
    return lines


def remote_precommit_hooks(text: str) -> bool:
    data = _yaml(text)
    repos = data.get("repos") if isinstance(data, dict) else None
    return any(isinstance(r, dict) and r.get("repo") not in ("local", "meta") for r in repos or [])


# ------------------------------------------------------------------ go generate
_GO_GENERATE = re.compile(r"^//go:generate[ \t]+(.+)$", re.MULTILINE)


def go_generate_commands(text: str) -> list[str]:
    """The `//go:generate` commands of one Go file (`$GOFILE` and the like are known only when it runs)."""
    return [re.sub(r"\$\{?GO\w*\}?|\$DOLLAR", _UNKNOWN_WORD, m.group(1)) for m in _GO_GENERATE.finditer(text)]


# ------------------------------------------------------------------ what is not read
UNREAD: dict[str, str] = {
    "nox": "noxfile.py (Python)", "rake": "the Rakefile (Ruby)", "invoke": "tasks.py (Python)",
    "inv": "tasks.py (Python)", "gulp": "gulpfile.js (JavaScript)", "grunt": "Gruntfile.js (JavaScript)",
    "pytest": "conftest.py and the test files (Python)", "py.test": "conftest.py and the test files (Python)",
    "just": "the justfile's recipes", "mise": "mise.toml's tasks", "poe": "pyproject.toml's poe tasks",
    "cargo": "build.rs and the crate's tests (Rust)", "hatch": "pyproject.toml's hatch scripts",
    "jest": "the test files (JavaScript)", "vitest": "the test files (JavaScript)", "mocha": "the test files",
    "tsx": "the program (TypeScript)", "ts-node": "the program (TypeScript)",
}
"""Runners whose project files are programs the guard does not read: what they run."""


def unread(name: str, args: Sequence[str]) -> str | None:
    """What `name args` runs from project files the guard does not read, or None."""
    if name in ("pip", "pip3", "uv") and "install" in args and ("-e" in args or "--editable" in args or any(
            a in (".", "./") or a.startswith(("./", "-e.", "--editable=")) for a in args)):
        return "the project's build (setup.py or its build backend, Python)"
    if name in ("python", "python3") and args[:1] == ["setup.py"]:
        return "setup.py (Python)"
    if name in ("python", "python3") and args[:2] == ["-m", "pytest"]:
        return UNREAD["pytest"]
    composes = (name in ("docker", "podman") and args[:1] == ["compose"]) or name == "docker-compose"
    if composes and any(a in ("up", "run", "start", "exec", "create") for a in args):
        return "the compose file's containers (images and their commands)"
    if name == "go" and args[:1] in (["test"], ["generate"]):
        return "the package's Go code" if args[:1] == ["test"] else None
    if name == "cargo" and not set(args[:1]) & {"build", "run", "test", "check", "bench", "install"}:
        return None
    return UNREAD.get(name)
