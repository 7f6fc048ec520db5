"""Runners: debuggers and tracers run the program they are given (`gdb --args`, `valgrind`, `strace`,
`ltrace`: their cases are in the adversarial corpus, kind "wrappers"), and `go run MODULE@VERSION`
runs code fetched when it runs. Every command is data for Guard.check_command, never run."""

from __future__ import annotations

from kilo_loop.guard.runtime import Guard
from kilo_loop.guard.shell import SimpleCommand, analyze


def test_a_remote_module_run_says_what_to_do_instead() -> None:
    decision = Guard().check_command("go run example.com/tool@latest", "/repo")
    assert decision.rule == "unknown-code" and "go.mod" in decision.reason


def test_go_run_exec_runs_its_program_with_the_built_binary() -> None:
    executed = analyze("go run -exec 'sudo -E' ./cmd/app", "/repo", "/tmp").executed
    assert any(isinstance(item, SimpleCommand) and item.name == "sudo" for item in executed)


def test_gdb_with_its_own_commands_judges_them_and_the_program() -> None:
    guard = Guard()
    assert guard.check_command("gdb -ex 'shell git push --force' --args ls", "/repo").denied
    assert guard.check_command("gdb -batch -ex run --args rm -rf ~", "/repo").denied
    assert not guard.check_command("gdb -batch -ex run -ex bt --args ./build/app", "/repo").denied
