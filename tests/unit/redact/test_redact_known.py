"""Known secrets masked by value (``redact._masker``) and collected at start
(``redact._known``).  Every value here is a fake made for this file."""

from __future__ import annotations

import base64
import json
import string
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kilo_loop.redact import REDACTED, Redactor
from kilo_loop.redact._known import collect, dotenv_values, from_env, secret_env_name, values_in
from kilo_loop.redact._masker import KnownMasker, encodings

VALUE = "Qm4vT9xLp2Wz7Rk1Bn8Hc5Yd3Fg6Js0Ue"  # 34 characters, matches no pattern rule alone
TOKEN_ALPHABET = string.ascii_letters + string.digits + "-_.~+/=!@#%^&*"


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(known=[(VALUE, "environment")])


def _pieces(value: str, size: int = 8) -> set[str]:
    return {value[i:i + size] for i in range(len(value) - size + 1)}


def _survivors(value: str, out: str) -> set[str]:
    return {piece for piece in _pieces(value) if piece in out}


# --- every encoding --------------------------------------------------------------------------


@pytest.mark.parametrize("form", [
    lambda v: v,
    lambda v: json.dumps(v)[1:-1],
    lambda v: json.dumps(json.dumps({"k": v})),
    lambda v: urllib.parse.quote("/" + v + "?", safe=""),
    lambda v: urllib.parse.quote_plus(v + " x"),
    lambda v: base64.b64encode(v.encode()).decode(),
    lambda v: base64.b64encode(b"a" + v.encode()).decode(),
    lambda v: base64.b64encode(b"ab" + v.encode() + b"c").decode(),
    lambda v: base64.urlsafe_b64encode(b"user:" + v.encode()).decode().rstrip("="),
    lambda v: base64.b64encode((v + "\n").encode()).decode(),
])
def test_each_encoding_is_masked(redactor: Redactor, form: object) -> None:
    encoded = form(VALUE)  # type: ignore[operator]
    out = redactor.redact(f"seen: {encoded} (end)")
    assert REDACTED in out and not _survivors(VALUE, out)


def test_base64_leaves_at_most_two_bytes_either_side() -> None:
    masker = KnownMasker([(VALUE, "x")])
    for prefix in (b"", b"a", b"ab", b"abc"):
        blob = base64.b64encode(prefix + VALUE.encode() + b"tail").decode()
        out, hits = masker.mask(blob.encode())
        assert hits and out is not None
        left = out.decode().replace(REDACTED, " ").split()
        assert all(len(part) <= 8 for part in left)


def test_the_encodings_are_literals_of_eight_or_more() -> None:
    forms = encodings(VALUE)
    assert VALUE.encode() in forms and all(len(form) >= 8 for form in forms)
    assert len(forms) == len(set(forms))


def test_colour_codes_and_crlf_inside_a_value(redactor: Redactor) -> None:
    out = redactor.redact(f"\x1b[32m{VALUE[:12]}\x1b[0m{VALUE[12:]}\r\n")
    assert not _survivors(VALUE, out) and out.endswith("\r\n")


def test_masking_keeps_lines_and_is_idempotent(redactor: Redactor) -> None:
    text = f"a\n{VALUE[:20]}\n{VALUE[20:]} tail\nb"
    out = redactor.redact(text)
    assert out.count("\n") == text.count("\n") and not _survivors(VALUE, out)
    assert redactor.redact(out) == out


def test_counts_by_source_and_never_the_value() -> None:
    redactor = Redactor(known=[(VALUE, "environment"), ("Zx81-mnbv-POIU-lkjh", "mask file .env")])
    redactor.redact(f"{VALUE} and Zx81-mnbv-POIU-lkjh")
    redactor.redact(base64.b64encode(VALUE.encode()).decode())
    assert redactor.mask_counts == {"environment": 2, "mask file .env": 1}
    assert VALUE not in repr(redactor.mask_counts)


def test_values_added_later_are_masked_even_in_cached_results() -> None:
    redactor = Redactor()
    assert redactor.redact("short Tk92Lm0pQ") == "short Tk92Lm0pQ"
    redactor.add_known([("Tk92Lm0pQ", "agent environment")])
    assert redactor.redact("short Tk92Lm0pQ") == f"short {REDACTED}"


def test_redact_block_masks_and_keeps_line_count() -> None:
    redactor = Redactor(known=[(VALUE, "KILO_LOOP_MASK")])
    block = f"one {VALUE}\n{VALUE[:5]}\n{VALUE[5:]}\n".encode()
    out, _ = redactor.redact_block(block)
    assert out.count(b"\n") == 3 and not _survivors(VALUE, out.decode())


# --- wrapping: any width, any trailing text ------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    value=st.text(TOKEN_ALPHABET, min_size=8, max_size=120),
    width=st.integers(40, 200),
    lead=st.text(string.ascii_letters + " =:\"'", max_size=150),
    trail=st.text(string.printable.replace("\r", "").replace("\x0b", "").replace("\x0c", ""), max_size=60),
)
def test_property_no_piece_of_a_wrapped_value_survives(value: str, width: int, lead: str, trail: str) -> None:
    redactor = Redactor(known=[(value, "maskValues")])
    line = lead + value + trail
    wrapped = "\n".join(line[i:i + width] for i in range(0, len(line), width))
    out = redactor.redact(wrapped)
    joined_out = out.replace("\n", "")
    assert value not in joined_out
    assert not [piece for piece in _pieces(value) if piece in out.replace("\n", "") and piece not in lead + trail]


# --- bad input ---------------------------------------------------------------------------------


def test_a_value_inside_ordinary_words_is_still_masked() -> None:
    redactor = Redactor(known=[("ordinary", "maskValues")])
    assert redactor.redact("extraordinary words") == f"extra{REDACTED} words"


def test_binary_output_does_not_crash() -> None:
    redactor = Redactor(known=[(VALUE, "x")])
    blob = bytes(range(256)) * 64 + VALUE.encode() + b"\xff\xfe"
    out, _ = redactor.redact_block(blob)
    assert VALUE.encode() not in out


def test_a_100_mb_line_in_bounded_time() -> None:
    values = [(f"Vk{n:02d}pQ7mZx3Lw9Rt{n:02d}", "maskValues") for n in range(50)]
    masker = KnownMasker(values)
    line = (b"abcdefghij0123456789" * 5_000_000) + values[7][0].encode()
    started = time.perf_counter()
    out, hits = masker.mask(line)
    assert len(hits) == 1 and out is not None and out.endswith(REDACTED.encode())
    assert time.perf_counter() - started < 30


# --- collecting ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "secret"), [
    ("GITHUB_TOKEN", True), ("ACME_DEPLOY_TOKEN", True), ("AWS_SECRET_ACCESS_KEY", True), ("DB_PASSWORD", True),
    ("MYSQL_ROOT_PASSWORD_X", True), ("GITLAB_PAT", True), ("SENTRY_DSN", True), ("OPENAI_API_KEY", True),
    ("PATH", False), ("HOME", False), ("PWD", False), ("SSH_AUTH_SOCK", False), ("TOKEN_FILE", False),
    ("KILO_LOOP_MASK", False), ("PASSWORD_FILE", False), ("LANG", False),
])
def test_secret_env_names(name: str, secret: bool) -> None:
    assert secret_env_name(name) is secret


def test_env_values_and_url_passwords() -> None:
    env = {"ACME_DEPLOY_TOKEN": VALUE, "DATABASE_URL": "postgres://app:Pw9xLq2Zr7@db:5432/app",
           "HOME": "/root", "KILO_CONFIG_CONTENT": json.dumps({"provider": {"x": {"options": {"apiKey": "k3y-Zz91QpLm"}}}})}
    found = dict(from_env(env, "environment"))
    assert found == {VALUE: "environment", "Pw9xLq2Zr7": "environment"}
    injected = dict(from_env({"KILO_CONFIG_CONTENT": env["KILO_CONFIG_CONTENT"]} | {"OPENAI_API_KEY": "sk-x"},
                             "agent environment"))
    assert "sk-x" in injected  # screened later (too short)


def test_values_in_json_and_multi_line() -> None:
    blob = json.dumps({"type": "service_account", "private_key_id": "ab12cd34ef56", "client_email": "a@b.iam",
                       "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----\n"})
    assert set(values_in(blob)) == {"ab12cd34ef56", "MIIEvQIBADANBg"}


def test_dotenv_parsing() -> None:
    text = "# c\nexport A=1\nB='two words'\nC=\"q\"\nD=plain # note\n  E : x\nnot a line\n"
    assert list(dotenv_values(text)) == [("A", "1"), ("B", "two words"), ("C", "q"), ("D", "plain"), ("E", "x")]


def _repo(path: Path) -> Path:
    path.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    return path


def test_collect_screens_and_notes_without_values(tmp_path: Path) -> None:
    project = _repo(tmp_path / "p")
    (project / "app.py").write_text('DEFAULT = "tracked-in-repo-123"\n')
    subprocess.run(["git", "add", "app.py"], cwd=project, check=True)
    (project / ".env").write_text(
        f"API_TOKEN={VALUE}\nAPP_URL=https://example.org/app\nBLOB=Xk29dLq81Mz\nPORT=3000\nFLAG=true\n")
    (project / ".env.example").write_text("API_TOKEN=Yy11Zz22Ww33Vv44\n")
    env = {"GITHUB_TOKEN": "tracked-in-repo-123", "SHORT_TOKEN": "abc", "MY_SECRET": "localhost",
           "KILO_LOOP_MASK": "Mm55Nn66Oo77\n"}
    known = collect(env, project, [".env*"], ["Cfg0Value9Abc"])
    assert sorted(known.values) == sorted([
        (VALUE, "mask file .env"), ("Xk29dLq81Mz", "mask file .env"), ("Mm55Nn66Oo77", "KILO_LOOP_MASK"),
        ("Cfg0Value9Abc", "maskValues")])
    notes = "\n".join(known.notes)
    assert "found in the repository's tracked files" in notes and "shorter than 8" in notes
    assert "too common" in notes and "ordinary value" in notes
    assert "tracked-in-repo-123" not in notes and VALUE not in notes


def test_mask_files_opt_out(tmp_path: Path) -> None:
    project = _repo(tmp_path / "p")
    (project / ".env").write_text(f"API_TOKEN={VALUE}\n")
    assert collect({}, project, [], []).values == []


# --- a value joined with a blank where its line broke ---------------------------------------------


def test_a_wrapped_value_summarised_on_one_line_is_still_masked(redactor: Redactor) -> None:
    """A tool heading joins a command's lines with blanks: the wrapped value's pieces meet at a blank."""
    out = redactor.redact(f"▸ Run printf '%s' 'deploy {VALUE[:12]} {VALUE[12:]}\", next'")
    assert out == f"▸ Run printf '%s' 'deploy {REDACTED} {REDACTED}\", next'"
    short = Redactor(known=[("Zx81mnbv9", "maskValues")])
    assert short.redact("a Zx81 mnbv9 b") == f"a {REDACTED} {REDACTED} b"  # pieces under a gram each


def test_a_big_block_joins_lines_not_words() -> None:
    """Past a few kB (``kilo-loop redact`` on a log) only line breaks are looked through: a view
    without every blank would cost a piece per word."""
    redactor = Redactor(known=[(VALUE, "maskValues")])
    filler = "ordinary words of a long log line " * 200
    block = f"{filler}\n{VALUE[:10]} {VALUE[10:]}\n{VALUE[:10]}\n{VALUE[10:]}\n".encode()
    out, _ = redactor.redact_block(block)
    assert out.endswith(f"{VALUE[:10]} {VALUE[10:]}\n{REDACTED}\n{REDACTED}\n".encode())


def test_mask_counts_survive_the_bus_and_the_reducer_whatever_their_source_is_called(tmp_path: Path) -> None:
    """A source named like a PIN's key (``mask file .env.secret``) has its count taken for one by the
    bus's redaction: the reducer leaves it out instead of failing the run's last event."""
    from kilo_loop.run.bus import EventBus
    from kilo_loop.run.events import SecretsMasked
    from kilo_loop.run.layout import RunLayout
    from kilo_loop.run.recorder import RunRecorder
    from kilo_loop.run.state import RunState

    layout = RunLayout(tmp_path / "run")
    layout.ensure()
    redactor = Redactor()
    bus = EventBus(layout.events, redactor.redact_value)
    recorder = RunRecorder(layout, RunState(run_id="r1", project="/p", goal_title="Goal"), bus, redactor.redact_value)
    recorder.open(recorder.state, resumed=False)
    recorder.emit(SecretsMasked(message="masked", counts={"mask file .env.secret": 3, "agent server": 2}))
    assert recorder.state.masked == {"agent server": 2}
    recorder.save(durable=False)
    assert json.loads(layout.state.read_text())["masked"] == {"agent server": 2}


def test_a_long_tool_heading_is_cut_at_a_blank_so_no_value_is_cut_in_two(redactor: Redactor) -> None:
    from kilo_loop.agent.protocol import ToolUse
    from kilo_loop.session.runner import tool_heading

    command = "deploy --region eu-west-1 " + "x" * 100 + f" {VALUE} and more after it"
    heading = tool_heading(ToolUse(tool="bash", input={"command": command}, status="completed"))
    assert heading.endswith("…") and len(heading) <= 170 and VALUE[:8] not in heading
    assert VALUE[:8] not in redactor.redact(heading)
