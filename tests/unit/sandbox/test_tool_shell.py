"""The jailed server's SHELL: each command in a user namespace of its own, the user's shell kept."""

from __future__ import annotations

from pathlib import Path

from kilo_loop.sandbox.toolshell import real_shell, wrapper_text, write_tool_shell


def test_the_wrapper_runs_the_shell_in_a_user_namespace_of_its_own(tmp_path: Path) -> None:
    path = write_tool_shell(tmp_path / "jail", "/usr/bin/unshare", "/usr/bin/zsh")
    assert path.name == "zsh"  # the CLIs pick their shell flags by the name
    assert path.read_text(encoding="utf-8") == '#!/bin/sh\nexec /usr/bin/unshare --user -- /usr/bin/zsh "$@"\n'
    assert path.stat().st_mode & 0o777 == 0o555
    assert write_tool_shell(tmp_path / "jail", "/usr/bin/unshare", "/usr/bin/zsh") == path  # a restart's


def test_a_shell_the_clis_refuse_becomes_bash() -> None:
    assert Path(real_shell("/usr/bin/fish")).name in ("bash", "sh")
    assert Path(real_shell(None)).name in ("bash", "sh")
    assert real_shell("/bin/dash") == "/bin/dash"
    assert wrapper_text("/u", "/bin/sh").endswith('exec /u --user -- /bin/sh "$@"\n')
