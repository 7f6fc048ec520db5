"""`kilo-loop note` finds the run's API in its api.json (0600) and says plainly when there is none to reach."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from kilo_loop.commands.note import note_command
from kilo_loop.web.api_file import NoRunApi, read_api_file, remove_api_file, write_api_file


def _run_dir(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    run = tmp_path / ".kilocode-loop" / "runs" / "20261202-000000-0001"
    run.mkdir(parents=True)
    (run / "state.json").write_text('{"runId": "20261202-000000-0001", "project": "p", "goalTitle": "g"}')
    return run


def test_the_api_file_is_private_and_names_a_live_process(tmp_path: Path) -> None:
    write_api_file(tmp_path, "http://127.0.0.1:1234/", "tok")
    assert stat.S_IMODE((tmp_path / "api.json").stat().st_mode) == 0o600
    api = read_api_file(tmp_path)
    assert (api.url, api.token, api.pid) == ("http://127.0.0.1:1234/", "tok", os.getpid())
    remove_api_file(tmp_path)
    with pytest.raises(NoRunApi, match="no dashboard"):
        read_api_file(tmp_path)


def test_a_run_whose_process_ended_is_named_as_such(tmp_path: Path) -> None:
    beyond_pid_max = 2**22 + 7  # Linux never hands out a pid above 2**22
    (tmp_path / "api.json").write_text(f'{{"url": "http://127.0.0.1:1/", "token": "t", "pid": {beyond_pid_max}}}')
    with pytest.raises(NoRunApi, match="not running any more"):
        read_api_file(tmp_path)


def test_note_without_text_or_with_no_dashboard_says_what_to_do(tmp_path: Path) -> None:
    _run_dir(tmp_path)
    runner = CliRunner()
    usage = runner.invoke(note_command, ["-C", str(tmp_path)])
    assert usage.exit_code == 2 and "TEXT" in usage.output
    missing = runner.invoke(note_command, ["-C", str(tmp_path), "use utils/"])
    assert missing.exit_code != 0 and isinstance(missing.exception, NoRunApi)
    assert "--no-dashboard" in str(missing.exception)
