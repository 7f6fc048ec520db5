"""Reading a sed script command by command, for the commands that run a shell: GNU sed's `e` command
(`1e CMD`, `0~2e CMD`, `\\,re,e CMD`) and the `e` flag of `s///` (the pattern space is run).

Addresses (`N`, `$`, `first~step`, `/re/`, `\\cREc`, with `I`/`M` and a second address), blocks and
`!` are stepped over; the text of `s`, `y`, `a`/`i`/`c`, file names and labels is skipped, so an
`e` inside them is not taken for a command."""

from __future__ import annotations

_TEXT_TO_LINE_END = frozenset("aicrRwWbtT:#")


def sed_executes(script: str) -> str | None:
    """The part of `script` that makes sed run a shell command, or None."""
    i, n = 0, len(script)
    while i < n:
        i = _skip(script, i, " \t\n;{}!")
        if i >= n:
            return None
        i = _address(script, i)
        i = _skip(script, i, " \t")
        if i < n and script[i] == ",":
            i = _address(script, _skip(script, i + 1, " \t"))
        i = _skip(script, i, " \t!")
        if i >= n:
            return None
        command = script[i]
        if command == "e":
            end = script.find("\n", i)
            return script[i:end if end >= 0 else n].strip() or "e"
        if command in "sy":
            i, flags = _substitution(script, i + 1, command == "s")
            if "e" in flags:
                return "s///e"
            if "w" in flags:
                i = _line_end(script, i)
        elif command in _TEXT_TO_LINE_END:
            i = _line_end(script, i + 1)
        else:
            i += 1
    return None


def _skip(script: str, i: int, chars: str) -> int:
    while i < len(script) and script[i] in chars:
        i += 1
    return i


def _line_end(script: str, i: int) -> int:
    end = script.find("\n", i)
    return len(script) if end < 0 else end


def _delimited(script: str, i: int, delimiter: str) -> int:
    """The index after the closing `delimiter` of a field starting at `i` (backslash escapes honoured)."""
    while i < len(script) and script[i] != delimiter:
        i += 2 if script[i] == "\\" else 1
    return i + 1


def _address(script: str, i: int) -> int:
    n = len(script)
    if i < n and script[i] == "/":
        i = _delimited(script, i + 1, "/")
    elif i + 1 < n and script[i] == "\\":
        i = _delimited(script, i + 2, script[i + 1])
    elif i < n and script[i] in "+~":  # `addr,+N` / `addr,~N`
        i = _skip(script, i + 1, "0123456789")
    else:
        i = _skip(script, i, "0123456789$")
        if i < n and script[i] == "~":  # `first~step`
            i = _skip(script, i + 1, "0123456789")
    return _skip(script, i, "IM")


def _substitution(script: str, i: int, flags_follow: bool) -> tuple[int, str]:
    """Skip `s`/`y`'s two delimited fields; the index after them and (for `s`) the flags."""
    if i >= len(script):
        return i, ""
    delimiter = script[i]
    i = _delimited(script, i + 1, delimiter)
    i = _delimited(script, i, delimiter)
    if not flags_follow:
        return i, ""
    start = i
    while i < len(script) and script[i] not in ";\n}":
        if script[i] == "w":  # `w FILE` ends the flags; the file name runs to the line's end
            return i + 1, script[start:i + 1]
        i += 1
    return i, script[start:i]
