"""Redactor throughput, end to end through ``kilo-loop redact``, against plain-``re`` floors.

    PYTHONPATH=src python benchmarks/bench_redact.py [--mb 20] [--dense-mb 50] [--seed 7] [--masks 50]
    PYTHONPATH=src python benchmarks/bench_redact.py --masks-only --mb 4 --dense-mb 4

Instructions instead of seconds on a noisy machine (the ratio is what counts):
    valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out python benchmarks/bench_redact.py --masks-only ...

Two generated corpora (written to a temp dir, deterministic for a seed):

* typical: what the loop persists — ``kilo run --format json`` event lines (tool calls, text
  parts, step_finish with token counts and snapshot SHAs, ses_/msg_/prt_ ids), source code,
  markdown prose, lock-file integrity hashes, git log lines and UUIDs, with a sparse sprinkling
  (~1 line in 1400) of fake credentials;
* dense: half the lines hold a fake credential (every kind the redactor knows), the rest are
  ordinary short log/code lines.

For each corpus it prints MB/s of ``python -m kilo_loop redact`` run as a subprocess (stdin from
the file, stdout to a file; interpreter start-up included, and also printed on its own), and of
two floors measured in the same run: ``re.sub`` of one Python ``re`` alternation of the same rule
patterns, and of a 12-pattern alternation of the classic token shapes.  The floors are timed on
the first ``--floor-mb`` of each corpus (a rate is a rate; the full alternation takes minutes per
MB on dense input).  Targets: typical >= 20x the floor; dense >= 5x and >= 25 MB/s.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import re
import resource
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from kilo_loop.commands.redact import burst_workers, filter_stream
from kilo_loop.redact import Redactor
from kilo_loop.redact._patterns import REDACTED, combined_pattern

_ALNUM = string.ascii_letters + string.digits
_WORDS = (
    "the", "loop", "runs", "verify", "after", "each", "iteration", "and", "records", "the", "report",
    "so", "the", "operator", "can", "see", "which", "stage", "passed", "failed", "or", "needs", "a",
    "decision", "from", "a", "human", "reviewer", "before", "the", "next", "step", "tests", "cover",
    "parser", "state", "reducer", "guard", "checkpoint", "budget", "handoff", "summary", "progress",
    "session", "token", "usage", "context", "window", "was", "within", "limits", "while", "the", "agent",
    "edited", "components", "and", "fixed", "a", "failing", "assertion", "in", "the", "dashboard",
    "server", "route", "handler",
)
_IDENTS = ("user", "config", "stage", "report", "result", "handler", "session", "items", "value", "state")


def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choices(alphabet, k=n))


def _id(rng: random.Random, prefix: str) -> str:
    return prefix + "_" + _rand(rng, "0123456789abcdef", 12) + _rand(rng, _ALNUM, 14)


def _prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def _sha(rng: random.Random) -> str:
    return _rand(rng, "0123456789abcdef", 40)


def _event(rng: random.Random, session: str) -> str:
    part = f'"id":"{_id(rng, "prt")}","sessionID":"{session}","messageID":"{_id(rng, "msg")}"'
    kind = rng.random()
    if kind < 0.3:
        path = f"src/{rng.choice(_IDENTS)}/{rng.choice(_IDENTS)}.ts"
        return (f'{{"type":"tool_use","timestamp":{rng.randint(10**12, 2 * 10**12)},"sessionID":"{session}",'
                f'"part":{{{part},"type":"tool","tool":"read","callID":"{_id(rng, "toolu")}",'
                f'"state":{{"status":"completed","input":{{"filePath":"/work/main/{path}"}},'
                f'"output":"{_prose(rng, 12)}","title":"{path}"}}}}}}')
    if kind < 0.55:
        return (f'{{"type":"text","sessionID":"{session}","part":{{{part},"type":"text",'
                f'"text":"{_prose(rng, rng.randint(10, 40))}"}}}}')
    if kind < 0.8:
        tokens = (f'"tokens":{{"input":{rng.randint(100, 90000)},"output":{rng.randint(10, 4000)},'
                  f'"reasoning":0,"cache":{{"read":{rng.randint(0, 50000)},"write":0}}}}')
        return (f'{{"type":"step_finish","sessionID":"{session}","part":{{{part},"type":"step-finish",'
                f'"reason":"tool-calls","snapshot":"{_sha(rng)}","cost":{rng.random():.4f},{tokens}}}}}')
    command = rng.choice(("pnpm test", "git status --short", "pytest -q tests/unit", "ruff check src"))
    return (f'{{"type":"tool_use","sessionID":"{session}","part":{{{part},"type":"tool","tool":"bash",'
            f'"state":{{"status":"completed","input":{{"command":"{command}","description":"run checks"}},'
            f'"output":"{_prose(rng, 8)}\\n{rng.randint(1, 300)} passed in {rng.random():.2f}s"}}}}}}')


_CODE = (
    "def {a}_{b}(self, {a}: str, {b}: int = 0) -> dict[str, Any]:",
    "    return {{\"{a}\": {a}, \"{b}\": {b}, \"count\": len(self.{b}s)}}",
    "    if not {a}.{b}:",
    "        raise ValueError(f\"missing {a} for {{self.{b}!r}}\")",
    "export function {a}{B}({a}: {B}Props): JSX.Element {{",
    "  const [{a}, set{B}] = useState<{B} | null>(null);",
    "  const token = await getSessionToken({a}.{b});",
    "  return <div className=\"{a}-{b}\" key={{{a}.id}}>{{{a}.{b}}}</div>;",
    "import {{ {a}, {b} }} from \"./{a}/{b}\";",
    "    {a}_{b} = [x for x in {a} if x.{b} is not None]",
    "// TODO: handle the {a} {b} edge case when the password field is empty",
    "    logger.info(\"{a} %s {b} %d\", {a}, {b})",
)
_PROSE_LINES = (
    "## {A} {b}",
    "- [x] {A} the {b} handler and add tests for the {a} path",
    "{P}",
    "> Note: the {a} key is read from the environment; never commit it.",
    "| {a} | {b} | passed |",
)


def _code(rng: random.Random, templates: tuple[str, ...]) -> str:
    a, b = rng.choice(_IDENTS), rng.choice(_IDENTS)
    return rng.choice(templates).format(a=a, b=b, A=a.capitalize(), B=b.capitalize(), P=_prose(rng, 25))


def _lock(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.4:
        digest = _rand(rng, _ALNUM + "+/", 86) + "=="
        return f'      "integrity": "sha512-{digest}",'
    if kind < 0.6:
        return f"commit {_sha(rng)}\nAuthor: Dev <dev@example.com>"
    if kind < 0.8:
        uuid = "-".join(_rand(rng, "0123456789abcdef", n) for n in (8, 4, 4, 4, 12))
        return f'  "runId": "{uuid}", "stage": "{rng.choice(_IDENTS)}"'
    name = rng.choice(_IDENTS)
    return f'    "node_modules/{name}": {{"version": "1.{rng.randint(0, 20)}.{rng.randint(0, 9)}",'


SecretLine = Callable[[random.Random], str]

# Credential-bearing lines, built from parts so no literal token sits in the source.
_FAKE_SECRETS: tuple[SecretLine, ...] = (
    lambda rng: "export GITHUB_TOKEN=" + "gh" + "p_" + _rand(rng, _ALNUM, 36),
    lambda rng: '{"headers":{"Authorization":"Bear' + 'er ' + _rand(rng, _ALNUM, 40) + '"}}',
    lambda rng: "OPENAI_API_KEY=" + "sk" + "-proj-" + _rand(rng, _ALNUM, 48),
    lambda rng: "aws_access_key_id = " + "AK" + "IA" + _rand(rng, string.ascii_uppercase + string.digits, 16),
    lambda rng: "DATABASE_URL=postgres://app:" + _rand(rng, _ALNUM, 16) + "@db.internal:5432/app",
    lambda rng: "curl -H 'x-api-key: " + "sk" + "-ant-api03-" + _rand(rng, _ALNUM, 80) + "' https://api.example",
    lambda rng: '{"type":"text","part":{"text":"token ' + "ey" + "JhbGciOiJIUzI1NiJ9." + "ey"
    + "JzdWIiOiIxIn0." + _rand(rng, _ALNUM, 43) + '"}}',
    lambda rng: "SLACK_WEBHOOK=https://hooks." + "slack.com/services/T0" + _rand(rng, _ALNUM, 30),
    lambda rng: "  password: " + _rand(rng, _ALNUM, 14),
    lambda rng: "stripe.api_key = '" + "sk" + "_live_" + _rand(rng, _ALNUM, 24) + "'",
    lambda rng: "-----BEGIN " + "RSA PRIVATE KEY-----\n"
    + "\n".join(_rand(rng, _ALNUM + "+/", 64) for _ in range(4)) + "\n-----END " + "RSA PRIVATE KEY-----",
)


def fake_secrets(rng: random.Random) -> list[str]:
    """One credential-bearing line of each kind in ``_FAKE_SECRETS``."""
    return [kind(rng) for kind in _FAKE_SECRETS]


def generate(size: int, seed: int) -> str:
    rng = random.Random(seed)
    session = _id(rng, "ses")
    secrets = fake_secrets(rng)
    lines: list[str] = []
    total = 0
    while total < size:
        roll = rng.random()
        if roll < 0.0007:
            line = rng.choice(secrets)
        elif roll < 0.40:
            line = _event(rng, session)
        elif roll < 0.72:
            line = _code(rng, _CODE)
        elif roll < 0.90:
            line = _code(rng, _PROSE_LINES)
        else:
            line = _lock(rng)
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines) + "\n"


def _dense_filler(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.3:
        return f"{rng.randint(10, 23)}:{rng.randint(10, 59)}:{rng.randint(10, 59)} INFO {_prose(rng, 6)}"
    if roll < 0.6:
        return _code(rng, _CODE)
    if roll < 0.8:
        return f"commit {_sha(rng)} {_prose(rng, 4)}"
    return f"web-1  | GET /api/{rng.choice(_IDENTS)}/{rng.randint(1, 999)} 200 {rng.randint(1, 90)}ms"


def generate_dense(size: int, seed: int) -> str:
    """Half the lines hold a fake credential of a kind in ``_DENSE_SECRETS``, each with a secret
    of its own: no secret repeats, so no cache of verdicts can shortcut them."""
    rng = random.Random(seed)
    kinds = [kind for kind in _DENSE_SECRETS if "\n" not in kind(rng)]
    lines: list[str] = []
    total = 0
    while total < size:
        line = rng.choice(kinds)(rng) if rng.random() < 0.5 else _dense_filler(rng)
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines) + "\n"


def _alnum(rng: random.Random, n: int) -> str:
    return _rand(rng, _ALNUM, n)


def _hex(rng: random.Random, n: int) -> str:
    return _rand(rng, "0123456789abcdef", n)


# Every kind of credential the redactor knows, plus the typical corpus' ones.
_DENSE_SECRETS: tuple[SecretLine, ...] = (
    *_FAKE_SECRETS,
    lambda rng: "mysql -u root -p" + _alnum(rng, 12) + " app",
    lambda rng: "sshpass -p " + _alnum(rng, 14) + " ssh deploy@host",
    lambda rng: "docker login -u ci -p " + _alnum(rng, 20) + " registry.example",
    lambda rng: "machine api.example.com login ci password " + _alnum(rng, 18),
    lambda rng: "db.internal:5432:app:app:" + _alnum(rng, 16),
    lambda rng: "https://acct.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&sig=" + _alnum(rng, 43) + "%3D",
    lambda rng: "VAULT_ADDR=https://vault:8200 token " + "hv" + "s." + _alnum(rng, 90),
    lambda rng: "DD-API-KEY: " + _hex(rng, 32),
    lambda rng: "aws_secret_access_key = " + _alnum(rng, 40),
    lambda rng: "X-Amz-Credential=" + "AK" + "IA" + _rand(rng, string.ascii_uppercase + string.digits, 16)
    + "%2F20250101&X-Amz-Signature=" + _hex(rng, 64),
    lambda rng: "api-1  | password: " + _alnum(rng, 16),
    lambda rng: "gh" + "p_" + _alnum(rng, 36) + " pushed",
    lambda rng: "  password: " + _alnum(rng, 12) + "=",
)


def dense_secrets(rng: random.Random) -> list[str]:
    """One line of each kind in ``_DENSE_SECRETS``."""
    return [kind(rng) for kind in _DENSE_SECRETS]


class Timing(NamedTuple):
    wall: float
    cpu: float  # CPU seconds of this process (floors) or of the child (the CLI)


def _time(work: Callable[[], object]) -> Timing:
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    return Timing(time.perf_counter() - wall, time.process_time() - cpu)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run_cli(path: Path, out: Path) -> Timing:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    command = [sys.executable, "-m", "kilo_loop", "redact"]
    with path.open("rb") as stdin, out.open("wb") as stdout:
        before = _children_cpu()
        wall = _time(lambda: subprocess.run(command, stdin=stdin, stdout=stdout, env=env, check=True)).wall
        return Timing(wall, _children_cpu() - before)


# The classic token shapes, the way a hand-written scrubber would list them (the floor).
_TWELVE = (
    r"(?i:bearer)\s+[A-Za-z0-9._~+/=-]{8,}", r"(?i:basic)\s+[A-Za-z0-9+/]{8,}={0,2}",
    r"sk-[A-Za-z0-9_-]{20,}", r"gh[pousr]_[A-Za-z0-9]{36,}", r"xox[abposr]-[A-Za-z0-9-]{10,}",
    r"AKIA[A-Z0-9]{16}", r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
    r"(?i:token|api_?key|secret)[=:]\s*\S+", r"(?i:password|passwd|pwd)[=:]\s*\S+",
    r"://[^:/\s]*:[^@/\s]+@", r"-----BEGIN[A-Z ]*PRIVATE KEY-----",
    r"[=:]\s*[A-Za-z0-9+/]{32,}={0,2}",
)


def _rates(megabytes: float, timing: Timing) -> tuple[float, float]:
    return megabytes / timing.wall, megabytes / timing.cpu


def _single_process(path: Path, out: Path) -> Timing:
    """``kilo-loop redact``'s filter in this process, without worker processes or start-up."""
    redactor = Redactor()
    with path.open("rb") as source, out.open("wb") as sink:
        return _time(lambda: filter_stream(source, sink, redactor, workers=0))


def _in_process_paths(typical: Path) -> None:
    """The paths the loop itself uses: ``redact()`` on a whole text; ``redact_lines`` (one agent
    event line at a time; distinct lines only, so no kept result for a repeated line counts);
    ``redact_value`` on each parsed event (what the runner's event bus does)."""
    text = typical.read_text(encoding="utf-8")
    redactor = Redactor()
    whole = _time(lambda: redactor.redact(text))
    lines = list(dict.fromkeys(text.splitlines(keepends=True)))[:50_000]
    per_line = _time(lambda: list(Redactor().redact_lines(lines)))
    events = [json.loads(line) for line in lines if line.startswith('{"type"')]
    per_event = _time(lambda: [redactor.redact_value(event) for event in events])
    megabytes = len(text.encode()) / 1_000_000
    print(f"  in-process redact() on the whole text: {megabytes / whole.cpu:.1f} MB/s CPU;"
          f" per-line path (redact_lines, distinct lines): {per_line.cpu / len(lines) * 1e6:.2f} us CPU a line;"
          f" redact_value of a parsed event: {per_event.cpu / len(events) * 1e6:.1f} us CPU")


def _registered(count: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(f"registered {seed}")  # not the corpus's stream: its values must not be in it
    return [(_rand(rng, _ALNUM, rng.randint(16, 48)), "maskValues") for _ in range(count)]


def _best_cpu(work: Callable[[], object], runs: int = 3) -> float:
    return min(_time(work).cpu for _ in range(runs))


def _masking_overhead(name: str, path: Path, count: int, seed: int) -> None:
    """What masking ``count`` registered values adds to the one-process filter and to
    ``redact_value`` of parsed events (the bus's path): CPU, best of three, same run."""
    raw = path.read_bytes()
    megabytes = len(raw) / 1_000_000
    plain, masked = Redactor(), Redactor(known=_registered(count, seed))

    def filtered(redactor: Redactor) -> Callable[[], object]:
        return lambda: filter_stream(io.BytesIO(raw), io.BytesIO(), redactor, workers=0)

    base, with_masks = _best_cpu(filtered(plain)), _best_cpu(filtered(masked))
    print(f"  masking {count} registered values ({masked.known_forms} literal forms), {name}:"
          f" filter {megabytes / base:.1f} -> {megabytes / with_masks:.1f} MB/s CPU,"
          f" +{(with_masks / base - 1) * 100:.1f}% time", end="")
    events = [json.loads(line) for line in raw.decode("utf-8", "ignore").splitlines() if line.startswith('{"type"')]
    if events:
        # fresh redactors each run (no result kept from the run before), built outside the timing
        def per_event(known: list[tuple[str, str]]) -> float:
            runs = []
            for _ in range(3):
                redact = Redactor(known=known).redact_value
                runs.append(_time(lambda redact=redact: [redact(event) for event in events]).cpu)
            return min(runs)

        base, with_masks = per_event([]), per_event(_registered(count, seed))
        print(f"; redact_value of {len(events)} events +{(with_masks / base - 1) * 100:.1f}%", end="")
    print()


def _measure(name: str, path: Path, floor_mb: float, startup: Timing) -> None:
    raw = path.read_bytes()
    megabytes = len(raw) / 1_000_000
    out = path.with_suffix(".redacted")
    workers = _cores()
    cli = _run_cli(path, out)
    redactions = out.read_bytes().count(REDACTED.encode())
    alone = _single_process(path, path.with_suffix(".alone"))
    if path.with_suffix(".alone").read_bytes() != out.read_bytes():
        raise SystemExit("the CLI's workers and the single-process filter disagree")
    sample = raw[: int(floor_mb * 1_000_000)].decode("utf-8", "ignore")
    sample_mb = len(sample.encode()) / 1_000_000
    same = re.compile(combined_pattern())
    twelve = re.compile("|".join(f"(?:{p})" for p in _TWELVE))
    floors = {
        "re alternation of the same rules": _time(lambda: same.sub(REDACTED, sample)),
        "re alternation of 12 token shapes": _time(lambda: twelve.sub(REDACTED, sample)),
    }
    lines = raw.count(b"\n")
    print(f"{name}: {megabytes:.1f} MB, {lines} lines, {redactions} redactions")
    wall, cpu = _rates(megabytes, cli)
    work = Timing(cli.wall - startup.wall, cli.cpu - startup.cpu)
    print(f"  kilo-loop redact (CLI, end to end, workers: {workers}): {wall:8.1f} MB/s wall,"
          f" {cpu:8.1f} MB/s CPU of all its processes"
          f"  (without start-up: {megabytes / work.wall:.1f} wall, {megabytes / work.cpu:.1f} CPU)")
    alone_wall, alone_cpu = _rates(megabytes, alone)
    print(f"  the same filter in one process, no start-up: {alone_wall:8.1f} MB/s wall, {alone_cpu:8.1f} MB/s CPU")
    for label, timing in floors.items():
        floor_wall, floor_cpu = _rates(sample_mb, timing)
        print(f"  floor, {label}: {floor_wall:8.2f} MB/s wall, {floor_cpu:8.2f} MB/s CPU"
              f" -> CLI is {wall / floor_wall:6.1f}x wall, {cpu / floor_cpu:6.1f}x CPU;"
              f" one process {alone_cpu / floor_cpu:6.1f}x CPU")


def _cores() -> str:
    workers = burst_workers(None)
    return str(workers) if workers else "none, no idle cores"


def _startup() -> Timing:
    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp) / "empty"
        empty.write_bytes(b"")
        return _run_cli(empty, Path(tmp) / "out")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=float, default=20.0, help="typical corpus size in MB (default 20)")
    parser.add_argument("--dense-mb", type=float, default=50.0, help="dense corpus size in MB (default 50)")
    parser.add_argument("--floor-mb", type=float, default=1.0, help="prefix the floors are timed on")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--masks", type=int, default=50, help="registered values for the masking figures")
    parser.add_argument("--masks-only", action="store_true",
                        help="only the masking overhead (in process, typical and dense corpora)")
    args = parser.parse_args()
    if args.masks_only:
        with tempfile.TemporaryDirectory() as tmp:
            for name, make, size in (("typical", generate, args.mb), ("dense", generate_dense, args.dense_mb)):
                path = Path(tmp) / f"{name}.log"
                path.write_text(make(int(size * 1_000_000), args.seed), encoding="utf-8")
                _masking_overhead(name, path, args.masks, args.seed)
        return
    startup = _startup()
    print(f"CLI start-up (empty input): {startup.wall:.2f} s wall, {startup.cpu:.2f} s CPU;"
          " included in the end-to-end figures")
    with tempfile.TemporaryDirectory() as tmp:
        typical = Path(tmp) / "typical.log"
        typical.write_text(generate(int(args.mb * 1_000_000), args.seed), encoding="utf-8")
        _measure("typical agent output", typical, args.floor_mb, startup)
        _in_process_paths(typical)
        _masking_overhead("typical", typical, args.masks, args.seed)
        typical.unlink()
        dense = Path(tmp) / "dense.log"
        dense.write_text(generate_dense(int(args.dense_mb * 1_000_000), args.seed), encoding="utf-8")
        _measure("dense (half the lines hold a secret)", dense, args.floor_mb, startup)
        _masking_overhead("dense", dense, args.masks, args.seed)
    print("targets: typical >= 20x floor; dense >= 5x floor and >= 25 MB/s; never below a floor")
    print("(on a shared machine the CPU figures are the steadier ones: wall time includes waiting)")


if __name__ == "__main__":
    main()
