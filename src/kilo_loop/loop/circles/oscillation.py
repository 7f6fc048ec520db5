"""Oscillation: the work tree returns to a tree already seen after an earlier iteration of the same
stage, or a file flips between the same two contents (A→B→A→B)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def tree_return(trees: Mapping[str, int], tree: str, changed: bool) -> int | None:
    """The iteration after which this same work tree was seen (the stage's first iteration minus one:
    the tree it started from), when this iteration changed files and came back to it."""
    if not changed or not tree:
        return None
    return trees.get(tree)


def flipped(versions: Sequence[str], content: str) -> bool:
    """The file goes from its last content to `content` for the second time: the same two contents again."""
    if not versions or versions[-1] == content:
        return False
    step = (versions[-1], content)
    return any((versions[i], versions[i + 1]) == step for i in range(len(versions) - 1))


def file_flips(files: Mapping[str, Sequence[str]], contents: Mapping[str, str]) -> list[str]:
    return sorted(path for path, content in contents.items() if flipped(files.get(path, ()), content))


def describe(returned_to: int | None, flips: list[str]) -> str:
    if returned_to is not None:
        return f"the work tree came back to the checkpoint before iteration {returned_to + 1}"
    if flips:
        shown = ", ".join(flips[:5]) + (f" and {len(flips) - 5} more" if len(flips) > 5 else "")
        return f"{shown} flipped back to a content it had before, again"
    return ""
