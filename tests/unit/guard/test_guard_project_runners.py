"""Runners that execute commands written in project files: the guard reads the files and judges what
they run. The files are written by the test as data (Path.write_text) into pytest's temp dir; the
commands go to the guard in-process, never to a shell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kilo_loop.guard.runtime import Guard
from kilo_loop.guard.shell.project_runners import (
    deno_tasks,
    go_generate_commands,
    makefile_commands,
    package_scripts,
    precommit_commands,
    taskfile_commands,
    tox_commands,
)

WIPE = "rm -rf ~"
PUSH = "git push origin main"
MAKEFILE = f"""CC ?= gcc
OUT := build
all: app
app: main.o
\t$(CC) -o $@ $^
clean:
\t@rm -rf $(OUT)
nuke: clean
\t-{WIPE}
publish:
\t{PUSH}
%.o: %.c
\t$(CC) -c $< -o $@
"""
PACKAGE = {"name": "x", "scripts": {"build": "tsc -p .", "prebuild": WIPE, "test": "vitest run",
                                    "postinstall": PUSH, "lint": "eslint ."}}
FILES: dict[str, str] = {
    "Makefile": MAKEFILE,
    "package.json": json.dumps(PACKAGE),
    "deno.jsonc": '{ // tasks\n "tasks": {"dev": "deno run -A main.ts", "wipe": {"command": "echo hi", '
                  f'"dependencies": ["nuke"]}}, "nuke": "{WIPE}"}}}}\n',
    "tox.ini": f"[tox]\nenvlist = py311\n[testenv]\ncommands = pytest {{posargs}}\n[testenv:clean]\ncommands =\n"
               f"    {WIPE}\n",
    "Taskfile.yml": f"version: '3'\ntasks:\n  build:\n    cmds:\n      - go build ./...\n  nuke:\n    deps: [build]\n"
                    f"    cmds:\n      - {WIPE}\n",
    ".pre-commit-config.yaml": f"repos:\n  - repo: local\n    hooks:\n      - id: wipe\n        name: wipe\n"
                               f"        entry: {PUSH}\n        language: system\n",
    "gen.go": f"package main\n\n//go:generate {WIPE}\n",
    "prog.awk": 'BEGIN { system("rm -rf ~") }\n',
    "script.sed": "1e rm -rf ~\n",
    "session.vim": ":!rm -rf ~\n",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    for name, text in FILES.items():
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize("command", [
    "make nuke", "make publish", "make -f Makefile nuke", "npm run build", "npm install", "yarn build",
    "pnpm run build", "deno task wipe", "tox", "task nuke", "pre-commit run --all-files", "go generate ./...",
    "awk -f prog.awk data.txt", "sed -f script.sed input.txt", "vim -S session.vim",
])
def test_what_a_runner_runs_from_a_project_file_is_judged(project: Path, command: str) -> None:
    decision = Guard().check_command(command, str(project))
    assert decision.denied, decision
    assert "in the script" in decision.reason or decision.rule in ("unknown-code", "inline-code-delete",
                                                                    "unknown-command"), decision


@pytest.mark.parametrize("command", ["make", "make all", "npm run lint", "npm test", "deno task dev", "task build",
                                     "npm install left-pad"])
def test_harmless_recipes_are_allowed(project: Path, command: str) -> None:
    assert not Guard().check_command(command, str(project)).denied


@pytest.mark.parametrize(("command", "unread"), [
    ("pytest -q", "conftest.py"), ("nox", "noxfile.py"), ("rake", "Rakefile"), ("pip install -e .", "setup.py"),
    ("docker compose up -d", "compose file"),
])
def test_what_the_guard_does_not_read_is_named_in_the_allow(project: Path, command: str, unread: str) -> None:
    decision = Guard().check_command(command, str(project))
    assert not decision.denied and "not read" in decision.reason and unread in decision.reason, decision


def test_make_reads_the_targets_and_what_they_depend_on() -> None:
    lines = makefile_commands(MAKEFILE, ["nuke"])
    assert "rm -rf build" in lines and WIPE in lines and PUSH not in lines
    # the first target, variables expanded (`CC ?= gcc` keeps make's built-in cc, as make does)
    assert makefile_commands(MAKEFILE, [])[0] == "cc -o target target"
    assert "clang -o target target" in makefile_commands(MAKEFILE, [], {"CC": "clang"})
    assert "echo x" in makefile_commands("v != echo x\nall:\n\ttrue\n", [])  # run when the file is read


def test_package_scripts_run_their_pre_and_post_hooks() -> None:
    text = json.dumps(PACKAGE)
    assert package_scripts(text, "npm", ["run", "build"]) == [WIPE, "tsc -p ."]
    assert package_scripts(text, "npm", ["install"]) == [PUSH]
    assert package_scripts(text, "npm", ["install", "left-pad"]) == []
    assert package_scripts(text, "yarn", ["build"]) == [WIPE, "tsc -p ."]


def test_the_other_readers() -> None:
    assert deno_tasks(FILES["deno.jsonc"], ["wipe"]) == ["echo hi", WIPE]
    assert WIPE in tox_commands(FILES["tox.ini"])
    assert taskfile_commands(FILES["Taskfile.yml"], ["nuke"]) == [WIPE, "go build ./..."]
    assert precommit_commands(FILES[".pre-commit-config.yaml"])[0].startswith(PUSH)
    assert go_generate_commands(FILES["gen.go"]) == [WIPE]
