"""Script files that are already on disk when a command is checked.

The agent can write `x.sh` with its file-write tool and then run `bash x.sh`: the command alone
does not show what runs. So a file handed to a shell (or a SQL client) is found — relative to the
command's working directory, through symlinks — and read, for the analyzer to judge its text as if
it were given inline. Only regular files are read, up to MAX_SCRIPT_BYTES; anything else that
exists is a problem the guard denies with a reason. Imports stay light: the hook runs this.
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Iterable
from typing import NamedTuple

from kilo_loop.guard.lazy_regex import LazyRegex
from kilo_loop.guard.shell.model import HOME, UNKNOWN, command_name

MAX_SCRIPT_BYTES = 192 * 1024
"""Below the walker's own limit on source text (parse.MAX_SOURCE_BYTES), so this reason is the one given."""
_HEAD_BYTES = 256
_GLOB = LazyRegex(r"[*?\[]")
_PROC_DIRECTORY = LazyRegex(r"/proc/([^/]+)/(cwd|root)(?=/|$)")


class ScriptFile(NamedTuple):
    path: str
    """The file's real path (symlinks resolved), for messages and to catch a script that runs itself."""
    text: str | None = None
    """What it holds; None when nothing is run from it (no such file, a directory, a binary)."""
    problem: str | None = None
    """Why it cannot be read (too big, not a regular file, unreadable): the command is denied."""


def places(path: str, cwds: Iterable[str | None]) -> list[str] | None:
    """The absolute paths `path` may name from these working directories (wildcards matched on disk);
    None when it is relative and a working directory is not known."""
    if path.startswith(HOME):
        path = os.path.expanduser("~") + path[len(HOME):]
    if UNKNOWN in path:  # a marker inside a word (`$TMPDIR~`): no file the guard can name
        return []
    through_proc = _PROC_DIRECTORY.match(path)
    if through_proc:  # the shell's own /proc entry: its cwd is the command's, not the guard's
        if through_proc.group(1) not in ("self", "thread-self"):
            return None
        rest = path[through_proc.end():].lstrip("/")
        path = ("/" + rest) if through_proc.group(2) == "root" else (rest or ".")
    if path.startswith("/"):
        found = [path]
    else:
        directories = list(cwds)
        if not directories or None in directories:
            return None
        found = [posixpath.join(cwd, path) for cwd in directories if cwd]
    return [match for candidate in found for match in _matches(candidate)]


def _matches(path: str) -> list[str]:
    """A wildcard path stands for what it matches (bash runs the first, the rest become arguments:
    each is read); with no match, or none in it, the path itself."""
    if not _GLOB.search(path) or os.path.lexists(path):
        return [path]
    import glob  # here, not at the top: few commands hand a shell a wildcard

    return sorted(glob.glob(path)) or [path]


def read_script(path: str) -> ScriptFile:
    """The text of the script at the absolute `path`, or why it cannot be read."""
    try:
        info = os.stat(path)  # before opening: opening a device can act on it (a tape rewinds)
    except (FileNotFoundError, NotADirectoryError):
        return ScriptFile(path)
    except OSError as exc:
        return ScriptFile(path, problem=f"cannot be read ({exc.strerror or exc})")
    real = os.path.realpath(path)
    if stat.S_ISDIR(info.st_mode):
        return ScriptFile(real)
    if not stat.S_ISREG(info.st_mode):
        if real == "/dev/null":
            return ScriptFile(real, "")
        return ScriptFile(real, problem="is not a regular file (a pipe, socket or device), so what it holds is only "
                          "known when it is read")
    try:
        if _is_binary(_read_regular(real, _HEAD_BYTES)):
            return ScriptFile(real)  # bash will not run it ("cannot execute binary file")
        if info.st_size > MAX_SCRIPT_BYTES:
            return _too_big(real, info.st_size)
        data = _read_regular(real, MAX_SCRIPT_BYTES + 1)
    except OSError as exc:
        return ScriptFile(real, problem=f"cannot be read ({exc.strerror or exc})")
    if data is None:
        return ScriptFile(real, problem="changed while the guard read it")
    if len(data) > MAX_SCRIPT_BYTES:
        return _too_big(real, len(data))
    return ScriptFile(real, data.decode("utf-8", "surrogateescape"))


def _read_regular(path: str, limit: int) -> bytes | None:
    """Up to `limit` bytes of the file at `path`; None when it is no longer a regular file. Opened
    without blocking, so a file swapped for a pipe meanwhile cannot hang the guard."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        chunks: list[bytes] = []
        size = 0
        while size < limit:
            chunk = os.read(descriptor, limit - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(descriptor)


def _is_binary(head: bytes | None) -> bool:
    """A NUL before the first newline in the first 80 bytes: what bash takes for a binary file (its
    check_binary_file), which it refuses to run as a script."""
    return head is not None and b"\x00" in head[:80].split(b"\n", 1)[0]


def _too_big(real: str, size: int) -> ScriptFile:
    return ScriptFile(real, problem=f"is {size // 1024} KiB, more than the {MAX_SCRIPT_BYTES // 1024} KiB the guard "
                      "reads")


def program_interpreters(path: str) -> tuple[str, ...]:
    """What may run the file at the absolute `path` when it is executed: the command names on its `#!`
    line (`/usr/bin/env bash` → env, bash; `/bin/busybox sh` → busybox, sh), `sh` for a text file
    without one (bash runs such a file as a script when the kernel will not), nothing for a binary or
    a file that is not there."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return ()
        head = _read_regular(path, _HEAD_BYTES)
    except OSError:
        return ()
    if head is None:
        return ()
    if head.startswith(b"#!"):
        words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
        return tuple(command_name(word) for word in words) or ("sh",)
    if _is_binary(head) or head.startswith(b"\x7fELF"):
        return ()
    return ("sh",)


def searched(name: str, found: list[str], sourced: bool) -> list[str]:
    """`found` with what bash finds on $PATH for a script named without a slash: `source NAME` looks
    there first, `bash NAME` only when there is no NAME in the working directory."""
    if "/" in name or name in (".", ".."):
        return found
    if sourced or not any(os.path.exists(place) for place in found):
        return [*_on_path(name), *found]
    return found


def _on_path(name: str) -> list[str]:
    for directory in os.environ.get("PATH", "").split(":"):
        candidate = posixpath.join(directory, name)
        if directory.startswith("/") and os.path.isfile(candidate):
            return [candidate]
    return []


def repository_root(directory: str) -> str | None:
    """The git checkout `directory` is in (the nearest directory up holding `.git`), as
    `git rev-parse --show-toplevel` prints it; None outside one or when GIT_DIR points elsewhere."""
    if os.environ.get("GIT_DIR") or os.environ.get("GIT_WORK_TREE"):
        return None
    current = directory
    while True:
        if os.path.exists(posixpath.join(current, ".git")):
            return os.path.realpath(current)
        parent = posixpath.dirname(current)
        if parent == current:
            return None
        current = parent


def committed_unchanged(path: str) -> bool:
    """Whether git tracks the file at the absolute `path` and it is as the last commit has it (not new,
    ignored, edited or staged): the project's own script rather than text written since."""
    from pathlib import Path

    from kilo_loop.git import GitError, run_git

    directory, name = posixpath.split(path)
    # no fsmonitor, external diff or textconv program runs for the guard's question
    quiet = ("-c", "core.fsmonitor=false")
    try:
        tracked = run_git(Path(directory), *quiet, "ls-files", "--error-unmatch", "--", name)
        if tracked.returncode != 0:
            return False
        diff = run_git(Path(directory), *quiet, "diff", "--quiet", "--no-ext-diff", "--no-textconv", "HEAD", "--", name)
    except (GitError, OSError):
        return False
    return diff.returncode == 0
