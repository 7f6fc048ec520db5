"""Where a path really points, and which paths the guard protects.

Paths are judged both as written (lexically normalized) and, where they exist on disk, as
`realpath` resolves them: a link in /tmp pointing at the home directory is the home directory.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Sequence
from fnmatch import fnmatchcase
from functools import cached_property

from kilo_loop.guard.lazy_regex import LazyRegex
from kilo_loop.guard.shell.model import HOME, SHELL_PID, UNKNOWN, display, normalize_path
from kilo_loop.guard.shell.words import brace_alternatives

_GLOB = LazyRegex(r"[*?\[]")
_GLOB_LIMIT = 10_000
_BLOCK_DEVICE = LazyRegex(
    r"/dev/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d|rdisk\d|md\d|dm-\d|mapper/|loop\d|sr\d"
    r"|nbd\d|zd\d|bcache\d|disk/|block/|zvol/|[a-z0-9_-]+vg/|vg[a-z0-9_-]*/|ubuntu-vg/|rbd\d|cciss/|md/"
    r"|root$|mem$|kmem$|port$|sg\d|st\d)"
)
# Files the kernel or the system reads: writing one reboots the machine (`/proc/sysrq-trigger`),
# changes what every program loads (`/etc/ld.so.preload`) or who may log in (`/etc/passwd`).
_SYSTEM_FILE_DIRS = ("/proc/", "/sys/", "/etc/", "/boot/", "/bin/", "/sbin/", "/lib/", "/lib64/", "/usr/bin/",
                     "/usr/sbin/", "/usr/lib/", "/usr/libexec/")
# Directories whose contents belong to the system: never deleted or recursively re-permissioned.
SYSTEM_DIRS = ("/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/sys", "/proc",
               "/dev", "/var/lib", "/System", "/Library")
# Top-level directories that hold everyone's files: deleting or re-permissioning them as a whole is fatal,
# but projects live below them, so only the directory itself is protected.
TOP_DIRS = ("/", "/home", "/root", "/opt", "/srv", "/var", "/Users", "/mnt", "/media")
_RC_FILES = frozenset({".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv",
                       ".zprofile", ".zlogin", ".zlogout", ".kshrc", ".cshrc", ".tcshrc", ".inputrc", "config.fish",
                       ".pam_environment", "environment", "authorized_keys", "authorized_keys2", "known_hosts",
                       ".netrc", ".gitconfig", "sudoers", "crontab", ".bash_aliases", ".xprofile", ".xinitrc",
                       ".xsessionrc", "bash.bashrc", "ld.so.preload", ".mkshrc", "sitecustomize.py",
                       "usercustomize.py"})
_HOME_RC_FILES = frozenset({
    # start-up files of tools that run what they say (npm's script-shell, pip's index, gdb commands)
    ".npmrc", ".yarnrc", ".yarnrc.yml", ".pypirc", ".curlrc", ".wgetrc", "pip.conf", ".condarc", ".gemrc",
    ".irbrc", ".pryrc", ".psqlrc", ".my.cnf", ".vimrc", ".exrc", ".gvimrc", ".gdbinit", ".lldbinit", ".tmux.conf",
    ".screenrc", ".pythonrc", ".pythonstartup", ".Rprofile", ".perldb", ".editrc", ".mailcap", ".hgrc",
    ".emacs", "init.el", "init.vim", "init.lua",
    # shell and REPL history: truncating one destroys the record of what was run
    ".bash_history", ".zsh_history", ".history", ".sh_history", ".ksh_history", "fish_history", ".python_history",
    ".psql_history", ".mysql_history", ".sqlite_history", ".node_repl_history", ".irb_history", ".lesshst",
    ".zhistory", ".histfile"})
"""Files that matter in the home directory only: a project may have its own `.npmrc`."""
# Directories whose files a login, a shell or the user's session runs (below the home directory).
_RC_DIRS = ("/.config/fish/", "/.config/systemd/user/", "/.config/autostart/", "/.config/git/", "/.ssh/",
            "/.gnupg/", "/.config/environment.d/", "/Library/LaunchAgents/", "/var/spool/cron/")


def default_temp_dirs() -> list[str]:
    import tempfile  # here, not at the top: most decisions never need the temp dirs

    dirs = [tempfile.gettempdir(), "/tmp", "/var/tmp"]
    tmpdir = os.environ.get("TMPDIR")
    return [*dirs, tmpdir] if tmpdir else dirs


def temp_roots(dirs: Sequence[str]) -> tuple[str, ...]:
    roots: list[str] = []
    for directory in dirs:
        if not directory or not directory.startswith("/"):
            continue
        for variant in (normalize_path(directory), normalize_path(os.path.realpath(directory))):
            if variant != "/" and variant not in roots:
                roots.append(variant)
    return tuple(roots)


def is_block_device(path: str) -> bool:
    return path.startswith("/") and bool(_BLOCK_DEVICE.match(normalize_path(path)))


def in_git_dir(path: str) -> bool:
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    return ".git" in parts and not (parts[-1].endswith(".lock") and parts[-1] != ".git")


def system_path(path: str) -> bool:
    return path in TOP_DIRS or any(path == d or path.startswith(d + "/") for d in SYSTEM_DIRS)


def glob_reaches_system(path: str) -> bool:
    """A wildcard whose fixed part is `/` or a protected directory (`/*`, `/e*`, `/usr/*`)."""
    match = _GLOB.search(path)
    if match is None or not path.startswith("/"):
        return False
    fixed = normalize_path(path[:match.start()].rsplit("/", 1)[0] or "/")
    return fixed in TOP_DIRS or system_path(fixed)


def sensitive_file(path: str) -> bool:
    """Login, shell start-up and credential files: writing one changes what runs or who gets in."""
    clean = path.replace(HOME, "~")
    parts = [p for p in clean.split("/") if p]
    if parts and _GLOB.search(parts[-1]) and _names_a_start_up_file(parts[-1], clean):
        return True
    if parts and parts[-1] in _HOME_RC_FILES and _in_home(clean):
        return True
    return bool(parts) and (parts[-1] in _RC_FILES or any(d in clean + "/" for d in _RC_DIRS)
                            or parts[-1].endswith(".pth")  # Python runs `import` lines of .pth files at start-up
                            or parts[-1] == ".ssh" or clean.startswith(("/etc/profile", "/etc/sudoers",
                                                                        "/etc/cron", "/etc/systemd")))


_LITERAL_RUN = LazyRegex(r"[^*?\[\]]{3}")


def _in_home(path: str) -> bool:
    """`path` (with `~` for the home marker) is somewhere under the home directory."""
    home = os.path.expanduser("~")
    return path.startswith("~") or path == home or path.startswith(home.rstrip("/") + "/")


_PYTHON_START_UP = frozenset({"sitecustomize.py", "usercustomize.py"})


def _names_a_start_up_file(pattern: str, path: str) -> bool:
    """A wildcard spelling a start-up file's name (`.bashr?`, `authorized_key[s]`): it has a literal part of its
    own (`*` alone is not a name) and matches the name the way bash does (a leading dot only literally). Python's
    start-up modules count only in a packages directory (`src/*.py` is source, not `sitecustomize.py`)."""
    names = _RC_FILES if "packages/" in path else _RC_FILES - _PYTHON_START_UP
    if _in_home(path):
        names = names | _HOME_RC_FILES
    return bool(_LITERAL_RUN.search(pattern)) and any(
        fnmatchcase(name, pattern) and (pattern[0] == "." or not name.startswith(".")) for name in names)


def system_file(path: str) -> bool:
    """A file under /etc, /proc, /sys, /boot or the system's program directories (not /usr/local)."""
    return path.startswith("/") and normalize_path(path).startswith(_SYSTEM_FILE_DIRS)


def resolved(path: str) -> str:
    """`path` with symlinks resolved where they exist on disk ('..' after a link goes up from its target)."""
    if not path.startswith("/") or UNKNOWN in path:
        return normalize_path(path) if path.startswith("/") else path
    try:
        return normalize_path(os.path.realpath(path))
    except (OSError, ValueError):
        return normalize_path(path)


def absolute(target: str, cwds: frozenset[str | None]) -> list[str] | None:
    """`target` made absolute against every possible cwd (raw, unnormalized); None when a cwd is unknown."""
    if target.startswith("/"):
        return [target]
    if None in cwds:
        return None
    return [posixpath.join(str(cwd), target) for cwd in cwds]


class PathPolicy:
    """Where recursive deletes may go: strictly inside a temp directory.

    The temp directories are looked up when a decision first needs them (most never do)."""

    def __init__(self, temp_dirs: Sequence[str] | None = None, work_tree: str | None = None) -> None:
        self._temp_dirs = None if temp_dirs is None else tuple(temp_dirs)
        self.work_tree = work_tree
        """The project whose every file the per-iteration checkpoint keeps (None: no such checkpoint)."""

    def not_undoable(self, target: str, cwds: frozenset[str | None], link_itself: bool = False) -> str | None:
        """None when deleting `target` (every path it may name) can be undone by reverting to the iteration's
        checkpoint (`checkpoint.undoable`); else why not."""
        if self.work_tree is None:
            return "no checkpoint keeps the work tree"
        if UNKNOWN in target.replace(SHELL_PID, ""):
            return "its value is only known when the command runs"
        from kilo_loop.checkpoint.undoable import why_not_undoable  # only deletes in the work tree need it

        for candidate in brace_alternatives(target) or [UNKNOWN]:
            raw_paths = absolute(candidate, cwds)
            if raw_paths is None or UNKNOWN in candidate:
                return "it is a relative path from a directory only known when it runs"
            for raw in raw_paths:
                matched = _expanded(raw)
                if matched is None:
                    return f"its wildcard matches more than {_UNDOABLE_GLOB_LIMIT} paths, too many to check"
                for path in matched:
                    why = why_not_undoable(path, self.work_tree, link_itself and not raw.endswith("/"))
                    if why:
                        return why
        return None

    @cached_property
    def roots(self) -> tuple[str, ...]:
        return temp_roots(default_temp_dirs() if self._temp_dirs is None else self._temp_dirs)

    @property
    def temp_root(self) -> str:
        return self.roots[0] if self.roots else UNKNOWN

    def in_temp(self, path: str) -> bool:
        return any(path.startswith(root + "/") for root in self.roots)

    def outside_temp(self, target: str, cwds: frozenset[str | None], link_itself: bool = False) -> str | None:
        """Why `target` is not strictly inside a temp directory, or None when it is. With `link_itself`, a
        symlink named without a trailing slash is judged where it is, not where it points (`rm -r LINK`
        removes the link)."""
        target = target.replace(SHELL_PID, "0")  # `/tmp/run-$$`: a pid is digits, it moves nothing
        if target.startswith(HOME):
            return "it is in the home directory"
        if UNKNOWN in target:
            return "its value is only known when the command runs"
        if not target:
            return "the target is empty"
        alternatives = brace_alternatives(target)
        if alternatives is None:
            return "its brace expansion is too large to check"
        for candidate in alternatives:
            why = self._candidate_outside(candidate, cwds, link_itself)
            if why:
                return why
        return None

    def _candidate_outside(self, candidate: str, cwds: frozenset[str | None], link_itself: bool) -> str | None:
        raw_paths = absolute(candidate, cwds)
        if raw_paths is None:
            return "it is a relative path with no known temp working directory"
        for raw in raw_paths:
            path = normalize_path(raw)
            if _glob_may_escape(raw):
                return "a wildcard in it could match '..'"
            if path in self.roots:
                return "it is a temp directory itself"
            if not self.in_temp(path):
                return f"{path} is outside the temp directories"
            real = resolved(raw)
            if link_itself and not raw.endswith("/") and not _GLOB.search(raw) and os.path.islink(path):
                real = posixpath.join(resolved(posixpath.dirname(path)), posixpath.basename(path))
            if real != path and (real in self.roots or not self.in_temp(real)):
                return f"it resolves through a symlink to {real}"
            if _GLOB.search(raw):
                why = self._matches_outside(raw)
                if why:
                    return why
        return None

    def _matches_outside(self, pattern: str) -> str | None:
        """A wildcard that matches, on disk now, a symlink leading out of the temp directories and
        the delete goes through it (`/tmp/*/x`, `/tmp/l*/`); `rm -r /tmp/x/*` removes a matched link itself."""
        import glob
        from itertools import islice

        parts = pattern.rstrip("/").split("/")
        last = max((i for i, part in enumerate(parts) if _GLOB.search(part)), default=-1)
        if last < 0 or (last == len(parts) - 1 and not pattern.endswith("/")):
            return None
        pattern = "/".join(parts[:last + 1])
        matches = list(islice(glob.iglob(pattern), _GLOB_LIMIT + 1))
        if len(matches) > _GLOB_LIMIT:
            return f"its wildcard matches more than {_GLOB_LIMIT} paths, too many to check"
        for found in matches:
            real = resolved(found)
            if real in self.roots or not self.in_temp(real):
                return f"its wildcard matches {found}, which resolves to {real}"
        return None

    def protected(self, target: str, cwds: frozenset[str | None], link_itself: bool = False) -> str | None:
        """Why deleting or re-permissioning `target` (non-recursively) is fatal, or None. With `link_itself`,
        a symlink named without a trailing slash is what goes (`rm LINK`), not where it points."""
        if in_git_dir(target):
            return "it is inside a .git directory"
        if UNKNOWN in target.replace(HOME, ""):
            return None
        for raw in absolute(target, cwds) or []:
            lone_link = link_itself and not raw.endswith("/") and os.path.islink(raw)
            for path in {normalize_path(raw), resolved(posixpath.dirname(raw)) + "/" + posixpath.basename(raw)
                         if lone_link else resolved(raw)}:
                if path == _real_home():
                    return f"{path} is the home directory"
                if system_path(path) or is_block_device(path) or glob_reaches_system(path):
                    return f"{path} is a system path"
        return None

    def broad(self, target: str, cwds: frozenset[str | None]) -> str | None:
        """Why a recursive permission change on `target` is too broad: /, ~, system dirs, unknown."""
        if target.startswith(HOME) and target.rstrip("/") in (HOME, HOME + "/*"):
            return "it is the home directory"
        if UNKNOWN in target.replace(HOME, "") and not target.startswith(HOME):
            return "its value is only known when the command runs"
        return self.protected(target, cwds)


_UNDOABLE_GLOB_LIMIT = 64


def _expanded(raw: str) -> list[str] | None:
    """The paths a wildcard matches on disk now (the pattern itself when it matches nothing); None for too many."""
    if not _GLOB.search(raw):
        return [raw]
    import glob
    from itertools import islice

    found = list(islice(glob.iglob(raw), _UNDOABLE_GLOB_LIMIT + 1))
    return None if len(found) > _UNDOABLE_GLOB_LIMIT else found or [raw]


def _real_home() -> str:
    return normalize_path(os.path.realpath(os.path.expanduser("~")))


def _glob_may_escape(path: str) -> bool:
    """A wildcard component before the last one that could match `..` (`/tmp/.*/etc`)."""
    parts = path.split("/")[:-1]
    return any(_GLOB.search(part) and part[:1] in (".", "[") for part in parts)


def shown(target: str) -> str:
    return display(target)
