"""`kilo-loop doctor`: each check passing and failing, the --json schema, the exit codes.

The checks are pure (`doctor.checks`); the probe is driven with fake CLI scripts on a PATH of
their own, a database file that is not sqlite, and a port held by a socket of this test.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from kilo_loop.cli import main
from kilo_loop.doctor import checks
from kilo_loop.doctor.checks import Check, exit_code, line
from kilo_loop.doctor.preflight import cache_file, failure_message, flag_check
from kilo_loop.doctor.probe import backend_checks, machine_checks, port_free, preflight

KILO_HELP = "  --format  --auto  --agent  --model  --variant  --thinking  --title  -s, --session  "


def fake_kilo(bin_dir: Path, *, help_text: str = KILO_HELP, debug_config: str = "resolve", db: str = "") -> Path:
    """A `kilo` that answers the doctor's questions like the real one (or not, as told)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    debug = {
        "resolve": 'printf \'{"provider":{"loop":{"options":{"apiKey":"%s"}}}}\\n\' "$KILO_LOOP_OPENAI_API_KEY"',
        "literal": 'printf \'{"provider":{"loop":{"options":{"apiKey":"{env:KILO_LOOP_OPENAI_API_KEY}"}}}}\\n\'',
        "absent": "printf '{\"provider\":{}}\\n'",
        "fails": "echo 'unknown command' >&2; exit 1",
    }[debug_config]
    script = f"""#!/bin/sh
case "$1 $2" in
  "--version "*) echo 7.7.7 ;;
  "run --help") echo '{help_text}' ;;
  "debug config") {debug} ;;
  "serve --help") echo 'kilo serve' ;;
  "db path") echo '{db}' ;;
  *) exit 1 ;;
esac
"""
    path = bin_dir / "kilo"
    path.write_text(script, encoding="utf-8")
    path.chmod(0o755)
    return path


def environ(bin_dir: Path, tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path / "home"), **extra}


def by_name(found: list[Check]) -> dict[str, Check]:
    return {check.check: check for check in found}


@pytest.fixture
def kilo_db(tmp_path: Path) -> Path:
    path = tmp_path / "kilo.db"
    db = sqlite3.connect(path)
    db.executescript("CREATE TABLE session (id text); CREATE TABLE message (id text);")
    db.close()
    return path


# ----------------------------------------------------------------------------- pure checks
def test_exit_codes() -> None:
    ok, warn, fail = Check("a", "ok", ""), Check("b", "warn", ""), Check("c", "fail", "")
    assert exit_code([ok], strict=True) == 0
    assert exit_code([ok, warn], strict=False) == 0
    assert exit_code([ok, warn], strict=True) == 2
    assert exit_code([warn, fail], strict=True) == 1


def test_a_line_has_the_mark_and_the_fix_only_when_not_ok() -> None:
    assert line(Check("git", "ok", "git 2.39", "never shown")) == "✓ git: git 2.39"
    assert line(Check("port", "warn", "in use", "pick another")) == "! port: in use — fix: pick another"
    assert line(Check("kilo: binary", "fail", "not found", "install")).startswith("✗ kilo: binary")


def test_flags_are_matched_as_whole_words() -> None:
    assert checks.missing_flags("--models --title", ["--model", "--title"]) == ["--model"]
    assert checks.flags("kilo", KILO_HELP, "7.7.7").status == "ok"
    missing = checks.flags("kilo", KILO_HELP.replace("--variant", ""), "7.7.7")
    assert missing.status == "fail" and "--variant" in missing.detail and "7.7.7" in missing.detail
    assert checks.flags("kilo", None, None).status == "fail"


def test_a_hidden_flag_with_a_documented_new_name_is_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(checks.LOOP_FLAGS, "opencode", ("--format", "--old-auto|--auto"))
    check = checks.flags("opencode", "--format --auto", "1.18.33")
    assert check.status == "warn" and "--old-auto" in check.detail and "--auto" in check.detail
    assert checks.flags("opencode", "--format", "1").status == "fail"


def test_opencode_is_asked_for_its_documented_auto_flag() -> None:
    help_text = "--format --auto --agent --model --variant --thinking --title --session"
    assert checks.flags("opencode", help_text, "1.18.33").status == "ok"
    assert checks.flags("opencode", help_text.replace("--auto", ""), "1").status == "fail"


@pytest.mark.parametrize(("view", "status"), [("ok", "ok"), ("unavailable", "warn"), ("leaked", "fail"),
                                              ("missing", "fail"), ("unresolved", "fail"), ("none", "ok"),
                                              ("legacy-read", "ok"), ("legacy-ignored", "warn"),
                                              ("legacy-unsupported", "warn")])
def test_provider_views(view: checks.ProviderView, status: str) -> None:
    assert checks.provider("kilo", view).status == status


def test_machine_checks_pass_and_fail() -> None:
    assert checks.git(None).status == "fail" and checks.git("git version 2.39.5").status == "ok"
    assert checks.python((3, 10, 4)).status == "fail" and checks.python((3, 11, 7)).status == "ok"
    assert checks.port(7999, False).status == "warn" and checks.port(7999, True).status == "ok"
    assert checks.dependencies({"click": "8", "rich": None}).status == "fail"
    assert checks.dependencies({"click": "8"}).status == "ok"
    assert checks.binary("kilo", "/x/kilo", "", "npm i", "KILO_BIN").status == "warn"
    assert checks.server("kilo", False).status == "warn" and checks.usage_db("kilo", "p", "gone").status == "warn"


# ----------------------------------------------------------------------------- the probe
def test_every_kilo_check_passes_against_a_kilo_that_has_it_all(tmp_path: Path, kilo_db: Path) -> None:
    bin_dir = tmp_path / "bin"
    fake_kilo(bin_dir, db=str(kilo_db))
    found = backend_checks("kilo", environ(bin_dir, tmp_path), tmp_path)
    assert [(c.check, c.status) for c in found] == [
        ("kilo: binary", "ok"), ("kilo: flags the loop uses", "ok"), ("kilo: provider injection", "ok"),
        ("kilo: server transport", "ok"), ("kilo: usage database", "ok")], found
    assert "7.7.7" in found[0].detail


def test_a_missing_binary_is_a_failure_with_the_install_command(tmp_path: Path) -> None:
    found = backend_checks("kilo", environ(tmp_path / "empty-bin", tmp_path), tmp_path)
    assert len(found) == 1 and found[0].status == "fail"
    assert "npm install" in found[0].fix and "KILO_BIN" in found[0].fix


def test_an_unsupported_flag_fails(tmp_path: Path, kilo_db: Path) -> None:
    bin_dir = tmp_path / "bin"
    fake_kilo(bin_dir, help_text=KILO_HELP.replace("--title", ""), db=str(kilo_db))
    flags = by_name(backend_checks("kilo", environ(bin_dir, tmp_path), tmp_path))["kilo: flags the loop uses"]
    assert flags.status == "fail" and "--title" in flags.detail


@pytest.mark.parametrize(("debug_config", "status"), [("literal", "fail"), ("absent", "fail"), ("fails", "warn")])
def test_provider_injection_not_verified(tmp_path: Path, kilo_db: Path, debug_config: str, status: str) -> None:
    bin_dir = tmp_path / "bin"
    fake_kilo(bin_dir, debug_config=debug_config, db=str(kilo_db))
    check = by_name(backend_checks("kilo", environ(bin_dir, tmp_path), tmp_path))["kilo: provider injection"]
    assert check.status == status


def test_the_key_of_the_operator_never_reaches_the_doctors_output(tmp_path: Path, kilo_db: Path) -> None:
    bin_dir = tmp_path / "bin"
    fake_kilo(bin_dir, db=str(kilo_db))
    secret = "sk-operator-secret-for-doctor-test"
    found = backend_checks("kilo", environ(bin_dir, tmp_path, KILO_LOOP_OPENAI_API_KEY=secret), tmp_path)
    assert secret not in json.dumps([c.as_dict() for c in found])


@pytest.mark.parametrize("kind", ["not-sqlite", "missing", "foreign"])
def test_an_unreadable_usage_db_is_a_warning(tmp_path: Path, kind: str) -> None:
    db = tmp_path / "kilo.db"
    if kind == "not-sqlite":
        db.write_bytes(b"garbage" * 1000)
    elif kind == "foreign":
        sqlite3.connect(db).execute("CREATE TABLE other (x)").connection.close()
    bin_dir = tmp_path / "bin"
    fake_kilo(bin_dir)
    env = environ(bin_dir, tmp_path, KILO_LOOP_USAGE_DB_PATH=str(db))
    check = by_name(backend_checks("kilo", env, tmp_path))["kilo: usage database"]
    assert check.status == "warn" and str(db) in check.detail


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_a_busy_port_is_a_warning(busy_port: int) -> None:
    assert not port_free(busy_port)
    check = by_name(machine_checks({"PATH": os.environ["PATH"]}, busy_port))["dashboard port"]
    assert check.status == "warn" and str(busy_port) in check.detail


def test_git_missing_from_path_fails(tmp_path: Path) -> None:
    assert by_name(machine_checks({"PATH": str(tmp_path)}, 0))["git"].status == "fail"


# ----------------------------------------------------------------------------- the command
def run_doctor(args: list[str], env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    for name in list(os.environ):
        if name.endswith("_BIN") or name.startswith(("KILO_LOOP_", "OPENAI_")):
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(main, ["doctor", *args], catch_exceptions=False)
    return result.exit_code, result.output


def test_json_schema_and_exit_codes(tmp_path: Path, kilo_db: Path, busy_port: int,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    fake_kilo(bin_dir, db=str(kilo_db))
    env = environ(bin_dir, tmp_path)
    env["PATH"] += ":" + str(Path(sys.executable).parent)
    code, output = run_doctor(["--runtime", "kilo", "--json", "--port", "0"], env, monkeypatch)
    rows = json.loads(output)
    assert code == 0, output
    assert all(set(row) == {"check", "status", "detail", "fix"} for row in rows)
    assert {row["status"] for row in rows} == {"ok"}
    code, output = run_doctor(["--runtime", "kilo", "--port", str(busy_port)], env, monkeypatch)
    assert code == 0 and "! dashboard port" in output and "✓ kilo: binary" in output
    code, _ = run_doctor(["--runtime", "kilo", "--port", str(busy_port), "--strict"], env, monkeypatch)
    assert code == 2
    code, output = run_doctor(["--runtime", "claude", "--port", "0"], env, monkeypatch)
    assert code == 1 and "✗ claude: binary: not found" in output


def test_preflight_reports_only_the_chosen_clis_failures(tmp_path: Path) -> None:
    complete = fake_kilo(tmp_path / "complete")
    lacking = fake_kilo(tmp_path / "lacking", help_text=KILO_HELP.replace("--session", ""))
    env = environ(tmp_path / "complete", tmp_path)
    assert preflight([("kilo", str(complete))], env) == []
    failed = preflight([("kilo", str(complete)), ("kilo", str(lacking)), ("dry-run", "x")], env)
    assert len(failed) == 1 and failed[0].status == "fail" and "--session" in failed[0].detail


def test_preflight_caches_per_binary_and_never_caches_a_failed_help(tmp_path: Path) -> None:
    binary = fake_kilo(tmp_path / "bin")
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    asked: list[list[str]] = []

    def read_help(command: list[str]) -> str | None:
        asked.append(command)
        return KILO_HELP

    assert flag_check("kilo", str(binary), env, read_help).status == "ok"
    assert flag_check("kilo", str(binary), env, read_help).status == "ok"
    assert asked == [[str(binary), "run", "--help"]]
    cached = json.loads(cache_file(env).read_text())["help"]
    assert KILO_HELP not in json.dumps(cached)  # only the loop's flags are kept, not the help text
    os.utime(binary, ns=(1, 1))  # another install of the CLI
    assert flag_check("kilo", str(binary), env, lambda _command: None).status == "fail"
    assert flag_check("kilo", str(binary), env, read_help).status == "ok" and len(asked) == 2
    cache_file(env).write_text("{not json", encoding="utf-8")
    assert flag_check("kilo", str(binary), env, read_help).status == "ok" and len(asked) == 3
    assert failure_message([checks.flags("kilo", "--format", None)]).startswith("pre-flight failed")


@pytest.mark.parametrize("port", ["-1", "65536", "99999"])
def test_a_port_no_socket_can_have_is_a_usage_error_not_a_traceback(port: str) -> None:
    result = CliRunner().invoke(main, ["doctor", "--runtime", "cursor", "--port", port])
    assert result.exit_code == 2 and result.exception is not None and isinstance(result.exception, SystemExit)
    assert "Invalid value for '--port'" in result.output and "0<=x<=65535" in result.output


def test_the_projects_kilo_bin_names_the_binary_the_doctor_checks(tmp_path: Path, kilo_db: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    binary = fake_kilo(tmp_path / "elsewhere", db=str(kilo_db))  # not on PATH: only the config names it
    project = tmp_path / "project"
    (project / ".kilocode-loop").mkdir(parents=True)
    (project / ".kilocode-loop" / "config.json").write_text(json.dumps({"kiloBin": str(binary)}))
    _code, output = run_doctor(["--runtime", "kilo", "--port", "0", "-C", str(project)],
                               environ(tmp_path / "bin", tmp_path), monkeypatch)
    assert f"✓ kilo: binary: {binary}" in output, output


def test_a_config_the_run_would_refuse_is_a_failed_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".kilocode-loop").mkdir()
    (tmp_path / ".kilocode-loop" / "config.json").write_text('{"iterations": "many"}')
    code, output = run_doctor(["--runtime", "claude", "--port", "0", "-C", str(tmp_path), "--json"],
                              environ(tmp_path / "bin", tmp_path), monkeypatch)
    rows = by_name([Check(**row) for row in json.loads(output)])
    assert code == 1 and rows["config"].status == "fail"
    assert "key 'iterations'" in rows["config"].detail and rows["config"].fix


def test_doctor_probes_the_configured_provider_config_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kilo_loop.commands.doctor import project_environ

    (tmp_path / ".kilocode-loop").mkdir()
    (tmp_path / ".kilocode-loop" / "config.json").write_text('{"providerConfigMode": "legacy_env"}')
    monkeypatch.delenv("KILO_LOOP_PROVIDER_CONFIG_MODE", raising=False)
    assert project_environ(tmp_path).provider_mode == "legacy_env"
    monkeypatch.setenv("KILO_LOOP_PROVIDER_CONFIG_MODE", "none")
    assert project_environ(tmp_path).provider_mode == "none"
