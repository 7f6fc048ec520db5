"""Decoding text the way bash and its builtins do: `$'…'` (ANSI-C quoting), `printf`/`echo -e`
escapes, and brace expansion."""

from __future__ import annotations

import re

from kilo_loop.guard.lazy_regex import LazyRegex
from kilo_loop.guard.shell.model import UNKNOWN

_BRACE = LazyRegex(r"\{([^{}]*)\}")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b",
            "f": "\f", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
_NUMERIC = (("x", 16, r"[0-9a-fA-F]{1,2}"), ("u", 16, r"[0-9a-fA-F]{1,4}"), ("U", 16, r"[0-9a-fA-F]{1,8}"))
_OCTAL = LazyRegex(r"[0-7]{1,3}")


def _escape(text: str, i: int, octal_needs_zero: bool) -> tuple[str, int]:
    """Decode the backslash escape at `text[i]` (a backslash); returns (decoded, next index)."""
    code = text[i + 1]
    for letter, base, digits in _NUMERIC:
        if code == letter:
            found = re.match(digits, text[i + 2:])
            if found:
                value = int(found.group(), base)
                return (chr(value) if value <= 0x10FFFF else UNKNOWN), i + 2 + found.end()
            return "\\" + code, i + 2
    octal_start = i + 2 if octal_needs_zero and code == "0" else i + 1
    if code.isdigit() and code in "01234567":
        found = _OCTAL.match(text, octal_start)
        if found:
            return chr(int(found.group(), 8) & 0xFF), found.end()
        return "\0", i + 2
    if code == "c" and i + 2 < len(text):
        return chr(ord(text[i + 2].upper()) ^ 0x40), i + 3
    return _ESCAPES.get(code, "\\" + code), i + 2


def _decode(text: str, octal_needs_zero: bool) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            decoded, i = _escape(text, i, octal_needs_zero)
            out.append(decoded)
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def ansi_c(body: str) -> str:
    """The text of `$'body'`: `\\x41`, `\\101` (octal), `\\u0041`, `\\cA`, `\\n`… decoded."""
    return _decode(body, octal_needs_zero=False)


def printf_text(args: list[str]) -> str | None:
    """What `printf FORMAT ARGS…` prints, when the format has only `%s`/`%b`/`%%` directives."""
    if not args or args[0] == "-v":
        return None
    fmt, values = args[0], list(args[1:])
    out: list[str] = []
    while True:  # bash reuses the format while arguments remain: `printf '%s ' git push` prints both
        used = _printf_once(fmt, values, out)
        if used is None:
            return None
        if not values or not used:
            return "".join(out)


def _printf_once(fmt: str, values: list[str], out: list[str]) -> int | None:
    """One pass of `fmt`, taking from `values`; how many it took (None for a directive not modelled)."""
    used = 0
    i = 0
    while i < len(fmt):
        ch = fmt[i]
        if ch == "\\" and i + 1 < len(fmt):
            text, i = _escape(fmt, i, octal_needs_zero=False)
            out.append(text)
            continue
        if ch == "%" and i + 1 < len(fmt):
            directive = fmt[i + 1]
            if directive == "%":
                out.append("%")
            elif directive in "sb":
                value = values.pop(0) if values else ""
                used += 1
                out.append(echo_escapes(value) if directive == "b" else value)
            else:
                return None
            i += 2
            continue
        out.append(ch)
        i += 1
    return used


def echo_escapes(text: str) -> str:
    """`echo -e` decoding (octal escapes are written `\\0NNN`)."""
    return _decode(text, octal_needs_zero=True)


def brace_alternatives(text: str, limit: int = 64) -> list[str] | None:
    """The words bash brace expansion makes of `text` (`a{b,c}` → `ab`, `ac`); None past `limit`."""
    pending, done = [text], []
    while pending:
        word = pending.pop(0)
        match = next((m for m in _BRACE.finditer(word) if "," in m.group(1) or ".." in m.group(1)), None)
        if match is None:
            done.append(word)
            continue
        inner = match.group(1)
        options = inner.split(",") if "," in inner else _sequence(inner)
        pending[:0] = [word[:match.start()] + option + word[match.end():] for option in options]
        if len(pending) + len(done) > limit:
            return None
    return done


def _sequence(inner: str) -> list[str]:
    """`{1..3}` → 1, 2, 3 (and `{a..c}`); the ends alone when it is too long or not a sequence."""
    ends = inner.split("..")
    if len(ends) >= 2 and all(e.lstrip("-").isdigit() for e in ends[:2]):
        low, high = int(ends[0]), int(ends[1])
        if abs(high - low) <= 32:
            step = 1 if high >= low else -1
            return [str(n) for n in range(low, high + step, step)]
    if len(ends) >= 2 and all(len(e) == 1 for e in ends[:2]):
        low_c, high_c = ord(ends[0]), ord(ends[1])
        if abs(high_c - low_c) <= 32:
            step = 1 if high_c >= low_c else -1
            return [chr(n) for n in range(low_c, high_c + step, step)]
    return ends[:2]


_ARITHMETIC = LazyRegex(r"[0-9+\-*/%() \t]{1,64}")


def integer_arithmetic(expression: str) -> int | None:
    """The value of a shell arithmetic expression made only of integers, `+ - * / %` and parentheses."""
    if not _ARITHMETIC.fullmatch(expression):
        return None
    import ast  # here, not at the top: few commands hold arithmetic

    try:
        tree = ast.parse(expression.replace("/", "//"), mode="eval")
    except SyntaxError:
        return None
    return _evaluate(tree.body)


def _evaluate(node: object) -> int | None:
    import ast

    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _evaluate(node.operand)
        return None if value is None else (-value if isinstance(node.op, ast.USub) else value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)):
        left, right = _evaluate(node.left), _evaluate(node.right)
        if left is None or right is None or (isinstance(node.op, (ast.FloorDiv, ast.Mod)) and right == 0):
            return None
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return left * right if abs(left) < 2**32 and abs(right) < 2**32 else None
        quotient = abs(left) // abs(right) * (1 if (left >= 0) == (right >= 0) else -1)  # C division
        return quotient if isinstance(node.op, ast.FloorDiv) else left - right * quotient
    return None
