"""The detector: a stage's diff (and its verify command) in, tamper findings out. Pure."""

from __future__ import annotations

from collections import Counter

from kilo_loop.tamper.diff import FileDiff, parse_diff
from kilo_loop.tamper.finding import TamperFinding
from kilo_loop.tamper.languages import Language, is_test_path, language_of
from kilo_loop.tamper.strings import without_strings
from kilo_loop.tamper.test_rules import (
    assertion_balance,
    assertions_added,
    opener_balance,
    test_file_findings,
)
from kilo_loop.tamper.verify_inputs import verify_input_findings


def _test_path(file: FileDiff, lang: Language) -> bool:
    return any(is_test_path(p, lang) for p in (file.old_path, file.new_path) if p)


def detect(diff: str, verify: str | None = None) -> list[TamperFinding]:
    """Every way the diff weakens the tests or what the verify command reads, in file order."""
    files = parse_diff(diff)
    langs = {id(file): language_of(file.path) for file in files}
    # The rules read code: a test's source kept in a string (a fixture that writes a test file) is data.
    # As a gain it still counts for the diff's other files: a test moved into such a fixture is not lost.
    code = {id(file): file if lang is None else without_strings(file, lang)
            for file in files for lang in (langs[id(file)],)}
    # Net assertions each language's test files gained: tests moved between files are not tests lost.
    gained: Counter[str] = Counter()
    tests_gained: Counter[str] = Counter()
    balance: dict[int, tuple[int, int]] = {}
    raw_added: dict[int, int] = {}
    openers: dict[int, tuple[int, int]] = {}
    for file in files:
        lang = langs[id(file)]
        if lang is not None and not file.deleted:
            balance[id(file)] = removed, added = assertion_balance(code[id(file)], lang)
            raw_added[id(file)] = assertions_added(file, lang)
            gained[lang.name] += raw_added[id(file)] - removed
            openers[id(file)] = gone, new = opener_balance(code[id(file)], lang)
            tests_gained[lang.name] += new - gone
    new_files = frozenset(file.path for file in files if file.added_file)
    found: list[TamperFinding] = []
    for file in files:
        lang = langs[id(file)]
        # A test file the verify command names is judged as a test: adding a test to it is no finding.
        is_test = lang is not None and _test_path(file, lang)
        by_config = list(verify_input_findings(file, None if is_test else verify, new_files))
        found += by_config
        if lang is None or by_config:
            continue
        removed, added = balance.get(id(file), (0, 0))
        gone, new = openers.get(id(file), (0, 0))
        own = raw_added[id(file)] - removed if id(file) in balance else 0
        found += test_file_findings(code[id(file)], lang, _test_path(file, lang), (removed, added),
                                    gained[lang.name] - own, tests_gained[lang.name] - (new - gone))
    return found
