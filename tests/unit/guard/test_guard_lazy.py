"""What the guard defers to keep its import small: regexes compiled on first use, the bash grammar
loaded without its package's `__init__`. Deferring must not hide a broken pattern or grammar."""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Iterator
from types import ModuleType

import pytest
from tree_sitter import Language, Parser

import kilo_loop.guard.packs
import kilo_loop.guard.shell
from kilo_loop.guard import runtime as guard_module
from kilo_loop.guard.lazy_regex import LazyRegex
from kilo_loop.guard.packs import PACKS
from kilo_loop.guard.shell import grammar


def test_a_lazy_regex_compiles_once_on_first_use() -> None:
    lazy = LazyRegex(r"(\w+)=(\d+)", re.IGNORECASE)
    assert lazy._compiled is None
    assert lazy.search("x A=1").group(1) == "A"  # type: ignore[union-attr]
    first = lazy.compiled
    assert lazy.compiled is first and first.flags & re.IGNORECASE


@pytest.mark.parametrize("text", ["", "a=1 b=22", "no pairs", "k=1\nv=2"])
def test_a_lazy_regex_answers_like_re(text: str) -> None:
    pattern = r"(\w)=(\d+)"
    lazy, eager = LazyRegex(pattern), re.compile(pattern)
    for name in ("search", "match", "fullmatch"):
        mine, theirs = getattr(lazy, name)(text), getattr(eager, name)(text)
        assert (mine and mine.span()) == (theirs and theirs.span()), name
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in eager.finditer(text)]
    assert lazy.sub(r"\2", text) == eager.sub(r"\2", text)


def _modules(package: ModuleType) -> Iterator[ModuleType]:
    yield package
    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        yield importlib.import_module(info.name)


def _lazy_regexes(value: object, depth: int = 0) -> Iterator[LazyRegex]:
    if isinstance(value, LazyRegex):
        yield value
    elif depth < 3 and isinstance(value, dict):
        for item in value.values():
            yield from _lazy_regexes(item, depth + 1)
    elif depth < 3 and isinstance(value, list | tuple) and not isinstance(value, str):
        for item in value:
            yield from _lazy_regexes(item, depth + 1)


def test_every_deferred_guard_pattern_compiles() -> None:
    """A typo in a pattern no longer fails the import; it must fail here instead."""
    modules = [guard_module, *_modules(kilo_loop.guard.shell), *_modules(kilo_loop.guard.packs)]
    found = [regex for module in modules for value in vars(module).values() for regex in _lazy_regexes(value)]
    found += [rule.pattern for pack in PACKS for rule in pack.text_rules]
    assert len(found) >= 30
    for regex in found:
        assert isinstance(regex.compiled, re.Pattern), regex


def test_the_grammar_parses_bash() -> None:
    parser = Parser(Language(grammar.bash_language()))
    tree = parser.parse(b"cd /tmp && ls | wc -l")
    assert tree.root_node.type == "program" and not tree.root_node.has_error


def test_the_grammar_falls_back_to_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grammar, "_binding", lambda: None)
    parser = Parser(Language(grammar.bash_language()))
    assert not parser.parse(b"echo hi").root_node.has_error


def test_the_grammar_is_the_packages_own() -> None:
    import tree_sitter_bash

    assert grammar._binding() is not None  # the direct route works here
    assert Language(grammar.bash_language()) == Language(tree_sitter_bash.language())
