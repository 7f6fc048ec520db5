"""filesystem: recursive deletes only strictly inside a temp directory; no deleting or
re-permissioning system paths, home or .git; no writes to login, shell start-up or ssh files."""

from __future__ import annotations

from collections.abc import Sequence

from kilo_loop.guard.lazy_regex import LazyRegex
from kilo_loop.guard.packs.paths import PathPolicy, absolute, in_git_dir, sensitive_file, shown, system_path
from kilo_loop.guard.packs.rules import Pack, Rule, operands
from kilo_loop.guard.shell.analyze import find_roots
from kilo_loop.guard.shell.model import HOME, READ, UNKNOWN, SimpleCommand, has_option, normalize_path

_NAME_TESTS = frozenset({"-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex"})
_DELETERS = frozenset({"rm", "unlink", "shred", "rmdir", "rimraf", "del", "trash", "srm", "del-cli", "trash-put"})
_MATCHES_ALL = LazyRegex(r"[*?./]*|\.\*|\^?\.[*+]\$?")
"""A -name/-path/-regex pattern that matches (nearly) every file: `*`, `?*`, `*.*`, `.*`."""


_GLOB_CHARS = LazyRegex(r"[*?\[]")
_CHARACTER_CLASS = LazyRegex(r"\[[^\]]*\]")
_LITERAL_PAIR = LazyRegex(r"[^*?\x00]{2}")


def _matches_nearly_all(pattern: str) -> bool:
    """`*`, `?*`, `*.*`, `.*`, and wildcards built from character classes with no two literal characters side by side
    (`*[a-z]*`, `[!.]*`): such a name test selects (nearly) every file."""
    if _MATCHES_ALL.fullmatch(pattern):
        return True
    return "[" in pattern and not _LITERAL_PAIR.search(_CHARACTER_CLASS.sub("\x00", pattern))


def _rm_operands(args: Sequence[str]) -> tuple[set[str], list[str]]:
    flags: set[str] = set()
    targets: list[str] = []
    options_done = False
    for arg in args:
        if options_done or arg == "-" or not arg.startswith("-"):
            targets.append(arg)
        elif arg == "--":
            options_done = True
        elif arg.startswith("--"):
            flags.add(arg.split("=", 1)[0])
        else:
            flags.update("-" + letter for letter in arg[1:])
    return flags, targets


def _recursive_targets(targets: Sequence[str], cmd: SimpleCommand, paths: PathPolicy,
                       link_itself: bool = False) -> str | None:
    if not targets:
        return "a recursive delete without an explicit target"
    for target in targets:
        why = paths.outside_temp(target, cmd.cwds, link_itself)
        if why:
            undo = _not_undoable(target, cmd, paths, link_itself)
            if undo is None:
                continue
            return (f"it deletes {shown(target)!r} recursively but {why}; recursive deletes are allowed only "
                    f"strictly inside {', '.join(paths.roots)}{undo}")
    return None


def _not_undoable(target: str, cmd: SimpleCommand, paths: PathPolicy, link_itself: bool) -> str | None:
    """None when the iteration's checkpoint can bring `target` back (a path inside the work tree that is
    ignored or restorable); else the end of the deny reason, saying why it cannot."""
    if paths.work_tree is None or cmd.remote is not None:
        return ""
    why = paths.not_undoable(target, cmd.cwds, link_itself)
    return None if why is None else (f", or inside the work tree where the checkpoint can restore what goes "
                                     f"(not here: {why})")


def _rm_recursive(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    flags, targets = _rm_operands(cmd.args)
    if flags & {"--help", "--version"}:
        return None
    recursive = cmd.name in ("rimraf", "del", "trash", "del-cli", "trash-put") or has_option(cmd.args, "-r", "-R", "--recursive")
    return _recursive_targets(targets, cmd, paths, link_itself=True) if recursive else None


def _rm_protected(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    flags, targets = _rm_operands(cmd.args)
    if flags & {"--help", "--version"}:
        return None
    for target in targets:
        if READ in target:
            return ("it deletes paths read from stdin or printed by a command, which the guard cannot see (like "
                    "`xargs rm`); list them literally")
        why = paths.protected(target, cmd.cwds, link_itself=cmd.name != "shred")
        if why:
            return f"it deletes {shown(target)!r}: {why}"
        last = target.rstrip("/").rsplit("/", 1)[-1]
        if _matches_nearly_all(last) and _GLOB_CHARS.search(last):
            outside = paths.outside_temp(target, cmd.cwds)
            if outside:
                return (f"it deletes every file {shown(target)!r} matches, but {outside}; name the files, or a "
                        "pattern for just them (`*.pyc`)")
        if sensitive_file(target) and not paths.in_temp(normalize_path(target)):
            return f"it deletes {shown(target)!r}, a login, start-up, history or ssh file"
    return None


def _find_deletes(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    roots, expression = find_roots(cmd.args)
    deletes = "-delete" in expression or any(
        e in ("-exec", "-execdir", "-ok", "-okdir") and i + 1 < len(expression) and
        expression[i + 1].rsplit("/", 1)[-1] in _DELETERS for i, e in enumerate(expression))
    if not deletes:
        return None
    named = any(e in _NAME_TESTS and expression[i + 1:i + 2] and not _matches_nearly_all(expression[i + 1])
                for i, e in enumerate(expression)) and not set(expression) & {"!", "-not", "-o", "-or"}
    for root in roots:
        if named and not root.startswith("/") and UNKNOWN not in root and \
                not normalize_path(root).startswith("..") and not root.startswith("~"):
            continue
        why = paths.outside_temp(root, cmd.cwds)
        if why:
            return f"it deletes files under {shown(root)!r} but {why} (give -name and a path inside the project)"
    return None


def _xargs_deletes(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    from kilo_loop.guard.shell.wrappers import unwrap

    inner = unwrap("xargs", list(cmd.args))
    name = inner.argv[0].rsplit("/", 1)[-1] if inner is not None and inner.argv else ""
    return (f"xargs hands {name} paths read from stdin, which the guard cannot see; list the files literally"
            if name in _DELETERS else None)


def _sources_removed(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    """`rsync --remove-source-files`, `tar --remove-files`, `zip -m`: the sources are deleted once copied."""
    values = {"rsync": ("-e", "--rsh", "--exclude", "--include", "--filter", "-f"), "7z": (), "7za": (), "7zz": (),
              "tar": ("-f", "--file", "-C", "--directory", "-T", "--files-from", "-X", "--exclude-from"),
              "zip": ("-b", "-n", "-x", "-i", "-t", "-tt")}[cmd.name]
    found = operands(cmd.args, values)
    sources = found[1:] if cmd.name == "zip" else found[2:] if cmd.name.startswith("7z") else \
        found[:-1] if cmd.name == "rsync" else found
    for source in sources:
        why = paths.outside_temp(source, cmd.cwds)
        if why:
            return f"it deletes {shown(source)!r} after copying it, but {why}"
    return None


def _rsync_delete(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    if has_option(cmd.args, "--remove-source-files", "--remove-sent-files") and not has_option(
            cmd.args, "--delete", "--del"):
        return _sources_removed(cmd, paths)
    found = operands(cmd.args, ("-e", "--rsh", "--exclude", "--include", "--filter", "-f"))
    if len(found) < 2:
        return None
    target = found[-1]
    if ":" in target.split("/", 1)[0]:
        return f"it deletes files on the remote {target!r}"
    why = paths.outside_temp(target, cmd.cwds)
    return f"it deletes files in {shown(target)!r} that the source lacks, but {why}" if why else None


def _destroys_content(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    """`shred FILE`, `truncate -s 0 FILE`, `dd if=/dev/zero of=FILE`, `cp /dev/null FILE`: the file's content is
    gone for good, so only temp files may be the target."""
    if cmd.name == "shred":  # (`srm FILE` is `rm FILE` that also overwrites: judged as rm is)
        targets = operands(cmd.args, ("-n", "--iterations", "-s", "--size", "--random-source"))
    elif cmd.name == "truncate":
        sizes = [a.split("=", 1)[1] if "=" in a else a[2:] if len(a) > 2 and not a.startswith("--") else
                 cmd.args[i + 1] if i + 1 < len(cmd.args) else "" for i, a in enumerate(cmd.args)
                 if a.split("=", 1)[0] in ("-s", "--size") or (a.startswith("-s") and len(a) > 2)]
        if not any(s.strip() in ("0", "0K", "0M", "0G") or s.startswith(("-", "<", "/", "%")) for s in sizes):
            return None
        targets = operands(cmd.args, ("-s", "--size", "-r", "--reference"))
    elif cmd.name in ("dd", "dcfldd", "dc3dd"):
        sources = [a[3:] for a in cmd.args if a.startswith("if=")]
        if not any(s in _EMPTY_SOURCES for s in sources):
            return None
        targets = [a[3:] for a in cmd.args if a.startswith("of=")]
    else:  # cp/install of /dev/null or /dev/zero over a file
        found = operands(cmd.args, ("-t", "--target-directory", "-S", "--suffix", "-m", "--mode", "-o", "-g"))
        if len(found) < 2 or not set(found[:-1]) & _EMPTY_SOURCES:
            return None
        targets = found[-1:]
    for target in targets:
        if target in ("/dev/null", "-") or (target.startswith("/dev/") and cmd.name != "shred"):
            continue  # a device: the system pack's raw-disk rules judge it
        why = paths.outside_temp(target, cmd.cwds)
        if why:
            undo = _not_undoable(target, cmd, paths, False) if cmd.name != "shred" else ""
            if undo is None:
                continue
            return (f"it destroys the content of {shown(target)!r} for good but {why}; only temp files may be "
                    f"shredded, truncated or zeroed{undo}")
    return None


_EMPTY_SOURCES = frozenset({"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"})



def _permission_broad(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    if not has_option(cmd.args, "-R", "--recursive"):
        found = operands(cmd.args, ("--reference",))
        if cmd.name == "chmod" and not (found and _locks_out(found[0])):
            return None  # (`chmod 700 ~/.ssh` is how it should be)
        for target in found[1:]:
            where = target.rstrip("/") or "/"
            top = where.startswith("/") and where.count("/") <= 1 and system_path(normalize_path(where))
            if where in (HOME, "/", HOME + "/.ssh") or top:
                return f"it changes who may use {shown(target)!r} itself, which can lock the user or system out"
        return None
    for target in operands(cmd.args, ("--reference",))[1:]:
        why = paths.broad(target, cmd.cwds)
        if why:
            return f"it changes {shown(target)!r} recursively: {why}"
    return None


_OPEN_OR_SHUT = LazyRegex(r"(?:^|,)[ua]*[-=]|(?:^|,)[go]*a?[go]*[+=][rwxXst]*w")


def _locks_out(mode: str) -> bool:
    """A mode that takes the owner's read or search access away (`000`, `a=`, `u-x`) or lets others write."""
    if mode.isdigit():
        digits = mode[-3:].rjust(3, "0")
        return int(digits[0]) & 5 != 5 or any(int(d) & 2 for d in digits[1:])
    return bool(_OPEN_OR_SHUT.search(mode))


def _moves_protected(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    """`mv ~ x`, `mv /etc x`, `mv ~/.ssh x`: moving such a path away is as bad as deleting it."""
    for source in operands(cmd.args, ("-t", "--target-directory", "-S", "--suffix"))[:-1]:
        if source.rstrip("/") == HOME or sensitive_file(source):
            return f"it moves {shown(source)!r} away"
        why = paths.protected(source, cmd.cwds)
        if why and not in_git_dir(source):
            return f"it moves {shown(source)!r} away: {why}"
    return None


def _copy_destination(cmd: SimpleCommand) -> list[str]:
    found = operands(cmd.args, ("-t", "--target-directory", "-S", "--suffix", "-m", "--mode", "-o", "-g"))
    target = [a.split("=", 1)[1] for a in cmd.args if a.startswith("--target-directory=")]
    if "-t" in cmd.args and cmd.args.index("-t") + 1 < len(cmd.args):
        target.append(cmd.args[cmd.args.index("-t") + 1])
    return target or found[-1:] if len(found) >= 2 or target else []


def _written_targets(cmd: SimpleCommand) -> list[str]:
    if cmd.name == "tee":
        return operands(cmd.args)
    if cmd.name == "dd":
        return [a[3:] for a in cmd.args if a.startswith("of=")]
    if cmd.name in ("sed", "perl", "ruby") and has_option(cmd.args, "-i", "--in-place"):
        return operands(cmd.args, ("-e", "-f", "--expression", "--file"))[1 if cmd.name == "sed" else 0:]
    if cmd.name in ("touch", "truncate", "ssh-keygen", "chmod", "chown"):
        return [] if cmd.name in ("chmod", "chown") else operands(cmd.args, ("-s", "--size", "-f", "-r"))
    if cmd.name == "sponge":
        return operands(cmd.args)
    if cmd.name in _EDITORS:  # run by the agent, an editor only writes what its scripted commands say
        values = ("-p",) if cmd.name in ("ed", "red") else ("--eval", "-l", "--load", "-f", "--funcall") if \
            cmd.name == "emacs" else ("-c", "--cmd", "-S", "-u", "-U", "-i", "-T", "-s", "-w", "-W")
        return [o for o in operands(cmd.args, values) if not o.startswith("+")]
    if cmd.name in ("gawk", "awk") and any(a in ("inplace", "-iinplace") for a in cmd.args):
        return operands(cmd.args, ("-i", "-f", "-v", "-F", "-e", "--include", "--file", "--assign"))[1:]
    if cmd.name == "find":
        return [cmd.args[i + 1] for i, a in enumerate(cmd.args[:-1]) if a in ("-fprint", "-fprint0", "-fprintf", "-fls")]
    if cmd.name == "sort":
        return [a[2:] if a.startswith("-o") and len(a) > 2 else a.split("=", 1)[1] if a.startswith("--output=")
                else cmd.args[i + 1] for i, a in enumerate(cmd.args[:-1]) if a in ("-o", "--output") or
                (a.startswith("-o") and len(a) > 2) or a.startswith("--output=")]
    if cmd.name in ("tar", "unzip", "bsdtar"):
        extracts = cmd.name == "unzip" or has_option(cmd.args, "-x", "--extract", "--get") or (
            cmd.args[:1] and not cmd.args[0].startswith("-") and "x" in cmd.args[0])
        flag = ("-d",) if cmd.name == "unzip" else ("-C", "--directory")
        return [cmd.args[i + 1] if "=" not in a else a.split("=", 1)[1] for i, a in enumerate(cmd.args[:-1])
                if a.split("=", 1)[0] in flag] if extracts else []
    if cmd.name in ("curl", "wget"):
        from kilo_loop.guard.shell.analyze import downloaded_files

        return downloaded_files(cmd.name, cmd.args)
    if cmd.name == "scp":
        found = operands(cmd.args, ("-P", "-i", "-o", "-F", "-J", "-S", "-c", "-l"))
        return [t.split(":", 1)[1] or "~" for t in found[-1:] if ":" in t.split("/", 1)[0]] + _copy_destination(cmd)
    return _copy_destination(cmd)


def _unlisted_into_home(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    """`tar -xf x -C ~`, `unzip x -d ~`, `cp -r dir/. ~`, `rsync -a dir/ ~/`: files the command does not list land
    in the home directory (or /) itself, where start-up and ssh files live."""
    if cmd.name in ("tar", "unzip", "bsdtar"):
        targets = _written_targets(cmd)
    elif cmd.name in ("cp", "rsync") and has_option(cmd.args, "-r", "-R", "-a", "--recursive", "--archive"):
        found = operands(cmd.args, ("-t", "--target-directory", "-e", "--rsh", "--exclude", "--include", "-f"))
        contents = [s for s in found[:-1] if s.endswith(("/.", "/")) or s in (".", "./")]
        targets = found[-1:] if contents else []
    else:
        return None
    for target in targets:
        where = normalize_path(target) if not target.startswith(HOME) else HOME + target[len(HOME):].rstrip("/")
        if where in (HOME, "/") or where.rstrip("/") == HOME:
            return (f"it puts files it does not list into {shown(target)!r}, where start-up and ssh files live; "
                    "unpack into a directory of its own")
    return None


def _sensitive_write(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    for target in _written_targets(cmd):
        if sensitive_file(target) and not paths.in_temp(normalize_path(target)):
            return f"it writes {shown(target)!r}, a login, start-up, history or ssh file"
    return None


def _git_dir_write(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    for target in _written_targets(cmd):
        if any(in_git_dir(t) for t in [target, *(absolute(target, cmd.cwds) or [])]):
            return f"it writes {shown(target)!r} inside a .git directory (hooks there run on the next git command)"
    return None


_EDITORS = frozenset({"ed", "red", "ex", "vi", "vim", "nvim", "vim.basic", "vim.tiny", "nano", "pico", "emacs",
                      "micro", "kak", "hx", "helix"})
_WRITERS = ("cp", "mv", "install", "ln", "tee", "dd", "sed", "perl", "touch", "truncate", "rsync", "sponge", "curl",
            "wget", "scp", "find", "sort", "tar", "unzip", "bsdtar", "gawk", "awk", "ruby", *sorted(_EDITORS))
PACK = Pack(
    name="filesystem",
    title="filesystem: recursive deletes outside temp, system/home/.git paths, login and ssh files",
    rules=(
        Rule("rm-recursive", "a recursive delete outside a temp directory",
             ("rm", "rimraf", "del", "trash", "del-cli", "trash-put"),
             check=_rm_recursive),
        Rule("rm-protected", "deletes a system or .git path", ("rm", "unlink", "shred", "rmdir", "srm"),
             check=_rm_protected),
        Rule("find-delete", "find deletes what it finds outside a temp directory", ("find",), check=_find_deletes),
        Rule("xargs-delete", "deletes paths only known at run time", ("xargs", "parallel"), check=_xargs_deletes),
        Rule("rsync-delete", "rsync --delete removes files from the target", ("rsync",),
             flags=("--delete", "--delete-before", "--delete-during", "--delete-after", "--delete-delay",
                    "--delete-excluded", "--remove-source-files", "--remove-sent-files", "--del"),
             check=_rsync_delete),
        Rule("archive-removes-sources", "deletes the files it archives", ("tar",),
             flags=("--remove-files",), check=_sources_removed),
        Rule("archive-removes-sources", "deletes the files it archives", ("7z", "7za", "7zz"),
             check=lambda c, p: _sources_removed(c, p) if "-sdel" in c.args else None),
        Rule("config-runs-code", "an npm setting that makes npm run a program of the agent's choosing", ("npm",
                                                                                                       "pnpm", "yarn"),
             words=("config", "set"), check=lambda c, p: "" if any(a.split("=", 1)[0].lstrip("-") in (
                 "script-shell", "node-options", "shell", "git", "editor", "browser", "viewer", "init-module",
                 "onload-script") for a in operands(c.args)[2:3]) else None),
        Rule("archive-removes-sources", "deletes the files it archives", ("zip",),
             check=lambda c, p: _sources_removed(c, p) if has_option(c.args, "-m", "--move") else None),
        Rule("recursive-permission-change", "a recursive permission change on a broad path",
             ("chmod", "chown", "chgrp", "setfacl", "chattr"), check=_permission_broad),
        Rule("mv-protected", "moves a system, home or ssh path away", ("mv",), check=_moves_protected),
        Rule("content-destroy", "destroys a file's content for good", ("shred", "truncate", "dd", "dcfldd",
                                                                       "dc3dd", "cp", "install"),
             check=_destroys_content),
        Rule("rm-recursive", "a recursive delete outside a temp directory", ("srm",),
             check=lambda c, p: _recursive_targets(_rm_operands(c.args)[1], c, p) if has_option(
                 c.args, "-r", "-R", "--recursive") else None),
        Rule("sensitive-file-write", "writes a login, start-up, history or ssh file", _WRITERS,
             check=_sensitive_write),
        Rule("git-dir-write", "writes inside .git", _WRITERS, check=_git_dir_write),
        Rule("sensitive-file-write", "unpacks unlisted files into the home directory", ("tar", "unzip", "bsdtar",
                                                                                          "cp", "rsync"),
             check=_unlisted_into_home),
    ),
)
