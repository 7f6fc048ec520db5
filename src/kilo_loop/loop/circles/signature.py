"""A verify failure's signature: the failing test ids and the first error lines of its output,
with what changes from run to run taken out (paths, line numbers, addresses, timings, temp names,
dates, ids), hashed. The same failure gives the same signature; a different one another.

The input is bounded: only the output's last `TAIL_BYTES` are read, bytes that are not UTF-8 are
replaced, and control bytes dropped, so binary or 100 MB output costs the same as a short one."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

TAIL_BYTES = 16 * 1024  # the loop keeps verify's last 40 lines / 4 KiB; other callers are bounded here
MAX_IDS = 20
MAX_ERROR_LINES = 6
MAX_LINE = 300

# Failing test ids, as the common runners print them (pytest, unittest, Jest/Vitest/Mocha, Go, cargo, JUnit).
_TEST_ID = [
    re.compile(r"^(?:FAILED|ERROR)\s+(\S+?)(?:\s+-\s.*)?$"),  # pytest's short summary
    re.compile(r"^(?:FAIL|ERROR):\s+(\w+)\s+\(([\w.]+)\)"),  # unittest
    re.compile(r"^\s*--- FAIL:\s+(\S+)"),  # go test
    re.compile(r"^test\s+(\S+)\s+\.\.\.\s+FAILED$"),  # cargo test
    re.compile(r"^\s*(?:✕|\u00d7|✗)\s+(.+?)(?:\s+\(\d+(?:\.\d+)?\s*m?s\))?$"),  # jest / vitest
    re.compile(r"^\s*●\s+(.+?)$"),  # jest's failure headings
    re.compile(r"^\s*\d+\)\s+(.+)$"),  # mocha
    re.compile(r"^\[ERROR\]\s+(\S+)\s+.*(?:FAILURE|ERROR)!?"),  # maven surefire
]
_ERROR_LINE = re.compile(
    r"(?:\b[A-Z]\w*(?:Error|Exception|Failure)\b|\berror(?:\[\w+\])?:|\bpanic:|\bassert(?:ion)?\b|^E\s{2,}|"
    r"\bexpected\b|\bFAIL\b|\bfailed\b|\bTraceback\b|\bcannot\b|\bundefined\b|\bnot found\b|"
    r"\.[A-Za-z]{1,6}:<n>:\s)",  # a location with a message (go test, compilers)
    re.IGNORECASE,
)
# Rules and tallies ("===== 1 failed, 41 passed in 3.2s =====") change with the number of tests, not the failure.
_NOISE = re.compile(r"^[\s=_*-]*(?:\d+ (?:passed|failed|errors?|skipped|warnings?|deselected|xfailed|xpassed)\b.*)?"
                    r"[\s=_*-]*$|^={3,} .* ={3,}$")

# Words a failing line carries (lower case); only lines holding one are looked at, so a long passing
# log costs a few substring searches, not a regular expression per line.
_NEEDLES = ("error", "exception", "failure", "fail", "panic", "assert", "expected", "traceback", "cannot",
            "undefined", "not found", "want", "\ne  ", "\u2715", "\u00d7", "\u2717", "\u25cf")
MAX_CANDIDATES = 400

_A = re.ASCII
# What differs between two runs of the same failure, in the order they are replaced; each with a
# substring the line must hold for the pattern to be tried at all.
_NORMALISE: list[tuple[str, re.Pattern[str], str]] = [
    ("\x1b", re.compile(r"\x1b\[[0-9;?]*[A-Za-z]"), ""),  # terminal colours
    ("-", re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?", _A), "<time>"),
    (":", re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b", _A), "<time>"),
    ("-", re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", _A | re.I), "<uuid>"),
    ("0x", re.compile(r"\b0x[0-9a-f]+\b", _A | re.I), "<addr>"),
    ("tmp", re.compile(r"\btmp[\w-]{4,}\b", _A | re.I), "<tmp>"),
    ("temp", re.compile(r"\btemp[\w-]{4,}\b", _A | re.I), "<tmp>"),
    ("pytest-", re.compile(r"\bpytest-(?:of-[\w-]+|\d+)\b", _A), "<tmp>"),
    # file.py:12, file.ts(12,4), Foo.java:12:5
    (".", re.compile(r"(\.[A-Za-z]{1,6})[:(]\d+(?:[:,]\d+)?\)?", _A), r"\1:<n>"),
    ("line ", re.compile(r"\bline \d+\b", _A | re.I), "line <n>"),
    ("", re.compile(r"\b\d+(?:\.\d+)?\s*(?:ms|s|sec|secs|seconds?|us|ns|min)\b", _A), "<dur>"),
    ("", re.compile(r"\b(?:pid|process|thread|port)[ =:#]*\d+\b", _A | re.I), "<id>"),
    ("", re.compile(r"\b(?=[0-9a-f]*[a-f])[0-9a-f]{12,}\b", _A | re.I), "<hex>"),
]
_PATH = re.compile(r"(?:[A-Za-z]:)?[\w.@+~-]*[/\\][\w.@+~/\\-]*", _A)
_FOLDER_NAME = re.compile(r"[A-Za-z_~.]")
_SPACES = re.compile(r"[ \t]+")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\ufffd]")


@dataclass(frozen=True)
class Signature:
    digest: str  # "" when the output names nothing to sign (then only the exit code is signed)
    text: str  # the normalised lines it was made from, for a person to read


def _file_name(match: re.Match[str]) -> str:
    """A path as its file name only (a folder as `<path>`); a folder has a letter in its name, so 1/2 is no path."""
    token = match.group(0)
    cut = max(token.rfind("/"), token.rfind("\\"))
    absolute = token[0] in "/\\" and _FOLDER_NAME.search(token)
    if not (absolute or _FOLDER_NAME.search(token, 0, cut)):
        return token
    name = token[cut + 1:]
    return name if "." in name.strip(".") else "<path>"  # a folder's name is no file's: "rootdir: <path>"


def normalise(line: str) -> str:
    line = line[:MAX_LINE * 2]
    if "/" in line or "\\" in line:
        line = _PATH.sub(_file_name, line)
    for needle, pattern, replacement in _NORMALISE:
        if needle in line:
            line = pattern.sub(replacement, line)
    return _SPACES.sub(" ", line).strip()[:MAX_LINE]


def bounded_text(output: str | bytes) -> str:
    """The output's tail as text: at most TAIL_BYTES, invalid UTF-8 replaced, control bytes gone."""
    if isinstance(output, str):
        output = output[-TAIL_BYTES:].encode("utf-8", "replace")
    tail = output[-TAIL_BYTES:]
    return _CONTROL.sub("", tail.decode("utf-8", "replace"))


def candidate_lines(text: str) -> list[str]:
    """The lines that hold a word failing lines carry, in order (at most MAX_CANDIDATES)."""
    low = "\n" + text.lower()
    starts: set[int] = set()
    for needle in _NEEDLES:
        at = low.find(needle)
        while at >= 0 and len(starts) < MAX_CANDIDATES * 2:
            start = low.rfind("\n", 0, at + 1 if needle.startswith("\n") else at) + 1
            starts.add(start)
            end = low.find("\n", at + 1)
            at = -1 if end < 0 else low.find(needle, end)
    lines = []
    for start in sorted(starts)[:MAX_CANDIDATES]:
        end = low.find("\n", start)
        lines.append(text[start - 1:None if end < 0 else end - 1])
    return lines


def _test_ids(lines: list[str]) -> list[str]:
    found: dict[str, None] = {}
    for line in lines:
        for pattern in _TEST_ID:
            match = pattern.match(line)
            if match:
                found[normalise(" ".join(g for g in match.groups() if g))] = None
                break
        if len(found) >= MAX_IDS:
            break
    return sorted(found)


def _error_lines(lines: list[str]) -> list[str]:
    picked: list[str] = []
    for line in lines:
        if _NOISE.match(line.strip()):
            continue
        norm = normalise(line)  # judged without paths and temp names: a folder named "error" is no error
        if norm and _ERROR_LINE.search(norm) and norm not in picked:
            picked.append(norm)
        if len(picked) >= MAX_ERROR_LINES:
            break
    return picked


def failure_signature(output: str | bytes, exit_code: int | None = None, timed_out: bool = False) -> Signature:
    """The signature of one failed verify run (its output, exit code and whether it timed out)."""
    text = bounded_text(output)
    lines = candidate_lines(text)
    ids = _test_ids(lines)
    errors = _error_lines(lines)
    if not ids and not errors:  # nothing recognisable: the last lines stand for the failure
        errors = [n for n in (normalise(line) for line in text.splitlines()[-5:]) if n]
    head = "timed out" if timed_out else f"exit {exit_code}"
    parts = [head, *(f"test {i}" for i in ids), *errors]
    text = "\n".join(parts)
    return Signature(hashlib.blake2b(text.encode("utf-8"), digest_size=10).hexdigest(), text)
