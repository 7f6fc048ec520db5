"""What a reviewer reports, and how its written output becomes that report.

A reviewer writes a JSON object `{verdict: "pass"|"block", summary: "…", findings: [...], questions: [...]}`
(the seed's `review.json`; in a review wave each role writes `review-<role>.json`). Findings are
objects or one-line strings such as `high src/a.py:12 Pre-existing: slow loop`. Output that is
missing or cannot be read becomes a `block` with a finding saying so: never a crash, never a
silent pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from kilo_loop.run.findings import Finding as Finding
from kilo_loop.run.findings import FindingKind as FindingKind
from kilo_loop.run.findings import Severity as Severity

Verdict = Literal["pass", "block"]

SEVERITIES: tuple[Severity, ...] = ("critical", "high", "medium", "low")
BLOCKING_SEVERITIES = frozenset({"critical", "high"})
MAX_FINDINGS = 200
MAX_TEXT = 2000

_PRE_EXISTING = re.compile(r"^\s*pre-?existing\s*:\s*", re.IGNORECASE)
_SEVERITY_WORD = re.compile(r"^\s*\[?(critical|high|medium|low)\]?\s*[:\-\u2013]?\s*", re.IGNORECASE)
_LOCATION = re.compile(r"^\s*(?P<file>[\w./@+-][\w./@+ -]*?\.?[\w-]*):(?P<line>\d+)(?::\d+)?\b\s*[:\-\u2013]?\s*")
_FILE_LINE = re.compile(r"^(?P<file>.+?):(?P<line>\d+)(?::\d+)?$")
_KIND_ALIASES = {
    "issue": "issue", "finding": "issue", "acceptance-gap": "acceptance-gap", "acceptance_gap": "acceptance-gap",
    "acceptance": "acceptance-gap", "gap": "acceptance-gap", "coverage": "coverage",
}


@dataclass(frozen=True)
class ReviewReport:
    role: str
    verdict: Verdict
    findings: tuple[Finding, ...] = ()
    questions: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    malformed: bool = False
    summary: str = ""  # the reviewer's own one or two sentences for the gate

    def as_dict(self) -> dict[str, Any]:
        return {"role": self.role, "verdict": self.verdict, "findings": [f.as_dict() for f in self.findings],
                "questions": list(self.questions), "warnings": list(self.warnings), "malformed": self.malformed,
                "summary": self.summary}


@dataclass
class _Parse:
    role: str
    warnings: list[str] = field(default_factory=list)


def malformed_report(role: str, problem: str) -> ReviewReport:
    """A reviewer whose output could not be used blocks, with a finding that says why."""
    warning = f"{'reviewer' if role == 'reviewer' else role + ' reviewer'}: {problem}; counted as block"
    finding = Finding(role=role, title=f"Reviewer output unusable: {problem}", severity="high", kind="malformed",
                      detail="The review could not be read, so the stage cannot be called reviewed.")
    return ReviewReport(role=role, verdict="block", findings=(finding,), warnings=(warning,), malformed=True)


def parse_review(raw: str | bytes | None, role: str, fallback_text: str = "") -> ReviewReport:
    """The report in `raw` (the file's content, None when there was no file); without a file, a JSON
    object with a `verdict` in the reviewer's own final text is used instead."""
    source = raw
    if source is None or not str(source if isinstance(source, str) else source.decode("utf-8", "replace")).strip():
        source = json_object_in_text(fallback_text)
        if source is None:
            what = "wrote no review file" if raw is None else "wrote an empty review file"
            return malformed_report(role, what)
    try:
        data = orjson.loads(source)
    except orjson.JSONDecodeError as exc:
        return malformed_report(role, f"review file is not valid JSON ({exc})")
    if not isinstance(data, dict):
        return malformed_report(role, "review file is not a JSON object")
    return report_from_object(data, role)


def json_object_in_text(text: str) -> str | None:
    """The last `{...}` object in free text that mentions a verdict (fenced or bare)."""
    for match in reversed(list(re.finditer(r"\{", text))):
        candidate = _balanced(text, match.start())
        if candidate and '"verdict"' in candidate:
            try:
                if isinstance(orjson.loads(candidate), dict):
                    return candidate
            except orjson.JSONDecodeError:
                continue
    return None


def _balanced(text: str, start: int) -> str | None:
    depth, in_string, escaped = 0, False, False
    for index in range(start, min(len(text), start + 200_000)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return text[start:index + 1]
    return None


def report_from_object(data: dict[str, Any], role: str) -> ReviewReport:
    ctx = _Parse(role)
    verdict_raw = data.get("verdict")
    verdict: Verdict
    if isinstance(verdict_raw, str) and verdict_raw.strip().lower() in ("pass", "block"):
        verdict = "pass" if verdict_raw.strip().lower() == "pass" else "block"
    else:
        return malformed_report(role, f"verdict must be \"pass\" or \"block\", not {verdict_raw!r}")
    findings = [f for f in (_finding(item, ctx) for item in _list(data.get("findings"), "findings", ctx)) if f]
    gaps = _list(data.get("acceptanceGaps", data.get("acceptance_gaps")), "acceptanceGaps", ctx)
    findings += [f for f in (_finding(item, ctx, kind="acceptance-gap") for item in gaps) if f]
    questions = [_clip(_question_text(q)) for q in _list(data.get("questions"), "questions", ctx)]
    said = data.get("summary")
    summary = _clip(" ".join(said.split())) if isinstance(said, str) else ""
    return ReviewReport(role=role, verdict=verdict, findings=tuple(findings[:MAX_FINDINGS]),
                        questions=tuple(q for q in questions if q)[:20], warnings=tuple(ctx.warnings), summary=summary)


def _list(value: Any, name: str, ctx: _Parse) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list):
        return value
    ctx.warnings.append(f"{ctx.role} reviewer: \"{name}\" is not a list; ignored")
    return []


def _question_text(value: Any) -> str:
    if isinstance(value, dict):
        value = value.get("question", "")
    return value.strip() if isinstance(value, str) else ""


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + "…"


def _finding(item: Any, ctx: _Parse, kind: FindingKind = "issue") -> Finding | None:
    if isinstance(item, str):
        return finding_from_line(item, ctx.role, kind) if item.strip() else None
    if not isinstance(item, dict):
        ctx.warnings.append(f"{ctx.role} reviewer: skipped a finding that is neither text nor an object")
        return None
    title = next((item[k] for k in ("title", "message", "issue", "summary", "text") if isinstance(item.get(k), str)
                  and item[k].strip()), "")
    if not title:
        ctx.warnings.append(f"{ctx.role} reviewer: skipped a finding without a title")
        return None
    pre = bool(_PRE_EXISTING.match(title)) or _truthy(item.get("preExisting", item.get("pre_existing")))
    title = _PRE_EXISTING.sub("", title)
    file, line = _where(item)
    raw_kind = item.get("kind", item.get("type"))
    if isinstance(raw_kind, str) and raw_kind.strip().lower() in _KIND_ALIASES:
        kind = _KIND_ALIASES[raw_kind.strip().lower()]  # type: ignore[assignment]
    detail = item.get("detail", item.get("details", item.get("fix", "")))
    return Finding(role=ctx.role, title=_clip(title.strip()), severity=_severity(item.get("severity"), ctx),
                   file=file, line=line, detail=_clip(detail.strip()) if isinstance(detail, str) else "",
                   pre_existing=pre, kind=kind)


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "1")
    return value is True


def _severity(value: Any, ctx: _Parse) -> Severity:
    if isinstance(value, str) and value.strip().lower() in SEVERITIES:
        return value.strip().lower()  # type: ignore[return-value]
    if value is not None:
        ctx.warnings.append(f"{ctx.role} reviewer: unknown severity {value!r}, read as high")
    return "high"


def _where(item: dict[str, Any]) -> tuple[str | None, int | None]:
    file = item.get("file", item.get("path"))
    line = item.get("line")
    location = item.get("location", item.get("at"))
    if isinstance(location, str) and (found := _FILE_LINE.match(location.strip())):
        file, line = found.group("file"), int(found.group("line"))
    elif isinstance(location, str) and location.strip() and not file:
        file = location.strip()
    if isinstance(file, str) and (found := _FILE_LINE.match(file.strip())) and line is None:
        file, line = found.group("file"), int(found.group("line"))
    clean_file = file.strip().removeprefix("./") if isinstance(file, str) and file.strip() else None
    clean_line = line if isinstance(line, int) and not isinstance(line, bool) and line > 0 else None
    if isinstance(line, str) and line.strip().isdigit():
        clean_line = int(line.strip()) or None
    return clean_file, clean_line


def finding_from_line(text: str, role: str, kind: FindingKind = "issue") -> Finding:
    """`high src/a.py:12 Pre-existing: the loop never ends` → a Finding; a bare sentence is a high issue."""
    rest = text.strip()
    severity: Severity = "high"
    if found := _SEVERITY_WORD.match(rest):
        severity = found.group(1).lower()  # type: ignore[assignment]
        rest = rest[found.end():]
    file = line = None
    if found := _LOCATION.match(rest):
        file, line = found.group("file").strip(), int(found.group("line"))
        rest = rest[found.end():]
    pre = bool(_PRE_EXISTING.match(rest))
    rest = _PRE_EXISTING.sub("", rest)
    return Finding(role=role, title=_clip(rest.strip() or text.strip()), severity=severity, file=file, line=line,
                   pre_existing=pre, kind=kind)
