"""Guard classes closed in round 5 (issue 23, item 6). Commands are data: they go to the guard
in-process, never to a shell."""

from __future__ import annotations

import pytest

from kilo_loop.safety.guard import Guard
from kilo_loop.safety.shell.parse import join_continuations

PROJECT = "/repo"


@pytest.fixture(scope="module")
def guard() -> Guard:
    return Guard()


@pytest.mark.parametrize(("source", "joined"), [
    (b"r\\\nm -rf x", b"rm -rf x"),
    (b"git pu\\\nsh", b"git push"),
    (b'echo "a\\\nb"', b'echo "ab"'),
    (b"echo 'a\\\nb'", b"echo 'a\\\nb'"),  # single quotes keep it
    (b"echo $'a\\\nb'", b"echo $'a\\\nb'"),
    (b"# note \\\nls", b"# note \\\nls"),  # a comment ends at the newline
    (b"cat <<'E'\na\\\nb\nE", b"cat <<'E'\na\\\nb\nE"),  # a quoted heredoc is literal
    (b"cat <<E\na\\\nb\nE", b"cat <<E\nab\nE"),
    (b"echo a\\\\\nb", b"echo a\\\\\nb"),  # an escaped backslash leaves the newline
    (b"echo $(ec\\\nho x)", b"echo $(echo x)"),
])
def test_backslash_newline_is_removed_where_bash_removes_it(source: bytes, joined: bytes) -> None:
    assert join_continuations(source) == joined


def test_a_continuation_that_makes_a_comment_a_word_is_followed() -> None:
    # bash reads `echo a#b rm -rf x`: the `#` is inside a word once the pair is gone
    assert join_continuations(b"echo a\\\n#b \\\nrm -rf x") == b"echo a#b rm -rf x"
