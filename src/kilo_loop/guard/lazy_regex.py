"""Regular expressions compiled on first use.

The guard runs in a fresh process before every agent tool call (a pre-tool hook), and one
decision touches only a few of its patterns; compiling all of them at import was a large part of
the hook's start-up. A `LazyRegex` keeps the pattern text and compiles it once, when first used;
it answers the `re.Pattern` methods the guard calls.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator


class LazyRegex:
    __slots__ = ("_compiled", "flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self.flags)
        return self._compiled

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        return self.compiled.search(text, pos)

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        return self.compiled.match(text, pos)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        return self.compiled.fullmatch(text)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(text)

    def sub(self, replacement: str | Callable[[re.Match[str]], str], text: str) -> str:
        return self.compiled.sub(replacement, text)

    def __repr__(self) -> str:
        return f"LazyRegex({self.pattern!r})"
