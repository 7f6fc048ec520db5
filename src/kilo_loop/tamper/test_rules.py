"""The rules on test files: deleted, skipped or focused, asserting less, emptied. Pure."""

from __future__ import annotations

import re
from collections.abc import Iterator

from kilo_loop.tamper.diff import DiffLine, FileDiff, Hunk
from kilo_loop.tamper.finding import TamperFinding
from kilo_loop.tamper.languages import ANY_MARK, Language
from kilo_loop.tamper.params import parametrized_extra

_SKIP_WORDS = re.compile(r"\.(skip|todo|only|skipIf|runIf|fails)\b|\b[xf](?=(it|test|describe|context|specify)\s*\()")
_TRIVIAL = re.compile(r"^\s*(pass|\.\.\.|return;?|\{\s*\}|[{}();,\]]*|//.*|#(?!\[).*|/\*.*|\*.*|todo!\(\)|"
                      r"unimplemented!\(\)|@\w+.*)\s*$")
_SHORT = 60
_SETUP = re.compile(r"\b(def|void|fun|func)\s+(setup_module|setup_class|setUpClass|setUpModule|setUp|setup_method|"
                    r"setup_function|setupClass|beforeAll|beforeEach|TestMain)\b|@(Before|BeforeClass|BeforeAll|"
                    r"BeforeEach)\b|\b(beforeAll|beforeEach|before)\s*\(")
_TEST_NAME = re.compile(r"(^|/)conftest\.py$|(^|/)test_[^/]*$|_test\.\w+$|\.(test|spec)\.\w+$|Tests?\.\w+$|(^|/)tests?\.\w+$")


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _SHORT else text[: _SHORT - 1] + "…"


_MARKER_WORDS = re.compile(r"@(Ignore|Disabled\w*)\b(\([^)]*\))?|#\[ignore[^\]]*\]")
_NAME = re.compile(r"""(['"`])(.+?)\1|\b(def|fn|func|void|fun)\s+(\w+)""")


def _norm(text: str) -> str:
    return re.sub(r"\s+", "", _SKIP_WORDS.sub("", _MARKER_WORDS.sub("", text)))


def _name(text: str) -> str | None:
    """The test's name on its opener line: the first string literal, or the function's name."""
    match = _NAME.search(text)
    if match is None:
        return None
    return match.group(2) or match.group(4)


def _same_test(line: DiffLine, hunk: Hunk, following: str = "") -> bool:
    """A removed line of the hunk opens the same test (the same line without the marker, or the same name;
    an opener without a name, such as `@Test`, takes it from the line that follows)."""
    name, norm = _name(line.text) or _name(following), _norm(line.text)
    return any(_norm(r.text) == norm or (name is not None and _name(r.text) == name) for r in hunk.removed())


def _is_testy(file: FileDiff, lang: Language, test_path: bool) -> bool:
    return test_path or any(lang.test_opener.search(line.text) for hunk in file.hunks for line in hunk.lines)


def deleted_test_file(file: FileDiff, lang: Language, test_path: bool) -> Iterator[TamperFinding]:
    """A deleted file under a test folder counts when it held tests (a fixture or helper does not)."""
    if not file.deleted or not test_path:
        return
    gone = file.lines("-")
    named = bool(_TEST_NAME.search(file.path))
    if named or not gone or any(lang.test_opener.search(ln.text) or lang.assertion.search(ln.text) for ln in gone):
        yield TamperFinding(file.path, None, "deleted-test-file", "test file deleted")


def _existing_opener(hunk: Hunk, index: int, lang: Language, direction: int) -> bool | None:
    """From line `index`, the nearest test opener in `direction`: True when that test existed before
    the change (a context line, or an added line that a removed line matches), False when it is new,
    None when the hunk shows none."""
    lines = hunk.lines
    i = index if direction > 0 else index + direction
    while 0 <= i < len(lines):
        line = lines[i]
        if line.kind != "-" and _SETUP.search(line.text):
            # A skip in a setup function skips every test it sets up: the old ones too, unless the hunk
            # brings the tests it sets up along with it.
            return line.kind == " " or not any(lang.test_opener.search(a.text) for a in hunk.added())
        if line.kind != "-" and (lang.test_opener.search(line.text) or lang.scope.search(line.text)):
            following = next((n.text for n in lines[i + 1:] if n.kind != "-"), "")
            return line.kind == " " or _same_test(line, hunk, following)
        i += direction
    return None


# Skipped whatever the platform: a removed test marked so checked nothing (skipif / assume are conditions).
_ALWAYS_SKIPPED = re.compile(r"@(pytest\.mark\.skip|unittest\.skip)\b|@Ignore\b|@Disabled\b|#\[\s*ignore\b|"
                             r"\.skip\s*\(|(^|[^\w.])x(it|test|describe)\s*\(")
_LOOSE_MARK = re.compile(r"skip|xfail|[Ii]gnore|Disabled|\.only\b|\bx(it|test|describe)\b|\bf(it|describe)\b")


def _was_there(line: DiffLine, hunk: Hunk, pattern: re.Pattern[str]) -> bool:
    """The hunk removes as many markers as it adds: a marker moved or reworded, not added."""
    if any(r.kind == "-" and pattern.search(r.text) and _norm(r.text) == _norm(line.text) for r in hunk.lines):
        return True
    added = sum(1 for a in hunk.added() if pattern.search(a.text))
    return sum(1 for r in hunk.removed() if _LOOSE_MARK.search(r.text)) >= added


def skip_markers(file: FileDiff, lang: Language) -> Iterator[TamperFinding]:
    marks = ANY_MARK[lang.name]
    for hunk in file.hunks:
        for index, line in enumerate(hunk.lines):
            if line.kind != "+" or not marks.search(line.text):
                continue
            finding = _skip_finding(file, hunk, index, line, lang)
            if finding is not None:
                yield finding


def _skip_finding(file: FileDiff, hunk: Hunk, index: int, line: DiffLine, lang: Language) -> TamperFinding | None:
    text = line.text
    if lang.focus.search(text) and not _was_there(line, hunk, lang.focus):
        return TamperFinding(file.path, line.number, "focus-marker", f"focus added: {_clip(text)}")
    if lang.file_skip.search(text) and not _was_there(line, hunk, lang.file_skip):
        return TamperFinding(file.path, line.number, "skip-marker", f"whole file skipped: {_clip(text)}")
    for pattern, direction in ((lang.skip_marker, 1), (lang.skip_call, -1), (lang.skip_opener, 0)):
        if not pattern.search(text) or _was_there(line, hunk, pattern):
            continue
        existed = _opener_existed(hunk, index, line, lang, direction)
        if existed is not False:
            return TamperFinding(file.path, line.number, "skip-marker", f"skip added: {_clip(text)}")
    return None


def _opener_existed(hunk: Hunk, index: int, line: DiffLine, lang: Language, direction: int) -> bool | None:
    if direction == 0:  # the marker is on the opener itself: was this test there without it?
        return _same_test(line, hunk)
    return _existing_opener(hunk, index, lang, direction)


def _count(lines: list[DiffLine], lang: Language) -> int:
    return sum(1 for line in lines if lang.assertion.search(line.text) and not _comment(line.text))


_IMPORT = re.compile(r"^\s*(import\b|from\s+\S+\s+import\b|use\s+[\w:]+|package\b)")


def _comment(text: str) -> bool:
    """A comment or an import: it names an assertion, it does not make one."""
    return text.lstrip().startswith(("#", "//", "/*", "*")) or bool(_IMPORT.match(text))


def _live_removed(file: FileDiff, lang: Language) -> list[DiffLine]:
    """The removed lines, less those of a removed test that was skipped already (it checked nothing)."""
    live: list[DiffLine] = []
    for hunk in file.hunks:
        skipped = False
        recent: list[DiffLine] = []
        for line in hunk.lines:
            if line.kind != "-":
                skipped, recent = False, []
                continue
            if lang.test_opener.search(line.text) or lang.scope.search(line.text):
                skipped = any(_ALWAYS_SKIPPED.search(r.text) for r in (*recent[-2:], line))
            recent.append(line)
            if not skipped:
                live.append(line)
    return live


def assertion_balance(file: FileDiff, lang: Language) -> tuple[int, int]:
    """(assertions removed, assertions added) in the file's diff; a skipped test's do not count."""
    return _count(_live_removed(file, lang), lang), assertions_added(file, lang)


def assertions_added(file: FileDiff, lang: Language) -> int:
    """Added assertions, those of a newly parametrized test once per case."""
    added = file.lines("+")
    return _count(added, lang) + parametrized_extra(file, lang, added)


def opener_balance(file: FileDiff, lang: Language) -> tuple[int, int]:
    """(tests whose opener was removed, tests whose opener was added); a removed test that was skipped
    already (a marker on the removed lines just above it) ran nothing and is not counted."""
    gone = file.lines("-")
    removed = sum(1 for i, line in enumerate(gone) if lang.test_opener.search(line.text)
                  and not any(_ALWAYS_SKIPPED.search(g.text) for g in gone[max(i - 2, 0): i + 1]))
    return removed, sum(1 for line in file.lines("+") if lang.test_opener.search(line.text))


def removed_tests(file: FileDiff, lang: Language, openers: tuple[int, int], balance: tuple[int, int],
                  elsewhere: int) -> Iterator[TamperFinding]:
    """More tests taken out of the file than put in, unless other test files of the diff gained as many,
    or their assertions all stayed in the file (tests merged into one)."""
    removed, added = openers
    if file.deleted or removed <= added + max(elsewhere, 0):
        return
    if balance[0] and balance[1] >= balance[0]:
        return
    first = next(line for line in file.lines("-") if lang.test_opener.search(line.text))
    yield TamperFinding(file.path, first.number, "removed-test",
                        f"{removed - added} test(s) removed: {_clip(first.text)}")


def fewer_assertions(file: FileDiff, lang: Language, balance: tuple[int, int],
                     elsewhere: int) -> Iterator[TamperFinding]:
    """Fewer assertions than before, unless other test files of the diff gained as many (tests moved)."""
    if file.deleted:
        return
    removed, added = balance
    if removed > added + max(elsewhere, 0):
        first = next((line.number for line in file.lines("-")
                      if lang.assertion.search(line.text) and not _comment(line.text)), None)
        yield TamperFinding(file.path, first, "fewer-assertions",
                            f"{removed - added} assertion(s) fewer ({removed} removed, {added} added)")


def emptied_tests(file: FileDiff, lang: Language) -> Iterator[TamperFinding]:
    """A hunk that takes a test's assertions out and leaves only trivial lines (pass, return, a comment)."""
    for hunk in file.hunks:
        removed, added = hunk.removed(), hunk.added()
        if not removed or _count(removed, lang) == 0 or _count(added, lang) > 0:
            continue
        if any(not _TRIVIAL.match(a.text) for a in added):
            continue
        if _count([line for line in hunk.lines if line.kind == " "], lang):
            continue  # an assertion is left in what the hunk shows: asserting less, not emptied
        openers = [line for line in hunk.lines if line.kind == " " and lang.test_opener.search(line.text)]
        if openers and not any(lang.test_opener.search(r.text) for r in removed):
            where = added[0].number if added else removed[0].number
            yield TamperFinding(file.path, where, "emptied-test", f"test body emptied: {_clip(openers[-1].text)}")


def test_file_findings(file: FileDiff, lang: Language, test_path: bool, balance: tuple[int, int] | None = None,
                       elsewhere: int = 0, tests_elsewhere: int = 0) -> list[TamperFinding]:
    """`balance`: the file's (assertions removed, added), when known; `elsewhere` and `tests_elsewhere`:
    the assertions and the tests the diff's other files of the language gained (net)."""
    found = list(deleted_test_file(file, lang, test_path))
    if found or not _is_testy(file, lang, test_path):
        return found
    found += skip_markers(file, lang)
    balance = balance if balance is not None else assertion_balance(file, lang)
    found += removed_tests(file, lang, opener_balance(file, lang), balance, tests_elsewhere)
    emptied = list(emptied_tests(file, lang)) if balance[0] else []
    found += emptied
    if not emptied:
        found += fewer_assertions(file, lang, balance, elsewhere)
    return found
