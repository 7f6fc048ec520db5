"""Commands that change files without a redirect the walker sees: in-place editors change the
files they name (`sed -i … x.sh`), and some commands rewrite files they do not name (`git
checkout`, `tar x`). A script on disk read later in the same command may then hold something
else when it runs than what the guard read before it."""

from __future__ import annotations

from collections.abc import Sequence

from kilo_loop.guard.shell.model import parse_options

_IN_PLACE_FLAGS = {
    "sed": "i", "gsed": "i", "perl": "i", "ruby": "i", "shfmt": "w", "clang-format": "i", "black": "", "dos2unix": "",
    "unix2dos": "", "truncate": "", "ed": "", "red": "", "ex": "", "vim": "", "vi": "", "nvim": "",
}
"""Editor → the short flag that makes it write the files it names ("" when it always does)."""
_IN_PLACE_LONG = ("--in-place", "--write")
_CLUSTERED = frozenset("nplaErsuz")
"""Switches that may come before the in-place flag in one word (`sed -Ei`, `perl -pi`)."""
_TREE_GIT = frozenset({"checkout", "switch", "restore", "stash", "reset", "pull", "merge", "rebase", "cherry-pick",
                       "revert", "am", "apply", "read-tree", "checkout-index"})
_EXTRACTORS = frozenset({"unzip", "cpio", "7z", "7za", "7zz", "unar", "bsdtar", "tar", "gtar"})


def edited_in_place(name: str, args: Sequence[str]) -> list[str]:
    """The files an in-place editor may change: every operand (for sed and perl that includes the
    program; it names no file that matters)."""
    if name not in _IN_PLACE_FLAGS and not (name in ("awk", "gawk") and _awk_in_place(args)):
        return []
    flag = _IN_PLACE_FLAGS.get(name, "")
    if flag and not any(_has_flag(arg, flag) or arg.startswith(_IN_PLACE_LONG) for arg in args):
        return []
    return [a for a in args if not a.startswith(("-", "+"))]


def _has_flag(arg: str, flag: str) -> bool:
    """`-i`, `-i.bak`, or `-i` after other one-letter switches (`-Ei`, `-pi`, `-lpi.orig`)."""
    if not arg.startswith("-") or arg.startswith("--"):
        return False
    at = arg.find(flag, 1)
    return at > 0 and all(letter in _CLUSTERED for letter in arg[1:at])


def _awk_in_place(args: Sequence[str]) -> bool:
    return any(a in ("inplace", "--include=inplace", "-iinplace") for a in args)


def rewrites_tree(name: str, args: Sequence[str]) -> bool:
    """The command may rewrite files it does not name (a git checkout, an archive unpacked)."""
    if name == "git":
        _, i = parse_options(args, "Cc", frozenset({"git-dir", "work-tree", "namespace", "exec-path"}))
        return i < len(args) and args[i] in _TREE_GIT
    if name not in _EXTRACTORS:
        return False
    if name in ("tar", "gtar", "bsdtar"):
        first = args[0] if args else ""
        return any(a in ("--extract", "--get") or (a.startswith("-") and not a.startswith("--") and "x" in a)
                   for a in args) or (not first.startswith("-") and "x" in first)
    if name in ("7z", "7za", "7zz"):
        return args[:1] in (["x"], ["e"])
    if name == "cpio":
        return any(a.startswith("-") and not a.startswith("--") and "i" in a for a in args) or "--extract" in args
    return name != "unzip" or not any(a in ("-l", "-t", "-p", "-Z", "-v") for a in args)
