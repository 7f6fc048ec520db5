"""sed scripts read command by command: GNU sed's `e` command and `s///e` flag run a shell, whatever the
address in front of them; an `e` inside the text of `s`, `y`, `a`/`i`/`c` or a file name is not a command.

The scripts are data: they go to `sed_executes`, never to sed or a shell."""

from __future__ import annotations

import pytest

from kilo_loop.guard.shell.sed import sed_executes


@pytest.mark.parametrize("script", [
    "e date", "1e date", "$e date", "0~2e date", "/x/e date", "/x/I e date", "\\,x,e date", "1,$e date",
    "1,+3e date", "5!e date", "/a/,/b/{e date", "p;e date", "s/.*/date/e", "s|a|b|ge", "1{s/x/date/e}", "e",
])
def test_commands_that_run_a_shell(script: str) -> None:
    assert sed_executes(script) is not None, script


@pytest.mark.parametrize("script", [
    "s/a/e b/", "s/old_name/new_name/g", "/^def /p", "/^$/d", "1i # header e x", "/a/a text e here",
    "s/x/y/w out.e", "y/abc/xyz/", "1,5d", "$!N;P;D", ":a;N;ba", "s/e/E/2", "/e/d",
])
def test_scripts_that_do_not(script: str) -> None:
    assert sed_executes(script) is None, script
