"""Properties of the guard over generated input: it never crashes, quoted data never runs,
wrappers never hide a destructive command."""

from __future__ import annotations

import shlex

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kilo_loop.safety.guard import Guard

GUARD = Guard(temp_dirs=["/tmp"])
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_SHELLISH = st.lists(st.sampled_from([
    "git ", "push ", "commit ", "rm ", "-rf ", "-r ", "/", "/tmp", "~", "..", "*", "cd ", "&&", "||", ";", "|",
    "&", "(", ")", "{", "}", "$(", "`", "'", '"', "\\", "\n", "<<EOF\n", "EOF", "<<<", ">", "$TMPDIR", "${",
    "$HOME", "bash -c ", "eval ", "sudo ", "env ", "xargs ", "[[ ", " ]]", "case ", " in ", ";;", "esac",
    "$((", "))", "for ", "do ", "done", "if ", "then ", "fi", "python -c ", "find . -exec ", "{} +", "x", " ",
    "=", "#", "!", "é", "\x00", "\t",
]), max_size=40).map("".join)
_ANY_TEXT = st.one_of(st.text(max_size=200), _SHELLISH)
_DESTRUCTIVE = st.sampled_from([
    "git push", "git commit -m x", "git reset --hard", "git clean -fdx", "npm publish", "rm -rf /home/me",
    "rm -rf ~", "dd if=/dev/zero of=/dev/sda", "git push --force origin main",
])
_WRAP = st.sampled_from([
    "{}", "sudo {}", "env FOO=1 {}", "command {}", "nohup {}", "nice -n 5 {}", "timeout 10 {}", "time {}",
    "ls && {}", "false || {}", "echo a; {}", "echo a | {}", "({})", "{{ {}; }}", "echo $({})", "echo `{}`",
    "bash -c {q}", "sh -c {q}", "eval {q}", "bash <<<{q}", "if true; then {}; fi", "[[ -n x ]] && {}",
])


@SETTINGS
@given(command=_ANY_TEXT, cwd=st.sampled_from([None, "/tmp/w", "/repo", "relative"]))
def test_arbitrary_text_never_crashes(command: str, cwd: str | None) -> None:
    decision = GUARD.check_command(command, cwd)
    assert decision.decision in ("allow", "deny")
    assert decision.rule != "guard-error", decision.reason
    assert (decision.rule is None) == (decision.decision == "allow")


@SETTINGS
@given(tool=st.text(max_size=12) | st.sampled_from(["bash", "write", "edit", "apply_patch"]),
       tool_input=st.dictionaries(st.sampled_from(["command", "filePath", "workdir", "patchText", "edits", "x"]),
                                  st.one_of(st.text(max_size=60), st.integers(), st.none(),
                                            st.lists(st.dictionaries(st.text(max_size=8), st.text(max_size=8))))))
def test_arbitrary_tool_uses_never_crash(tool: str, tool_input: dict[str, object]) -> None:
    assert GUARD.check_tool_use(tool, tool_input, "/repo").decision in ("allow", "deny")


@SETTINGS
@given(text=_ANY_TEXT.filter(lambda t: "\x00" not in t))  # a NUL cannot be in a bash command: it is denied
def test_single_quoted_data_never_runs(text: str) -> None:
    quoted = "'" + text.replace("'", "'\\''") + "'"
    for command in (f"echo {quoted}", f"grep -n {quoted} notes.md"):
        assert GUARD.check_command(command).decision == "allow", command


@SETTINGS
@given(command=_DESTRUCTIVE, wrap=_WRAP)
def test_wrappers_never_hide_a_destructive_command(command: str, wrap: str) -> None:
    wrapped = wrap.format(command, q=shlex.quote(command))
    assert GUARD.check_command(wrapped, "/repo").decision == "deny", wrapped


@SETTINGS
@given(name=st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,15}", fullmatch=True).filter(lambda n: n not in (".", "..")))
def test_recursive_delete_inside_temp_only(name: str) -> None:
    assert GUARD.check_command(f"rm -rf /tmp/{name}").decision == "allow"
    assert GUARD.check_command(f"cd /tmp && rm -rf {shlex.quote(name)}").decision == "allow"
    assert GUARD.check_command(f"rm -rf /tmp/{name}/../..").decision == "deny"
    assert GUARD.check_command(f"rm -rf {shlex.quote(name)}", "/repo").decision == "deny"
