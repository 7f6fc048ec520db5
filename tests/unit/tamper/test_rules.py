"""The tamper rules on small diffs, one per way of weakening a test, in each language; and what is not
a finding (a new skipped test, a renamed test, an assertion rewritten, a dependency bump)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kilo_loop.tamper import detect
from kilo_loop.tamper.diff import parse_diff
from kilo_loop.tamper.verify_inputs import command_files


def diff(path: str, *lines: str, old: str | None = "", new: str | None = "") -> str:
    """A one-hunk git diff of `path`; lines start with '+', '-' or ' '."""
    old_path = path if old == "" else old
    new_path = path if new == "" else new
    head = f"diff --git a/{old_path or path} b/{new_path or path}\n"
    if old_path is None:
        head += "new file mode 100644\n"
    if new_path is None:
        head += "deleted file mode 100644\n"
    head += f"--- {'a/' + old_path if old_path else '/dev/null'}\n+++ {'b/' + new_path if new_path else '/dev/null'}\n"
    old_n = sum(1 for line in lines if line[0] in "- ")
    new_n = sum(1 for line in lines if line[0] in "+ ")
    return head + f"@@ -1,{old_n} +1,{new_n} @@\n" + "".join(line + "\n" for line in lines)


def rules(text: str, verify: str | None = None) -> list[str]:
    return [f.rule for f in detect(text, verify)]


@pytest.mark.parametrize(("path", "lines"), [
    ("tests/test_a.py", (" import pytest", "+@pytest.mark.skip(reason='x')", " def test_a():", "     assert f()")),
    ("tests/test_a.py", (" def test_a():", "+    pytest.skip('later')", "     assert f()")),
    ("tests/test_a.py", ("+@pytest.mark.xfail", " def test_a():", "     assert f()")),
    ("tests/test_a.py", ("+@unittest.skip('x')", "     def test_a(self):", "         self.assertTrue(f())")),
    ("src/a.test.ts", ("-it('adds', () => {", "+it.skip('adds', () => {", "   expect(add(1, 1)).toBe(2)")),
    ("src/a.test.ts", ("-describe('adds', () => {", "+xdescribe('adds', () => {", "   it('x', () => {})")),
    ("src/a.spec.js", ("-it('adds', () => {", "+it.todo('adds', () => {")),
    ("src/a.test.ts", ("-it('adds', () => {", "+it.skipIf(process.env.CI)('adds', () => {", "   expect(1).toBe(1)")),
    ("a_test.go", (" func TestA(t *testing.T) {", "+\tt.Skip(\"flaky\")", " \tif f() != 1 {")),
    ("tests/a.rs", ("+#[ignore]", " #[test]", " fn adds() {", "     assert_eq!(add(1, 1), 2);")),
    ("src/lib.rs", ("+    #[cfg_attr(miri, ignore)]", "     #[test]", "     fn adds() {")),
    ("src/test/java/AT.java", ("+  @Disabled(\"flaky\")", "   @Test", "   void adds() {")),
    ("src/test/java/AT.java", ("-  @Test public void adds() {", "+  @Test @Ignore public void adds() {")),
])
def test_an_added_skip_on_an_existing_test_is_a_finding(path: str, lines: tuple[str, ...]) -> None:
    assert "skip-marker" in rules(diff(path, *lines))


@pytest.mark.parametrize(("path", "line"), [
    ("src/a.test.ts", "+it.only('adds', () => {"),
    ("src/a.test.ts", "+describe.only('adds', () => {"),
    ("src/a.spec.js", "+fit('adds', () => {"),
])
def test_a_focus_is_always_a_finding(path: str, line: str) -> None:
    assert rules(diff(path, line, "+  expect(1).toBe(1)", "+})")) == ["focus-marker"]


def test_a_new_test_added_skipped_is_not_a_finding() -> None:
    text = diff("tests/test_a.py", "+@pytest.mark.skipif(sys.platform == 'win32', reason='posix')",
                "+def test_new():", "+    assert f()")
    assert rules(text) == []


def test_a_deleted_test_file_is_a_finding_and_a_renamed_one_is_not() -> None:
    assert rules(diff("tests/test_a.py", "-def test_a():", "-    assert f()", new=None)) == ["deleted-test-file"]
    renamed = "diff --git a/tests/test_a.py b/tests/test_b.py\nsimilarity index 100%\n" \
              "rename from tests/test_a.py\nrename to tests/test_b.py\n"
    assert rules(renamed) == []


def test_a_deleted_fixture_under_a_test_folder_is_not_a_deleted_test() -> None:
    assert rules(diff("test/fixtures/data.js", "-module.exports = {a: 1}", new=None)) == []


def test_fewer_assertions_is_a_finding_unless_they_moved_to_another_test_file() -> None:
    lost = diff("tests/test_a.py", " def test_a():", "     assert f() == 1", "-    assert g() == 2")
    assert rules(lost) == ["fewer-assertions"]
    moved = lost + diff("tests/test_b.py", " def test_b():", "+    assert g() == 2")
    assert rules(moved) == []


def test_an_assertion_rewritten_keeps_its_count() -> None:
    text = diff("src/test/java/AT.java", "-    assertEquals(null, f());", "+    assertNull(f());")
    assert rules(text) == []


def test_an_emptied_test_body_is_a_finding() -> None:
    text = diff("tests/test_a.py", " def test_a():", "-    assert f() == 1", "+    pass")
    assert rules(text) == ["emptied-test"]


@pytest.mark.parametrize(("path", "lines"), [
    ("pytest.ini", (" [pytest]", "-addopts = -q", '+addopts = -q -k "not slow_test"')),
    ("pyproject.toml", (" [tool.pytest.ini_options]", '+addopts = "--deselect tests/test_a.py::test_a"')),
    ("setup.cfg", (" [tool:pytest]", "+addopts = --ignore=tests/test_a.py")),
    ("package.json", ('-    "test": "vitest run",', '+    "test": "vitest run --passWithNoTests",')),
    ("vitest.config.ts", ("   test: {", "+    exclude: ['src/a.test.ts'],")),
    (".github/workflows/ci.yml", ("-      - run: pytest", "+      - run: pytest || true")),
    ("pom.xml", ("+        <skipTests>true</skipTests>",)),
])
def test_an_edit_to_what_verify_reads_is_a_finding(path: str, lines: tuple[str, ...]) -> None:
    assert rules(diff(path, *lines)) == ["verify-input"]


def test_the_verify_script_itself_is_watched_whatever_changed() -> None:
    text = diff("scripts/check.sh", "-pytest -q", "+pytest -q tests/test_fast.py")
    assert rules(text, "bash scripts/check.sh") == ["verify-input"]
    assert rules(text, "pytest -q") == []
    assert command_files("./verify.sh --fast && make -f build/ci.mk") == {"verify.sh", "build/ci.mk"}


def test_a_dependency_bump_in_pyproject_is_not_a_finding() -> None:
    text = diff("pyproject.toml", " dependencies = [", '-  "httpx==0.27.0",', '+  "httpx==0.28.1",')
    assert rules(text) == []


def test_a_finding_names_file_line_and_rule() -> None:
    text = diff("tests/test_a.py", " import pytest", "+@pytest.mark.skip(reason='x')", " def test_a():",
                "     assert f()")
    (finding,) = detect(text)
    assert (finding.file, finding.line, finding.rule) == ("tests/test_a.py", 2, "skip-marker")
    assert finding.as_dict()["rule"] == "skip-marker" and "tests/test_a.py:2" in finding.text()


def test_a_removed_line_that_looks_like_a_file_header_stays_in_its_hunk() -> None:
    text = diff("tests/test_a.sql.py", " def test_a():", "--- a comment removed", "     assert f()")
    (file,) = parse_diff(text)
    assert [line.text for line in file.lines("-")] == ["-- a comment removed"]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("+- @\\abdfgist/.:_()[]#\n0123456789,\"'`")), max_size=400),
       st.one_of(st.none(), st.text(max_size=40)))
def test_any_text_is_read_without_an_error(text: str, verify: str | None) -> None:
    detect(text, verify)
    detect("diff --git a/t/test_x.py b/t/test_x.py\n" + text, verify)
    detect("diff --git a/t/x.test.ts b/t/x.test.ts\n@@ -1,9 +1,9 @@\n" + text, verify)  # template literals


def test_a_test_file_the_verify_command_names_is_judged_as_a_test() -> None:
    added = diff("tests/test_a.py", " def test_a():", "     assert f()", "+def test_b():", "+    assert g()")
    assert rules(added, "pytest -q tests/test_a.py") == []
    skipped = diff("tests/test_a.py", "+@pytest.mark.skip", " def test_a():", "     assert f()")
    assert rules(skipped, "pytest -q tests/test_a.py") == ["skip-marker"]


def test_tests_taken_out_of_a_file_are_a_finding_unless_merged_or_moved() -> None:
    gone = diff("tests/test_a.py", " def test_a():", "     assert f()", "-def test_b():", "-    run()")
    assert rules(gone) == ["removed-test"]
    merged = diff("t/a.test.js", "-it('one', () => {", "-  expect(a).toBe(1)", "-})", "-it('two', () => {",
                  "-  expect(b).toBe(2)", "+it('both', () => {", "+  expect(a).toBe(1)", "+  expect(b).toBe(2)")
    assert rules(merged) == []
    already_ignored = diff("src/test/java/AT.java", "-  @Ignore", "-  @Test public void external() {",
                           "-    run();", "-  }")
    assert rules(already_ignored) == []


@pytest.mark.parametrize("lines", [
    (" def test_a():", "+    py.test.skip('broken on win32')", "     assert f()"),
    ("+@py.test.mark.skipif(\"sys.platform == 'win32'\")", " def test_a():", "     assert f()"),
    ("+@pytest.mark.parametrize('x', [pytest.param(1, marks=pytest.mark.skip)])", " def test_a(x):"),
    ("+xfail_if_pypy = pytest.mark.xfail(hasattr(sys, 'pypy_version_info'))",),
    ("+def setup_module(mod):", "+    pytest.skip('not on this platform')"),
])
def test_older_and_indirect_python_skips(lines: tuple[str, ...]) -> None:
    assert "skip-marker" in rules(diff("testing/test_a.py", *lines))


def test_a_skip_in_a_new_test_class_setup_is_not_a_finding() -> None:
    text = diff("tests/test_a.py", "+class TestNew(unittest.TestCase):", "+    def setUp(self):",
                "+        self.skipTest('needs x')", "+    def test_new(self):", "+        self.assertTrue(f())")
    assert rules(text) == []


def test_an_early_return_added_to_an_existing_rust_test_is_a_skip() -> None:
    existing = diff("tests/fs.rs", " #[test]", " fn reads() {", "+    if !supported() {", "+        return;",
                    "+    }", "     assert!(read());")
    assert rules(existing) == ["skip-marker"]
    new = diff("tests/fs.rs", "+#[test]", "+fn reads_new() {", "+    if !supported() {", "+        return;",
               "+    }", "+    assert!(read());")
    assert rules(new) == []


def test_an_import_of_an_assertion_is_not_an_assertion() -> None:
    text = diff("src/test/java/AT.java", "-import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;",
                "+import static org.junit.jupiter.api.Assertions.assertEquals;", "-import org.junit.Assert.fail")
    assert rules(text) == []


# A test's source kept in a string (a fixture that writes a test file and runs it) is data.
@pytest.mark.parametrize(("path", "lines"), [
    ("testing/test_x.py", ("+def test_folding(pytester):", "+    pytester.makepyfile(", '+        """',
                           '+        pytestmark = pytest.mark.skip("Folding")', "+        def test_func():",
                           "+            pass", '+        """', "+    )", "+    assert pytester.runpytest().ret == 0")),
    ("test/collect.test.ts", ("+test('collects', async () => {", "+  const m = await collect(`",
                              "+    test.only('only extended test', () => {})", "+  `)", "+  expect(m).toBeTruthy()",
                              "+})")),
    # the hunk starts inside the string: its first delimiter closes it
    ("testing/test_y.py", ("             def test_4(arg):", "                 l.append(4)", "-            def test_5():",
                           "-                assert len(l) == 12", '         """)', "         reprec.assertoutcome()")),
])
def test_a_marker_or_a_test_inside_a_string_is_data(path: str, lines: tuple[str, ...]) -> None:
    assert rules(diff(path, *lines)) == []


def test_a_marker_next_to_a_closed_string_is_still_seen() -> None:
    lines = (" def test_a():", '     """The docstring."""', "+    pytest.skip('later')", "     assert f()")
    assert rules(diff("tests/test_a.py", *lines)) == ["skip-marker"]
    docstring = (" def test_a():", '     """', "     Docs.", '     """', "+    pytest.skip('later')", "     assert f()")
    assert rules(diff("tests/test_a.py", *docstring)) == ["skip-marker"]


def test_a_config_line_listing_a_test_the_diff_adds_is_no_finding() -> None:
    config = diff("vitest.config.ts", "   exclude: [", "+    '**/new-case.test.ts',", "   ],")
    new_test = diff("test/new-case.test.ts", "+test('x', () => { expect(1).toBe(1) })", old=None)
    assert rules(config + new_test) == []
    assert rules(config) == ["verify-input"]  # the same line naming a test that was there before


# Assertions folded into a newly parametrized test run once per case: not fewer assertions.
@pytest.mark.parametrize(("path", "lines"), [
    ("tests/test_a.py", ("-def test_a():", "-    assert f(1) == 1", "-    assert f(2) == 2", "-    assert f(3) == 3",
                         "+@pytest.mark.parametrize('n', [1, 2, 3])", "+def test_a(n):", "+    assert f(n) == n")),
    ("tests/test_a.py", ("-def test_a():", "-    assert f(1) == 1", "-    assert f(2) == 2",
                         "+@pytest.mark.parametrize(", "+    'n',", "+    [", "+        1,", "+        2,", "+    ],",
                         "+)", "+def test_a(n):", "+    assert f(n) == n")),
    ("src/test/java/ATest.java", ("-    @Test", "-    void a() {", "-        assertEquals(1, f(1));",
                                  "-        assertEquals(2, f(2));", "-    }",
                                  "+    static Arguments[] a() {", "+        return new Arguments[]{",
                                  "+            Arguments.of(1),", "+            Arguments.of(2),", "+        };",
                                  "+    }", "+    @ParameterizedTest", "+    @MethodSource", "+    void a(int n) {",
                                  "+        assertEquals(n, f(n));", "+    }")),
    ("src/a.test.ts", ("-test('a', () => {", "-  expect(f(1)).toBe(1)", "-  expect(f(2)).toBe(2)", "-})",
                       "+test.each([", "+  [1],", "+  [2],", "+])('a %i', (n) => {", "+  expect(f(n)).toBe(n)",
                       "+})")),
])
def test_assertions_folded_into_a_parametrized_test_are_not_fewer(path: str, lines: tuple[str, ...]) -> None:
    assert rules(diff(path, *lines)) == []


def test_a_parametrized_rewrite_that_still_asserts_less_is_found() -> None:
    lines = ("-def test_a():", *(f"-    assert f({n}) == {n}" for n in range(5)),
             "+@pytest.mark.parametrize('n', [1, 2])", "+def test_a(n):", "+    assert f(n) == n")
    assert rules(diff("tests/test_a.py", *lines)) == ["fewer-assertions"]
    edited = (" def test_b():", "     assert g()", "-@pytest.mark.parametrize('n', [1, 2, 3])",
              "-def test_a(n):", "-    assert f(n) == n", "-    assert h(n)",
              "+@pytest.mark.parametrize('n', [1, 2, 3, 4])", "+def test_a(n):", "+    assert f(n) == n")
    assert rules(diff("tests/test_a.py", *edited)) == ["fewer-assertions"]  # an edited parametrization: no weight


def test_a_config_line_naming_another_file_than_the_new_test_is_still_found() -> None:
    config = diff("vitest.config.ts", "   exclude: [", "+    '**/renew-case.test.ts',", "   ],")
    new_test = diff("test/new-case.test.ts", "+test('x', () => { expect(1).toBe(1) })", old=None)
    assert rules(config + new_test) == ["verify-input"]
