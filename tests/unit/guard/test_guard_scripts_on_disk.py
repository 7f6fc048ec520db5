"""Scripts already on disk: a shell or SQL client handed a file the agent wrote earlier (with its
file-write tool, not this command) has the file read and judged as if its text were inline.

Every destructive text here is a Python string written into pytest's temp dir with
`Path.write_text`; commands go to `Guard.check_command` in-process, never to a shell.
"""

from __future__ import annotations

import importlib
import os
import venv
from pathlib import Path

import pytest

from kilo_loop.guard.runtime import Guard
from kilo_loop.guard.shell.scripts_on_disk import MAX_SCRIPT_BYTES
from tests.support.git import git

WIPE_HOME = "rm -rf ~\n"
FORCE_PUSH = "git push --force origin main\n"
DROP = "DROP DATABASE app;\n"
SHEBANG = "#!/bin/bash\n"

# (files to write: name -> text, command, why it must be denied)
SHOULD_DENY: list[tuple[dict[str, str], str]] = [
    ({"x.sh": WIPE_HOME}, "bash x.sh"),
    ({"x.sh": WIPE_HOME}, "sh ./x.sh"),
    ({"x.sh": WIPE_HOME}, "zsh x.sh"),
    ({"x.sh": WIPE_HOME}, "dash x.sh"),
    ({"x.sh": WIPE_HOME}, "ksh x.sh"),
    ({"x.sh": WIPE_HOME}, "bash -e -x x.sh"),
    ({"x.sh": WIPE_HOME}, "bash -- x.sh"),
    ({"x.sh": WIPE_HOME}, "source x.sh"),
    ({"x.sh": WIPE_HOME}, ". x.sh"),
    ({"x.sh": WIPE_HOME}, ". ./x.sh && echo done"),
    ({"x.sh": SHEBANG + WIPE_HOME}, "./x.sh"),
    ({"x.sh": "#!/usr/bin/env bash\n" + WIPE_HOME}, "./x.sh --yes"),
    ({"x.sh": "#!/usr/bin/env -S bash -e\n" + WIPE_HOME}, "./x.sh"),
    ({"x.sh": "#!/bin/sh -e\n" + WIPE_HOME}, "exec ./x.sh"),
    ({"x.sh": "#!/bin/busybox sh\n" + WIPE_HOME}, "./x.sh"),
    ({"x.sh": WIPE_HOME}, "./x.sh"),  # no shebang: bash runs a text file it cannot exec as a script
    ({"x.sh": WIPE_HOME}, "bash < x.sh"),
    ({"x.sh": WIPE_HOME}, "sh -s -- --yes < x.sh"),
    ({"x.sh": WIPE_HOME}, "sudo bash x.sh"),
    ({"x.sh": SHEBANG + WIPE_HOME}, "timeout 60 ./x.sh"),
    ({"x.sh": WIPE_HOME}, "env FOO=1 sh x.sh"),
    ({"x.sh": WIPE_HOME}, "nohup bash x.sh &"),
    ({"push.sh": FORCE_PUSH}, "bash push.sh"),
    ({"push.sh": "set -e\ngit add -A\ngit commit -m wip\n" + FORCE_PUSH}, "sh push.sh"),
    ({"lib.sh": 'rm -rf "$HOME"\n'}, "source lib.sh && echo ok"),
    ({"lib.sh": 'cleanup() { rm -rf "$HOME"; }\ncleanup\n'}, "source lib.sh"),
    ({"lib.sh": 'cleanup() { rm -rf "$HOME"; }\n'}, "source lib.sh && cleanup"),
    ({"x.sh": 'rm -rf "$1"\n'}, "bash x.sh ~"),
    ({"run.sh": '"$@"\n'}, "bash run.sh rm -rf ~"),
    ({"run.sh": 'exec "$@"\n'}, "./run.sh git push --force"),
    ({"x.sh": 'run() { "$@"; }\nrun rm -rf ~\n'}, "bash x.sh anything"),  # "$@" there is the function's
    ({"x.sh": 'function wipe { rm -rf "$1"; }\nwipe ~\n'}, "bash x.sh /tmp/scratch"),
    ({"x.sh": 'f() { shift; rm -rf "$1"; }\nf a ~\n'}, "bash x.sh /tmp/z"),
    ({"sub/x.sh": WIPE_HOME}, "cd sub && bash x.sh"),
    ({"sub/x.sh": WIPE_HOME}, "bash sub/x.sh"),
    ({"x.sh": WIPE_HOME}, "bash /proc/self/cwd/x.sh"),  # the shell's cwd, not the guard's
    ({"x.sh": WIPE_HOME}, "bash /proc/1/cwd/x.sh"),
    ({"outer.sh": "bash inner.sh\n", "inner.sh": WIPE_HOME}, "bash outer.sh"),
    ({"outer.sh": "source ./inner.sh\n", "inner.sh": FORCE_PUSH}, "./outer.sh"),
    ({"x.sh": "psql -c 'DROP TABLE users'\n"}, "bash x.sh"),
    ({"x.sh": "psql -f drop.sql\n", "drop.sql": DROP}, "bash x.sh"),
    ({"drop.sql": DROP}, "psql -f drop.sql"),
    ({"drop.sql": DROP}, "psql app --file=drop.sql"),
    ({"drop.sql": "TRUNCATE users;\n"}, "psql -f ./drop.sql"),
    ({"drop.sql": DROP}, "mysql < drop.sql"),
    ({"drop.sql": DROP}, "mysql -u root app < drop.sql"),
    ({"drop.sql": DROP}, "mariadb app < drop.sql"),
    ({"drop.sql": DROP}, "sqlite3 app.db '.read drop.sql'"),
    ({"drop.sql": DROP}, "sqlite3 app.db < drop.sql"),
    ({"drop.sql": DROP}, "sqlite3 -init drop.sql app.db .quit"),
    ({"drop.sql": DROP}, "duckdb app.db -f drop.sql"),
    ({"drop.sql": DROP}, "mysql app -e 'source drop.sql'"),
    ({"drop.sql": DROP}, "psql -c '\\i drop.sql'"),
    ({"setup.sql": "CREATE TABLE t (id int);\n\\i drop.sql\n", "drop.sql": DROP}, "psql -f setup.sql"),
    ({"setup.sql": ".read drop.sql\n", "drop.sql": DROP}, "sqlite3 app.db < setup.sql"),
    ({"setup.sql": "\\! rm -rf ~\n"}, "psql -f setup.sql"),
    ({"setup.sql": "-- schema\n\\i drop.sql\n", "drop.sql": DROP}, "psql < setup.sql"),
    ({"drop.sql": DROP}, "mysql --execute='source drop.sql'"),
    ({"drop.sql": DROP}, "sqlcmd -Q ':r drop.sql'"),
    ({"drop.js": "db.dropDatabase()\n"}, "mongosh app drop.js"),
    ({"x.sh": WIPE_HOME}, "BASH_ENV=x.sh bash -c true"),
    ({"x.sh": WIPE_HOME}, "bash --rcfile x.sh -i"),
    ({"x.sh": WIPE_HOME}, "ssh host < x.sh"),
    ({"x.py": "print(1)\n"}, "cat < x.py | python3"),  # code through a pipe stays unknown
    ({"x.sh": WIPE_HOME}, "cd \"$WHERE\" && bash x.sh"),
    ({"self.sh": "source self.sh\n"}, "source self.sh"),
    ({"a.sh": "bash b.sh\n", "b.sh": "bash a.sh\n"}, "bash a.sh"),
    ({"x.sh": "x=$(cat /tmp/cmd)\n$x -rf ~\n"}, "bash x.sh"),
    # changed earlier in the same command: what runs is not what is on disk now
    ({"ok.sh": "echo hi\n"}, "sed -i 's/echo hi/rm -rf ~/' ok.sh && bash ok.sh"),
    ({"ok.sh": "echo hi\n"}, "perl -pi -e 's/echo hi/rm -rf ~/' ok.sh; ./ok.sh"),
    ({"ok.sh": "echo hi\n"}, "gawk -i inplace '{print}' ok.sh && bash ok.sh"),
    ({"ok.sh": "echo hi\n"}, "tar xzf update.tgz && bash ok.sh"),
    ({"ok.sh": "echo hi\n"}, "unzip -o update.zip && sh ok.sh"),
    ({"ok.sh": "echo hi\n"}, "git switch feature && source ok.sh"),
]

SHOULD_ALLOW: list[tuple[dict[str, str], str]] = [
    ({"test.sh": "#!/bin/sh\nset -e\npytest -q\nruff check .\n"}, "bash test.sh"),
    ({"test.sh": "#!/bin/sh\nset -e\npytest -q\nruff check .\n"}, "./test.sh"),
    ({"test.sh": "#!/bin/sh\nset -e\npytest -q\nruff check .\n"}, "sh test.sh -k smoke"),
    ({"build.sh": "#!/usr/bin/env bash\nset -euo pipefail\nmkdir -p dist && cp -r src dist/\n"}, "bash build.sh"),
    ({"build.sh": "mkdir -p dist && cp -r src dist/\n"}, "./build.sh"),
    ({"scripts/test.sh": "cd \"$(dirname \"$0\")/..\"\npython -m pytest -q \"$@\"\n"}, "bash scripts/test.sh -x"),
    ({"setup.sql": "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);\n"
                   "INSERT INTO users (name) VALUES ('ada');\n"}, "psql -f setup.sql"),
    ({"setup.sql": "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);\n"
                   "INSERT INTO users (name) VALUES ('ada');\n"}, "sqlite3 app.db < setup.sql"),
    ({"setup.sql": "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);\n"}, "mysql app < setup.sql"),
    ({"setup.sql": "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);\n"}, "sqlite3 app.db '.read setup.sql'"),
    ({"query.sql": "SELECT name FROM users WHERE id = 1;\n"}, "duckdb app.db -f query.sql"),
    ({"report.js": "db.users.find({active: true}).count()\n"}, "mongosh app report.js"),
    ({"env.sh": "export APP_ENV=dev\nexport PATH=\"$PWD/bin:$PATH\"\n"}, "source env.sh && make test"),
    ({"env.sh": "export APP_ENV=dev\n"}, ". ./env.sh; echo \"$APP_ENV\""),
    ({"lint.sh": 'for f in "$@"; do echo "$f"; done\nruff format --check .\n'}, "bash lint.sh a b"),
    ({"greet.sh": 'name=${1:-world}\necho "hello $name"\n'}, "bash greet.sh ada"),
    ({"wrapper.sh": '#!/bin/sh\nAPP_HOME=$(cd "$(dirname "$0")" && pwd)\nexec java -jar "$APP_HOME/w.jar" "$@"\n'},
     "./wrapper.sh test"),
    ({"manage.py": "#!/usr/bin/env python3\nprint('migrated')\n"}, "./manage.py migrate"),
    ({"check.sh": "if [ -f pyproject.toml ]; then\n  ruff check .\nfi\ngit status --short\n"}, "bash check.sh"),
    ({"x.sh": WIPE_HOME}, "bash -n x.sh"),  # a syntax check runs nothing
    ({"test.sh": "pytest -q\n"}, "chmod +x test.sh && ./test.sh"),
    ({"test.sh": "pytest -q\n"}, "cat test.sh && bash test.sh"),
    ({"test.sh": "pytest -q\n"}, "sed -n 1p test.sh && bash test.sh"),
    ({"test.sh": "pytest -q\n"}, "tar czf /tmp/src.tgz . && bash test.sh"),
    ({"test.sh": "pytest -q\n"}, "git status --short && bash test.sh"),
    ({}, "bash missing.sh"),
    ({}, "source missing.sh && echo ok"),
    ({}, "psql -f missing.sql"),
    ({}, "./missing-tool --help"),
]


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        path.chmod(0o755)


@pytest.fixture(scope="module")
def guard() -> Guard:
    return Guard(temp_dirs=["/tmp", "/var/tmp"])


@pytest.mark.parametrize(("files", "command"), SHOULD_DENY, ids=[c for _, c in SHOULD_DENY])
def test_a_destructive_script_on_disk_is_denied(guard: Guard, tmp_path: Path, files: dict[str, str],
                                                command: str) -> None:
    _write(tmp_path, files)
    decision = guard.check_command(command, str(tmp_path))
    assert decision.denied, (files, command)


@pytest.mark.parametrize(("files", "command"), SHOULD_ALLOW, ids=[c for _, c in SHOULD_ALLOW])
def test_an_everyday_script_on_disk_is_allowed(guard: Guard, tmp_path: Path, files: dict[str, str],
                                               command: str) -> None:
    _write(tmp_path, files)
    decision = guard.check_command(command, str(tmp_path))
    assert not decision.denied, (command, decision.reason)


def test_figures(guard: Guard, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The round's measure: should-deny cases denied and everyday cases wrongly denied (run with -s)."""
    denied = sum(_decide(guard, tmp_path_factory, files, command) for files, command in SHOULD_DENY)
    wrongly = sum(_decide(guard, tmp_path_factory, files, command) for files, command in SHOULD_ALLOW)
    print(f"\nscripts on disk: should-deny denied {denied}/{len(SHOULD_DENY)}, "
          f"everyday wrongly denied {wrongly}/{len(SHOULD_ALLOW)}")


def _decide(guard: Guard, factory: pytest.TempPathFactory, files: dict[str, str], command: str) -> bool:
    root = factory.mktemp("case")
    _write(root, files)
    return guard.check_command(command, str(root)).denied


def test_an_absolute_path_is_read_whatever_the_working_directory(guard: Guard, tmp_path: Path) -> None:
    _write(tmp_path, {"x.sh": WIPE_HOME})
    assert guard.check_command(f"bash {tmp_path}/x.sh", "/").denied
    assert guard.check_command(f"bash {tmp_path}/x.sh", None).denied


def test_a_symlink_is_read_through_to_its_target(guard: Guard, tmp_path: Path) -> None:
    _write(tmp_path, {"real/x.sh": WIPE_HOME})
    (tmp_path / "link.sh").symlink_to(tmp_path / "real" / "x.sh")
    decision = guard.check_command("bash link.sh", str(tmp_path))
    assert decision.denied and "x.sh" in decision.reason


def test_a_script_too_big_to_read_is_denied_with_a_reason(guard: Guard, tmp_path: Path) -> None:
    (tmp_path / "big.sh").write_text("echo hi\n" * (MAX_SCRIPT_BYTES // 8 + 1), encoding="utf-8")
    decision = guard.check_command("bash big.sh", str(tmp_path))
    assert decision.denied and "big.sh" in decision.reason and "KiB" in decision.reason


def test_a_script_that_is_not_a_regular_file_is_denied(guard: Guard, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.sh")  # reading it would block until something writes: never opened
    decision = guard.check_command("bash fifo.sh", str(tmp_path))
    assert decision.denied and "regular file" in decision.reason


def test_a_script_sourcing_itself_is_denied_with_a_reason(guard: Guard, tmp_path: Path) -> None:
    _write(tmp_path, {"self.sh": "echo again\nsource ./self.sh\n"})
    decision = guard.check_command("bash self.sh", str(tmp_path))
    assert decision.denied and "self.sh" in decision.reason


def test_a_binary_is_not_read_as_a_script(guard: Guard, tmp_path: Path) -> None:
    (tmp_path / "tool").write_bytes(b"\x7fELF\x02\x01\x01\x00" + b"rm -rf ~\n" * 4)
    (tmp_path / "tool").chmod(0o755)
    assert not guard.check_command("./tool --version", str(tmp_path)).denied


def test_a_binary_handed_to_a_shell_runs_nothing(guard: Guard, tmp_path: Path) -> None:
    (tmp_path / "tool").write_bytes(b"\x7fELF\x02\x01\x01\x00" + b"\x00" * MAX_SCRIPT_BYTES)
    assert not guard.check_command("bash tool", str(tmp_path)).denied  # bash: cannot execute binary file
    (tmp_path / "late.sh").write_bytes(b"#" * 100 + b"\x00\n" + WIPE_HOME.encode())  # a NUL past bash's 80 bytes
    assert guard.check_command("bash late.sh", str(tmp_path)).denied


def test_a_virtualenv_activate_script_is_allowed(guard: Guard, tmp_path: Path) -> None:
    venv.EnvBuilder(with_pip=False, symlinks=True).create(tmp_path / ".venv")
    for command in ("source .venv/bin/activate && pytest -q", ". .venv/bin/activate; pip install -e .",
                    "source .venv/bin/activate && deactivate"):
        decision = guard.check_command(command, str(tmp_path))
        assert not decision.denied, (command, decision.reason)


def test_a_script_on_another_host_is_not_read_here(guard: Guard, tmp_path: Path) -> None:
    _write(tmp_path, {"x.sh": WIPE_HOME})
    assert not guard.check_command(f"ssh host bash {tmp_path}/x.sh", str(tmp_path)).denied


def test_a_relative_script_with_no_known_directory_stays_as_before(guard: Guard) -> None:
    assert not guard.check_command("bash scripts/test.sh", None).denied


def test_source_takes_a_name_without_a_slash_from_path_first(guard: Guard, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, {"project/lib.sh": "export A=1\n", "bin/lib.sh": WIPE_HOME, "bin/tool.sh": FORCE_PUSH})
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ.get('PATH', '')}")
    project = str(tmp_path / "project")
    assert guard.check_command("source lib.sh", project).denied  # bash sources $PATH's lib.sh, not ./lib.sh
    assert guard.check_command("bash tool.sh", project).denied  # not here: bash looks on $PATH
    assert not guard.check_command("source ./lib.sh", project).denied


def test_cd_to_the_checkout_root_is_followed(guard: Guard, tmp_path: Path) -> None:
    _write(tmp_path, {".git/HEAD": "ref: refs/heads/main\n", "scripts/test.sh": "pytest -q\n",
                      "scripts/clean.sh": WIPE_HOME, "src/pkg/mod.py": ""})
    inside = str(tmp_path / "src" / "pkg")
    assert not guard.check_command('cd "$(git rev-parse --show-toplevel)" && ./scripts/test.sh', inside).denied
    decision = guard.check_command('cd "$(git rev-parse --show-toplevel)" && bash scripts/clean.sh', inside)
    assert decision.denied and "clean.sh" in decision.reason


# --- scripts git has as committed: the project's own code ----------------------------------------

GRADLEW = '#!/bin/sh\nJAVACMD="$JAVA_HOME/bin/java"\nexec "$JAVACMD" -classpath "$CLASSPATH" "$@"\n'
"""Shaped like Gradle's wrapper: what it runs is named by a variable only known at run time."""


def _committed(root: Path, files: dict[str, str]) -> None:
    _write(root, files)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "project")


def test_a_committed_wrapper_whose_program_is_a_variable_is_allowed(guard: Guard, tmp_path: Path) -> None:
    _committed(tmp_path, {"gradlew": GRADLEW})
    for command in ("./gradlew test", "bash gradlew build", "sh ./gradlew --version", "bash < gradlew"):
        decision = guard.check_command(command, str(tmp_path))
        assert not decision.denied, (command, decision.reason)


def test_the_same_wrapper_written_since_or_edited_is_judged_strictly(guard: Guard, tmp_path: Path) -> None:
    _write(tmp_path, {"gradlew": GRADLEW})
    assert guard.check_command("./gradlew test", str(tmp_path)).denied  # not in git at all
    _committed(tmp_path / "repo", {"README": "x\n"})
    _write(tmp_path / "repo", {"gradlew": GRADLEW})
    assert guard.check_command("./gradlew test", str(tmp_path / "repo")).denied  # new, untracked
    git(tmp_path / "repo", "add", "gradlew")
    assert guard.check_command("./gradlew test", str(tmp_path / "repo")).denied  # staged, not committed
    git(tmp_path / "repo", "commit", "-q", "-m", "wrapper")
    assert not guard.check_command("./gradlew test", str(tmp_path / "repo")).denied
    (tmp_path / "repo" / "gradlew").write_text(GRADLEW + 'c=$(cat name); $c\n', encoding="utf-8")
    assert guard.check_command("./gradlew test", str(tmp_path / "repo")).denied  # edited since


def test_what_a_committed_script_is_known_to_do_is_still_judged(guard: Guard, tmp_path: Path) -> None:
    _committed(tmp_path, {"clean.sh": GRADLEW + WIPE_HOME, "reset.sql": DROP})
    assert guard.check_command("bash clean.sh", str(tmp_path)).denied
    assert guard.check_command("psql -f reset.sql", str(tmp_path)).denied


def test_a_committed_script_handed_arguments_only_known_at_run_time_is_strict(guard: Guard, tmp_path: Path) -> None:
    _committed(tmp_path, {"run.sh": '#!/bin/sh\nexec "$@"\n'})
    assert not guard.check_command("./run.sh pytest -q", str(tmp_path)).denied
    assert guard.check_command("./run.sh $(cat next-command.txt)", str(tmp_path)).denied


def test_a_committed_script_a_command_may_rewrite_first_is_strict(guard: Guard, tmp_path: Path) -> None:
    _committed(tmp_path, {"gradlew": GRADLEW})
    assert guard.check_command("git checkout other -- gradlew && ./gradlew test", str(tmp_path)).denied


def test_a_committed_sql_dump_too_big_to_read_is_allowed(guard: Guard, tmp_path: Path) -> None:
    dump = "INSERT INTO t VALUES (1);\n" * (MAX_SCRIPT_BYTES // 26 + 2)
    _write(tmp_path, {"seed.sql": dump})
    assert guard.check_command("mysql app < seed.sql", str(tmp_path)).denied  # not in git: unknown
    _committed(tmp_path, {})
    assert not guard.check_command("mysql app < seed.sql", str(tmp_path)).denied


def test_git_is_asked_once_per_script_however_deeply_it_is_run(guard: Guard, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    analyze = importlib.import_module("kilo_loop.guard.shell.analyze")
    asked: list[str] = []

    def committed(path: str) -> bool:
        asked.append(path)
        return True

    monkeypatch.setattr(analyze, "committed_unchanged", committed)
    _write(tmp_path, {"outer.sh": '"$CMD"\nbash inner.sh\n', "inner.sh": GRADLEW})
    assert not guard.check_command("bash outer.sh", str(tmp_path)).denied
    assert sorted(asked) == [str(tmp_path / "inner.sh"), str(tmp_path / "outer.sh")]  # each once
