"""Redactor throughput against a plain-``re`` floor on the same 20 MB of generated agent output.

    PYTHONPATH=src python benchmarks/bench_redact.py [--mb 20] [--seed 7]

The corpus (written to a temp dir, deterministic for a seed) mimics what the loop persists:
``kilo run --format json`` event lines (tool calls, text parts, step_finish with token counts and
snapshot SHAs, ses_/msg_/prt_ ids), source code, markdown prose, lock-file integrity hashes, git
log lines and UUIDs, with a sparse sprinkling (~1 line in 1400) of fake credentials.

Printed: the redactor's MB/s, the floor's MB/s (``re.sub`` of one compiled Python ``re``
alternation of the same rule patterns), their ratio, and the streaming (line by line) figure.
The floor takes a couple of minutes on 20 MB; ``--mb 2`` gives a quick look.
"""

from __future__ import annotations

import argparse
import random
import re
import string
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from kilo_loop.safety.redact import Engine, Redactor
from kilo_loop.safety.secret_patterns import REDACTED, combined_pattern

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
    return "".join(rng.choice(alphabet) for _ in range(n))


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


def fake_secrets(rng: random.Random) -> list[str]:
    """Credential-bearing lines, built from parts so no literal token sits in the source."""
    return [
        "export GITHUB_TOKEN=" + "gh" + "p_" + _rand(rng, _ALNUM, 36),
        '{"headers":{"Authorization":"Bear' + 'er ' + _rand(rng, _ALNUM, 40) + '"}}',
        "OPENAI_API_KEY=" + "sk" + "-proj-" + _rand(rng, _ALNUM, 48),
        "aws_access_key_id = " + "AK" + "IA" + _rand(rng, string.ascii_uppercase + string.digits, 16),
        "DATABASE_URL=postgres://app:" + _rand(rng, _ALNUM, 16) + "@db.internal:5432/app",
        "curl -H 'x-api-key: " + "sk" + "-ant-api03-" + _rand(rng, _ALNUM, 80) + "' https://api.example",
        '{"type":"text","part":{"text":"token ' + "ey" + "JhbGciOiJIUzI1NiJ9." + "ey" + "JzdWIiOiIxIn0."
        + _rand(rng, _ALNUM, 43) + '"}}',
        "SLACK_WEBHOOK=https://hooks." + "slack.com/services/T0" + _rand(rng, _ALNUM, 30),
        "  password: " + _rand(rng, _ALNUM, 14),
        "stripe.api_key = '" + "sk" + "_live_" + _rand(rng, _ALNUM, 24) + "'",
        "-----BEGIN " + "RSA PRIVATE KEY-----\n" + "\n".join(_rand(rng, _ALNUM + "+/", 64) for _ in range(4))
        + "\n-----END " + "RSA PRIVATE KEY-----",
    ]


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


def _best_of(runs: int, work: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=float, default=20.0, help="corpus size in MB (default 20)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--runs", type=int, default=3, help="best of N timings for the redactor")
    parser.add_argument("--fallback", action="store_true", help="also time the engine on Python re (slow)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "agent-output.log"
        path.write_text(generate(int(args.mb * 1_000_000), args.seed), encoding="utf-8")
        text = path.read_text(encoding="utf-8")
    megabytes = len(text.encode()) / 1_000_000
    redactor = Redactor()
    floor_re = re.compile(combined_pattern())
    redacted = redactor.redact(text)
    fast = megabytes / _best_of(args.runs, lambda: redactor.redact(text))
    floor = megabytes / _best_of(1, lambda: floor_re.sub(REDACTED, text))
    lines = text.splitlines(keepends=True)
    streaming = megabytes / _best_of(1, lambda: sum(1 for _ in redactor.redact_lines(lines)))
    print(f"corpus: {megabytes:.1f} MB, {len(lines)} lines, {redacted.count(REDACTED)} redactions")
    print(f"redactor (RE2 scan):        {fast:8.1f} MB/s")
    print(f"floor (re.sub alternation): {floor:8.2f} MB/s")
    print(f"ratio:                      {fast / floor:8.1f}x  (target >= 20x)")
    print(f"redact_lines (streaming):   {streaming:8.1f} MB/s  ({streaming / floor:.1f}x floor)")
    if args.fallback:
        pure_re = megabytes / _best_of(1, lambda: Engine(use_re2=False).redact(text))
        print(f"same engine on Python re:   {pure_re:8.2f} MB/s  (the fallback without re2)")


if __name__ == "__main__":
    main()
