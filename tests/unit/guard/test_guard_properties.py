"""Properties of the guard over generated input: the parser never crashes or hangs, quoted data
never runs, a command decides the same bare, wrapped in any known wrapper or handed over as a
shell string. Every command here is data for Guard.check_command, never run."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kilo_loop.guard.runtime import Guard
from kilo_loop.guard.shell import parse as parse_module
from kilo_loop.guard.shell.parse import parse
from tests.support.paths import SRC

GUARD = Guard(temp_dirs=["/tmp"])
SRC = SRC
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


# ----------------------------------------------------------------------------- the tree-sitter parser
BOUNDED = settings(max_examples=200, deadline=timedelta(seconds=5), suppress_health_check=[HealthCheck.too_slow])


@BOUNDED
@given(raw=st.binary(max_size=400))
def test_parser_never_crashes_or_hangs_on_arbitrary_bytes(raw: bytes) -> None:
    tree = parse(raw)
    assert isinstance(tree, str) or tree.type == "program"
    decision = GUARD.check_command(raw.decode("utf-8", "surrogateescape"), "/repo")
    assert decision.decision in ("allow", "deny") and decision.rule != "guard-error", decision


@BOUNDED
@given(command=_ANY_TEXT, repeat=st.integers(min_value=1, max_value=40))
def test_parser_never_hangs_on_long_repetitive_text(command: str, repeat: int) -> None:
    decision = GUARD.check_command(command * repeat, None)
    assert decision.rule != "guard-error", decision


# ----------------------------------------------------------------------------- wrapped = bare
_BARE = st.sampled_from([
    "git push", "git status", "git reset --hard", "git diff --stat", "git checkout -- .", "rm -rf /home/me",
    "rm -rf /tmp/scratch", "rm -f /tmp/x.log", "npm publish", "npm publish --dry-run", "npm test",
    "kubectl delete pod x", "kubectl get pods", "dd if=/dev/zero of=/dev/sda", "ls -la /srv",
    "docker system prune -af", "docker ps", "terraform destroy", "terraform plan", "psql -c 'DROP TABLE t'",
    "psql -c 'select 1'", "find / -delete", "find /tmp/w -name '*.o' -delete", "chmod -R 777 /",
    "python3 -c 'print(1)'", "shutdown -h now", "echo hello", "cat /etc/hostname", "kill -9 -1", "make test",
])
_ARGV_WRAPPERS = [
    "sudo {}", "sudo -u deploy {}", "doas {}", "pkexec {}", "runuser -u app -- {}", "env FOO=1 {}", "env -i {}",
    "command {}", "builtin {}", "exec {}", "nohup {}", "nice -n 5 {}", "time {}", "timeout 10 {}", "stdbuf -oL {}",
    "ionice -c3 {}", "taskset 0x1 {}", "taskset -c 0 {}", "setsid {}", "chronic {}", "unbuffer {}", "toybox {}",
    "busybox {}", "strace -f {}", "systemd-run --user {}", "unshare -r {}", "xvfb-run -a {}", "screen -dmS job {}",
    "poetry run {}", "uv run {}", "pipenv run {}", "pdm run {}", "hatch run {}", "conda run -n base {}",
    "npm exec -- {}", "pnpm exec {}", "direnv exec . {}", "watch -x {}", "flock /tmp/lock {}", "coproc {}",
    # round 3
    "run0 {}", "prlimit --nofile=10 {}", "cgexec -g cpu:grp {}", "ip netns exec ns1 {}", "nsenter -t 1 -m {}",
    "pixi run {}", "devbox run {}", "wsl -- {}", "nice --10 {}", "timeout -k 5 10 {}",
    # round 4
    "gdb --args {}", "gdb -q -batch --args {}", "valgrind {}", "valgrind --leak-check=full -q {}",
    "strace --output /tmp/t.log {}", "strace -o /tmp/t.log -e trace=file {}", "ltrace {}", "ltrace -n 2 -o /tmp/l {}",
    "deno run npm:{}", "deno run -A npm:{}",
]
_STRING_FORMS = [
    "bash -c {q}", "sh -c {q}", "zsh -c {q}", "bash -lc {q}", "eval {q}", "bash <<<{q}", "echo {q} | bash",
    "printf '%s\\n' {q} | sh", "su -c {q}", "su me -c {q}", "runuser -l app -c {q}", "sudo -s {q}",
    "tmux new-session -d {q}", "tmux send-keys -t w {q} Enter", "watch -n 5 {q}", "flock /tmp/l -c {q}",
    "at now <<<{q}", "parallel ::: {q}", "script -qc {q} /dev/null", "bash <<'EOF'\n{}\nEOF", "trap {q} EXIT",
    "npx -c {q}",
    # round 3
    "ksh93 -c {q}", "bash -O extglob -c {q}", "sh -ec {q}", "busybox sh -c {q}", "docker exec c sh -c {q}",
    "kubectl exec p -- sh -c {q}", "source <(echo {q})", "bash -c \"$(printf '%s' {q})\"", "eval -- {q}",
    "capsh -- -c {q}",
]


@SETTINGS
@given(bare=_BARE, wrap=st.sampled_from(_ARGV_WRAPPERS + _STRING_FORMS))
def test_any_wrapper_or_shell_string_is_decided_like_the_bare_command(bare: str, wrap: str) -> None:
    wrapped = wrap.replace("{q}", shlex.quote(bare)).replace("{}", bare)
    expected = GUARD.check_command(bare, None).decision
    assert GUARD.check_command(wrapped, None).decision == expected, (bare, wrapped)


@SETTINGS
@given(bare=_BARE, outer=st.sampled_from(_ARGV_WRAPPERS), inner=st.sampled_from(_STRING_FORMS))
def test_wrappers_nest(bare: str, outer: str, inner: str) -> None:
    wrapped = outer.replace("{}", inner.replace("{q}", shlex.quote(bare)).replace("{}", bare))
    if "\n" in wrapped:
        return  # a heredoc cannot be an argv word
    expected = GUARD.check_command(bare, None).decision
    assert GUARD.check_command(wrapped, None).decision == expected, (bare, wrapped)


# tree-sitter-bash 0.25.1 segfaults on these (a `{`, a code point past U+7FFFF, a letter). It is an
# out-of-bounds read: whether one process crashes depends on its memory layout (about half did, here),
# so six fresh interpreters each parse them a few hundred times, and a regression fails this test
# instead of killing the whole run. The next test checks the mechanism deterministically.
_CRASHERS = ["{\U000fbc7e\u01c0", "{\U000c77eb\u02a5", "{\U0010ffff\u02a5"]
_PARSE_MANY = ("from kilo_loop.guard.shell.parse import parse\n"
               f"for n in range(300):\n    for text in {_CRASHERS!a}:\n        parse((text * (1 + n % 7)).encode())\n")


def test_code_points_that_crash_the_grammar_are_parsed_safely() -> None:
    for _ in range(6):
        result = subprocess.run([sys.executable, "-c", _PARSE_MANY], capture_output=True, text=True, timeout=60,
                                env={**os.environ, "PYTHONPATH": str(SRC)})
        assert result.returncode == 0, result.stderr[-2000:]


def test_the_grammar_is_only_shown_ascii(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bytes] = []
    real = parse_module._parser()

    class Recording:
        def parse(self, source: bytes) -> object:
            seen.append(source)
            return real.parse(source)

    monkeypatch.setattr(parse_module, "_parser", Recording)
    tree = parse("echo 'héllo' {日本} \U0001f680".encode())
    assert not isinstance(tree, str) and seen and all(source.isascii() for source in seen)


@pytest.mark.parametrize(("command", "decision"), [
    ("rm -rf ~/données", "deny"), ("rm -rf /tmp/é", "allow"), ("echo 'héllo wörld' > /tmp/x", "allow"),
    ("git push origin main # 🚀", "deny"), ("echo 日本語 && git status", "allow"),
])
def test_words_with_non_ascii_text_are_read_as_written(command: str, decision: str) -> None:
    assert GUARD.check_command(command, "/repo").decision == decision
