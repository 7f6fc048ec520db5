"""The shape of a rule pack: rules as data, and how one rule is matched against one command.

A rule names the commands it looks at, the leading operands (the subcommand path, e.g.
`system prune`), options of which one must be present (`flags`) or none may be (`unless`),
and optionally a `check` — a function for what a table cannot say (a path policy). Long
options match the way getopt_long and git read them: exactly or by a unique prefix.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import NamedTuple, Protocol

from kilo_loop.guard.lazy_regex import LazyRegex
from kilo_loop.guard.packs.paths import PathPolicy
from kilo_loop.guard.shell.model import SimpleCommand, has_option


class Check(Protocol):
    def __call__(self, cmd: SimpleCommand, paths: PathPolicy) -> str | None: ...


class Rule(NamedTuple):
    id: str
    reason: str
    names: tuple[str, ...]
    words: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    unless: tuple[str, ...] = ()
    check: Check | None = None
    """Returns a detail when the command is destructive (the rule denies), None when it is not."""


class TextRule(NamedTuple):
    """A pattern searched in the whole command text (for shapes with no command name, e.g. fork bombs)."""

    id: str
    reason: str
    pattern: LazyRegex


class Pack(NamedTuple):
    name: str
    title: str
    rules: tuple[Rule, ...]
    value_options: Mapping[str, tuple[str, ...]] = MappingProxyType({})
    """Per command, the options whose value is the next word (so it is not taken for an operand)."""
    text_rules: tuple[TextRule, ...] = ()
    vocabulary: Mapping[str, tuple[str, ...]] = MappingProxyType({})
    """Per command, the subcommands and options its `check` functions act on beyond the rules' own
    `words` / `flags` / `unless`: what a word built at run time is tried as (`git pu$x` may be `push`)."""

    def rules_by_name(self) -> dict[str, list[Rule]]:
        by_name: dict[str, list[Rule]] = {}
        for rule in self.rules:
            for name in rule.names:
                by_name.setdefault(name, []).append(rule)
        return by_name


def words_acted_on(pack: Pack) -> dict[str, dict[str, None]]:
    """Per command, every subcommand and option some rule of `pack` acts on, in rule order; a
    subcommand of a subcommand as both words (`system prune`)."""
    found: dict[str, dict[str, None]] = {}
    for name, words in pack.vocabulary.items():
        found.setdefault(name, {}).update(dict.fromkeys(words))
    for rule in pack.rules:
        for name in rule.names:
            words = (rule.words[0], " ".join(rule.words[:2])) if len(rule.words) > 1 else rule.words
            found.setdefault(name, {}).update(dict.fromkeys((*words, *rule.flags, *rule.unless)))
    return found


def operands(args: Sequence[str], value_options: Sequence[str] = ()) -> list[str]:
    """The words of `args` that are not options or option values."""
    found: list[str] = []
    skip = False
    for index, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg == "--":
            found += list(args[index + 1:])
            break
        if arg.startswith("-") and len(arg) > 1:
            skip = arg in value_options
            continue
        found.append(arg)
    return found


def _words_at_front(found: Sequence[str], words: Sequence[str]) -> bool:
    """`words` start at operand 0 or 1 (one global option value may come first: `kubectl -n x delete`)."""
    width = len(words)
    if found[:1] == ["help"] or "--help" in found:
        return False
    return any(list(found[start:start + width]) == list(words) for start in (0, 1))


def match(rule: Rule, cmd: SimpleCommand, paths: PathPolicy, value_options: Sequence[str] = ()) -> str | None:
    """None when `rule` does not deny `cmd`; else the detail to add to its reason ("" for none)."""
    if rule.words and not _words_at_front(operands(cmd.args, value_options), rule.words):
        return None
    if rule.flags and not has_option(cmd.args, *rule.flags):
        return None
    if rule.unless and has_option(cmd.args, *rule.unless):
        return None
    if rule.check is not None:
        return rule.check(cmd, paths)
    return ""


def subcommand(*words: str) -> Callable[[SimpleCommand], bool]:
    def test(cmd: SimpleCommand) -> bool:
        return list(operands(cmd.args)[:len(words)]) == list(words)
    return test
