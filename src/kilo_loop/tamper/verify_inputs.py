"""Edits to what the verify command reads: its own script, the test runners' options (pytest.ini,
tox.ini, setup.cfg, pyproject.toml, package.json, jest/vitest/mocha configs, Cargo.toml, pom.xml,
Gradle, Makefile) and CI config. A runner's config file counts only on the lines that choose or
soften the tests, so a dependency bump in pyproject.toml is not a finding. Pure."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import PurePosixPath

from kilo_loop.tamper.diff import FileDiff
from kilo_loop.tamper.finding import TamperFinding

_PYTEST_OPTS = (r"addopts|testpaths|python_(files|classes|functions)|norecursedirs|--deselect|--ignore|"
                r"(^|\s|=|\")-(k|m)\b|--lf\b|--maxfail|-x\b|xfail_strict|--runxfail|--co\b|--collect-only|"
                r"-p\s+no:|\[tool\.pytest|\[pytest\]|\[tool:pytest\]|\[testenv")
_JS_OPTS = (r"\"(pre|post)?test(:[\w:-]+)?\"\s*:|\"jest\"\s*:|testMatch|testRegex|testPathIgnore|modulePathIgnore|"
            r"passWithNoTests|--bail|--grep|--testNamePattern|-t\s|\"mocha\"\s*:|\bexclude\b|\binclude\b")
_CI_OPTS = (r"\btest|pytest|jest|vitest|mocha|cargo|go\s+test|mvn|gradle|tox|nox|make\b|continue-on-error|"
            r"\|\|\s*true|allow_failure|if:\s*(false|\$\{\{\s*false)")

# (file name pattern, changed-line pattern or None for every change)
_RUNNER_FILES: tuple[tuple[re.Pattern[str], re.Pattern[str] | None], ...] = (
    (re.compile(r"(^|/)(pytest\.ini|\.pytest\.ini|tox\.ini|setup\.cfg|pyproject\.toml|noxfile\.py)$"),
     re.compile(_PYTEST_OPTS)),
    (re.compile(r"(^|/)package\.json$"), re.compile(_JS_OPTS)),
    (re.compile(r"(^|/)(jest|vitest|vite|mocha|karma|ava|playwright|cypress)\.config\.[cm]?[jt]s(on)?$|"
                r"(^|/)\.mocharc(\.\w+)?$|(^|/)vitest\.workspace\.[jt]s$"), None),
    (re.compile(r"(^|/)Cargo\.toml$|(^|/)\.cargo/config(\.toml)?$|(^|/)\.config/nextest\.toml$"),
     re.compile(r"\[\[test\]\]|\bharness\b|^\s*test\s*=|\[profile\.test\]|\bdefault-filter\b|\bfilter\b")),
    (re.compile(r"(^|/)pom\.xml$"),
     re.compile(r"skipTests|maven\.test\.|<exclude|surefire|failsafe|testFailureIgnore|<groups>|<test>")),
    (re.compile(r"(^|/)build\.gradle(\.kts)?$"),
     re.compile(r"\btest\s*[({]|exclude|ignoreFailures|excludeTestsMatching|filter|enabled\s*=\s*false|"
                r"useJUnitPlatform")),
    (re.compile(r"(^|/)(GNU)?[Mm]akefile$|\.mk$|(^|/)justfile$|(^|/)Taskfile\.ya?ml$"),
     re.compile(r"\btest|\|\|\s*true|\s-(k|m|run|skip)\b|--deselect|--ignore")),
    (re.compile(r"(^|/)\.github/workflows/[^/]+\.ya?ml$|(^|/)\.gitlab-ci\.ya?ml$|(^|/)\.circleci/|"
                r"(^|/)azure-pipelines\.ya?ml$|(^|/)Jenkinsfile$|(^|/)\.travis\.ya?ml$|(^|/)\.buildkite/"),
     re.compile(_CI_OPTS)),
)
_NEW_CONFIG = re.compile(r"addopts|(^|\s|=|\")-(k|m)\b|--deselect|--ignore|collect_ignore|exclude|testPathIgnore|"
                         r"testNamePattern|passWithNoTests|allowOnly|skip|harness\s*=\s*false|ignoreFailures")
_PATHLIKE = re.compile(r"[\w./-]+\.(sh|bash|py|js|mjs|cjs|ts|rb|pl|mk|toml|ini|cfg|json|ya?ml)$|^\.?\.?/[\w./-]+$")


def command_files(verify: str | None) -> set[str]:
    """Paths the verify command names (its script, a config it passes), relative as written."""
    if not verify:
        return set()
    try:
        words = shlex.split(verify, comments=True)
    except ValueError:
        words = verify.split()
    found: set[str] = set()
    for word in words:
        for part in re.split(r"[=,]", word):
            if _PATHLIKE.search(part) and not part.startswith("-"):
                found.add(str(PurePosixPath(part.removeprefix("./"))))
    return found


def is_runner_file(path: str) -> bool:
    """A test runner's config or CI file (whichever lines of it changed)."""
    return any(name_pattern.search(path) for name_pattern, _ in _RUNNER_FILES)


def _names(file: FileDiff) -> set[str]:
    return {p for p in (file.old_path, file.new_path) if p}


def _names_new_file(text: str, new_files: frozenset[str]) -> bool:
    """The line names (as a path or a glob's tail) a file the same diff adds: a new test put on a list."""
    tails = [w.lstrip("*/.") for w in re.findall(r"[\w./*-]+\.\w+", text)]
    return bool(tails) and all(any(new == t or new.endswith("/" + t) for new in new_files) for t in tails)


def verify_input_findings(file: FileDiff, verify: str | None,
                          new_files: frozenset[str] = frozenset()) -> Iterator[TamperFinding]:
    """`new_files`: the files the diff adds; a config line that only lists one of them is no finding."""
    named = command_files(verify)
    if _names(file) & named:
        line = next((ln.number for ln in file.lines("+") + file.lines("-")), None)
        how = "deleted" if file.deleted else "changed"
        yield TamperFinding(file.path, line, "verify-input", f"the verify command's own file {how}")
        return
    for name_pattern, line_pattern in _RUNNER_FILES:
        if not any(name_pattern.search(name) for name in _names(file)):
            continue
        changed = file.lines("+") + file.lines("-")
        if file.added_file:  # a new config counts only where it leaves tests out
            line_pattern = _NEW_CONFIG
        hits = [ln for ln in changed if (line_pattern is None or line_pattern.search(ln.text))
                and not (ln.kind == "+" and _names_new_file(ln.text, new_files))]
        if hits:
            text = hits[0].text.strip()[:60]
            yield TamperFinding(file.path, hits[0].number, "verify-input", f"test options changed: {text}")
        return
