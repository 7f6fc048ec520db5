"""What a test looks like in each language the detector reads: which paths hold tests, which lines
skip, focus or disable one, which lines assert, which lines open a test. Rules as data.

Line rules, not a parser: a diff holds fragments of files, and the corpus
(tests/corpora/tamper/) measures how well these lines do on real commits."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath


@dataclass(frozen=True)
class Language:
    name: str
    suffixes: tuple[str, ...]
    test_path: re.Pattern[str]
    # Added above a test (decorator, attribute, annotation): skips the test that follows.
    skip_marker: re.Pattern[str]
    # Added inside a test's body: skips the test it is in.
    skip_call: re.Pattern[str]
    # Added on the line that opens a test (`it.skip(`, `xit(`): skips that test.
    skip_opener: re.Pattern[str]
    # Runs only the marked tests: every other test of the file stops running.
    focus: re.Pattern[str]
    assertion: re.Pattern[str]
    test_opener: re.Pattern[str]
    # Opens any function (a test or a helper): where a skip call's enclosing function is looked for.
    scope: re.Pattern[str] = re.compile(r"(?!x)x")
    # Whole-file skips (`pytestmark = pytest.mark.skip`, `collect_ignore`, a Go `ignore` build tag).
    file_skip: re.Pattern[str] = re.compile(r"(?!x)x")

    @property
    def marks(self) -> tuple[re.Pattern[str], ...]:
        return (self.skip_marker, self.skip_call, self.skip_opener, self.focus, self.file_skip)


def any_mark(lang: Language) -> re.Pattern[str]:
    """One pattern for every skip, focus and file-skip pattern of the language: a line that does not
    match it is not looked at again (most lines of a diff)."""
    return re.compile("|".join(f"(?:{p.pattern})" for p in lang.marks if p.pattern != _NEVER.pattern))


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


_NEVER = re.compile(r"(?!x)x")

PYTHON = Language(
    name="python",
    suffixes=(".py",),
    test_path=_rx(r"(^|/)(tests?|testing)/|(^|/)test_[^/]*\.py$|_tests?\.py$|(^|/)conftest\.py$"),
    skip_marker=_rx(r"^\s*@\s*((py\.)?(pytest|test)\.mark\.(skip|skipif|xfail)\b|(unittest\.)?(skip|skipIf|"
                    r"skipUnless|expectedFailure)\b|mark\.(skip|skipif|xfail)\b|pytest\.mark\.flaky\b|flaky\b)|"
                    r"\bmarks\s*=\s*[\[(]?\s*(pytest\.)?mark\.(skip|skipif|xfail)\b"),
    skip_call=_rx(r"\b((py\.)?(pytest|test)\.(skip|xfail)\s*\(|self\.skipTest\s*\(|raise\s+(unittest\.)?SkipTest\b|"
                  r"pytest\.importorskip\s*\()"),
    skip_opener=_NEVER,
    focus=_NEVER,
    assertion=_rx(r"^\s*assert\b|\.assert\w*\s*\(|\bassert_\w+\s*\(|\bpytest\.(raises|warns|approx)\b|"
                  r"\bself\.fail\w*\s*\(|\bpytest\.fail\s*\("),
    test_opener=_rx(r"^\s*(async\s+)?def\s+test\w*\s*\(|^\s*class\s+Test\w*"),
    scope=_rx(r"^\s*(async\s+)?def\s"),
    file_skip=_rx(r"^\s*pytestmark\s*=.*\b(skip|skipif|xfail)\b|^\s*collect_ignore|"
                  r"^\s*pytest\.skip\s*\(.*allow_module_level|"
                  # a marker kept in a variable, to be put on tests: `xfail_if_x = pytest.mark.xfail(...)`
                  r"^\w+\s*=\s*(py\.)?(pytest|test)\.mark\.(skip|skipif|xfail)\b|"
                  r"^\s*def\s+pytest_(ignore_collect|collection_modifyitems)\b"),
)

_JS_TEST = r"(it|test|describe|context|suite|specify|bench)"
JAVASCRIPT = Language(
    name="javascript",
    suffixes=(".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts"),
    test_path=_rx(r"\.(test|spec|e2e)\.[cm]?[jt]sx?$|(^|/)(tests?|__tests__|spec|e2e)/"),
    skip_marker=_NEVER,
    skip_call=_rx(r"\b(this|ctx|context|t)\.skip\s*\(|\bpending\s*\(\s*\)"),
    skip_opener=_rx(rf"(^|[^\w.])({_JS_TEST}(\.\w+)*\.(skip|todo|skipIf|runIf|fails)\b|x(it|test|describe|"
                    rf"context|specify)\s*\()"),
    focus=_rx(rf"(^|[^\w.]){_JS_TEST}(\.\w+)*\.only\b|(^|[^\w.])f(it|describe|test)\s*\("),
    assertion=_rx(r"\bexpect(Typeof)?\s*[.(]|\bassert\b\s*[.(]|\.should\b|\bt\.(is|not|deepEqual|truthy|falsy|"
                  r"throws\w*|equal|ok|true|false|snapshot|regex)\s*\(|\.to(Be|Equal|Match|Throw|Have|Contain)\w*\s*\("),
    test_opener=_rx(rf"(^|[^\w.])(x|f)?{_JS_TEST}(\.\w+)*\s*\("),
)

GO = Language(
    name="go",
    suffixes=(".go",),
    test_path=_rx(r"_test\.go$"),
    skip_marker=_NEVER,
    skip_call=_rx(r"\b\w+\.(Skip|Skipf|SkipNow)\s*\("),
    skip_opener=_NEVER,
    focus=_rx(r"(^|[^\w.])(FIt|FDescribe|FContext|FEntry|FDescribeTable)\s*\(|\bFocus\b"),
    assertion=_rx(r"\b\w+\.(Error|Errorf|Fatal|Fatalf|Fail|FailNow)\s*\(|\b(assert|require)\.\w+\s*\(|"
                  r"\bExpect\s*\(|\bOmega\s*\(|\bdiff\.|\bcmp\.Diff\s*\("),
    test_opener=_rx(r"^\s*func\s+(\(\w+\s+\*?\w+\)\s+)?(Test|Benchmark|Example|Fuzz)\w*\s*\(|\bt\.Run\s*\("),
    scope=_rx(r"^func\s"),
    file_skip=_rx(r"^//\s*\+build\s+ignore|^//go:build\s+ignore"),
)

RUST = Language(
    name="rust",
    suffixes=(".rs",),
    test_path=_rx(r"(^|/)tests?/.*\.rs$|(^|/)benches/.*\.rs$|_tests?\.rs$|(^|/)tests?\.rs$"),
    skip_marker=_rx(r"^\s*#\s*\[\s*(ignore\b|cfg_attr\s*\(.*\bignore\b|cfg\s*\(\s*not\s*\(\s*(windows|unix|darwin|macos|target_os|target_family)\b)"),
    # An early `return;` added to an existing test skips the rest of it.
    skip_call=_rx(r"^\s*return\s*;?\s*$"),
    skip_opener=_NEVER,
    focus=_NEVER,
    assertion=_rx(r"\b(debug_)?assert(_eq|_ne|_matches)?!\s*[(\[{]|#\s*\[\s*should_panic\b|\bprop_assert\w*!|"
                  r"\bpanic!\s*\(|\.expect_err\s*\(|\.unwrap_err\s*\("),
    test_opener=_rx(r"^\s*#\s*\[\s*(tokio::|async_std::)?test\b|^\s*(pub\s+)?(async\s+)?fn\s+test\w*\s*\("),
    scope=_rx(r"^\s*(pub(\([\w:]+\))?\s+)?(async\s+)?fn\s"),
)

JAVA = Language(
    name="java",
    suffixes=(".java", ".kt", ".kts", ".groovy", ".scala"),
    test_path=_rx(r"(^|/)src/(test|androidTest|jvmTest|commonTest|integrationTest)\w*/|Tests?\.(java|kt|groovy|scala)$|"
                  r"(^|/)tests?/"),
    skip_marker=_rx(r"(^|\s)@\s*(org\.junit\.(jupiter\.api\.)?)?(Disabled\w*|Ignore|EnabledIf\w*|"
                    r"EnabledOn\w*|Flaky)\b"),
    skip_call=_rx(r"\b(Assume|Assumptions)\.\w+\s*\(|(^|[^\w.])assume(True|False|That|NotNull|NoException)\s*\("),
    skip_opener=_NEVER,
    focus=_NEVER,
    assertion=_rx(r"\b(Assert\.|Assertions\.|assertThat\w*\s*\(|assert[A-Z]\w*\s*\()|\bfail\s*\(|"
                  r"\bverify\w*\s*\(|\bexpect\w*\s*\(|^\s*assert\s"),
    test_opener=_rx(r"^\s*@\s*(org\.junit\.(jupiter\.api\.)?)?(Test|ParameterizedTest|RepeatedTest|TestFactory|"
                    r"TestTemplate)\b|^\s*(public\s+)?(fun|void)\s+test\w*\s*\("),
    scope=_rx(r"^\s*((public|protected|private|static|final|synchronized|override|internal|suspend)\s+)*"
              r"(fun\s+\w+|void\s+\w+|[\w<>\[\]]+\s+\w+)\s*\([^;]*$"),
)

LANGUAGES: tuple[Language, ...] = (PYTHON, JAVASCRIPT, GO, RUST, JAVA)
ANY_MARK: dict[str, re.Pattern[str]] = {lang.name: any_mark(lang) for lang in LANGUAGES}


def language_of(path: str) -> Language | None:
    suffix = PurePosixPath(path).suffix.lower()
    return next((lang for lang in LANGUAGES if suffix in lang.suffixes), None)


def is_test_path(path: str, lang: Language) -> bool:
    return bool(lang.test_path.search(path))
