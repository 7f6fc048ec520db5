"""The guard's score on the public dcg corpus (`tests/corpora/dcg/`, MIT, copied in with its LICENSE).

Our policy is stricter than dcg's: the agent never commits, pushes or publishes (seed 000),
and issue 10 adds classes dcg allows — `git rebase`, commands that make commits (`git merge`,
and `git pull`, which merges), `docker system prune`, `kubectl delete`. A case that *executes*
one of these is expected `deny` even where dcg says `allow`. In this corpus every such case is
a command that starts with those words (mentions inside echo, grep or a commit message never
do), which is how the relabelling below decides. Every other case keeps dcg's label.
Target: every deny case denied, at most 3% of allow cases denied.
"""

from __future__ import annotations

import json
import shlex
import tomllib
from dataclasses import dataclass
from typing import Any

import pytest

from kilo_loop.commands.guard import hook_response
from kilo_loop.guard.runtime import Guard
from tests.support.paths import CORPORA

DCG = CORPORA / "dcg"

_NEVER = {("git", "commit"), ("git", "push"), ("npm", "publish"), ("pnpm", "publish"),
          ("git", "rebase"), ("git", "merge"), ("git", "pull"), ("docker", "system"), ("kubectl", "delete")}


@dataclass(frozen=True)
class Case:
    source: str
    command: str
    expected: str


def _cases(kind: str) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    for path in sorted(DCG.rglob("*.toml")):
        for case in tomllib.loads(path.read_text(encoding="utf-8")).get("case", []):
            if (case.get("input_kind") == "hook_json") == (kind == "hook"):
                cases.append({**case, "source": str(path.relative_to(DCG))})
    return cases


def _policy_label(command: str, dcg_label: str) -> str:
    try:
        words = shlex.split(command)
    except ValueError:
        return dcg_label
    return "deny" if tuple(words[:2]) in _NEVER else dcg_label


def command_cases() -> list[Case]:
    return [Case(c["source"], c["command"], _policy_label(c["command"], str(c.get("expected") or
                                                                         c.get("expected_decision"))))
            for c in _cases("command") if "command" in c]


def test_the_corpus_is_complete() -> None:
    cases = command_cases()
    assert len(cases) >= 340
    assert {c.expected for c in cases} == {"allow", "deny"}


def test_corpus_score() -> None:
    guard = Guard()
    cases = command_cases()
    missed: list[str] = []
    wrongly: list[str] = []
    for case in cases:
        decision = guard.check_command(case.command)
        if case.expected == "deny" and not decision.denied:
            missed.append(f"{case.source}: {case.command[:80]!r}")
        if case.expected == "allow" and decision.denied:
            wrongly.append(f"{case.source}: {case.command[:80]!r} -> {decision.rule}: {decision.reason[:80]}")
    deny_total = sum(c.expected == "deny" for c in cases)
    allow_total = len(cases) - deny_total
    score = (f"deny cases denied {deny_total - len(missed)}/{deny_total}, "
             f"allow cases wrongly denied {len(wrongly)}/{allow_total}")
    print(f"\ndcg corpus: {score}")
    detail = "\n".join(["missed:", *missed, "wrongly denied:", *wrongly])
    assert not missed and len(wrongly) <= 0.03 * allow_total, f"{score}\n{detail}"


@pytest.mark.parametrize("case", _cases("hook"), ids=lambda c: c.get("id", "?"))
def test_hook_json_cases_through_the_hook(case: dict[str, Any]) -> None:
    response = hook_response(case["raw_input"], lambda cwd: Guard())
    decision = "deny" if response else "allow"
    assert decision == case["expected_decision"], json.dumps(response)
