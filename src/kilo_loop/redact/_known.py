"""Which values the loop knows to be secret: collected once at start, kept in memory only.

Sources (each named in the report's mask counts):

* ``environment``: the loop's own environment variables whose names look secret (``*_KEY``,
  ``*_TOKEN``, ``*_SECRET``, ``*PASSWORD*``, ``*_PAT``, …) and the passwords of URLs in any
  variable (``DATABASE_URL=postgres://u:PASS@h/db``);
* ``agent environment``: what the loop injects into the agent's environment on top (provider
  keys, the ``apiKey`` inside an inline CLI config);
* ``mask file <name>``: the values of the project's ``.env*`` files (``maskFiles`` globs; an
  ``*.example``/``*.sample``/``*.template`` file holds placeholders and is skipped);
* ``maskValues``: the config's list; ``KILO_LOOP_MASK``: one value per line.

A value shorter than 8 characters, a placeholder, or a value too common to mask without
garbling ordinary output (``true``, ``localhost``, one found in the repository's tracked files)
is skipped with a note that names its source, never the value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kilo_loop.git import GitError, run_git
from kilo_loop.redact import _patterns as sp
from kilo_loop.redact._masker import MIN_LENGTH

__all__ = ["DEFAULT_MASK_FILES", "KnownSecrets", "collect", "from_env", "from_mask_files", "values_in"]

DEFAULT_MASK_FILES = (".env*",)
MASK_ENV = "KILO_LOOP_MASK"
_PLACEHOLDER_FILES = (".example", ".sample", ".template", ".dist", ".defaults")
# words of a variable's name that say secret beyond the redactor's key judgement (``GITLAB_PAT``,
# ``SENTRY_DSN``, ``MYSQL_ROOT_PASSWORD_X``)
_EXTRA_SECRET_WORDS = frozenset({"pat", "dsn", "password", "passwd", "pass", "pwd", "credential", "credentials"})
_NOT_SECRET_NAMES = frozenset({"PWD", "OLDPWD", MASK_ENV})
_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*:([^@/\s]+)@")
_COMMON = frozenset({
    "true", "false", "yes", "no", "none", "null", "undefined", "localhost", "127.0.0.1", "0.0.0.0",
    "development", "production", "staging", "test", "testing", "default", "enabled", "disabled",
    "password", "changeme", "secret", "example", "required", "optional", "http://localhost", "https://localhost",
})
_DOTENV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*[=:]\s*(.*?)\s*$")
_ORDINARY = re.compile(
    r"[a-z][a-z0-9+.-]*://[^:@\s]*(?:/[^\s]*)?|\.{0,2}/[^\s]*|[^@\s]+@[^@\s]+\.[a-z]{2,}|[0-9.:]+|[a-z]+(?:[-_][a-z]+)*",
    re.IGNORECASE,
)


@dataclass
class KnownSecrets:
    """(value, source) pairs to mask and the notes on what was skipped."""

    values: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def sources(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for _, source in self.values:
            counts[source] = counts.get(source, 0) + 1
        return counts


def secret_env_name(name: str) -> bool:
    """Whether an environment variable's name says its value is secret."""
    words = sp.key_words(name)
    if name in _NOT_SECRET_NAMES or not words or words[-1] in sp.META_LAST_WORDS:
        return False
    return sp.is_secret_key(name) or any(word in _EXTRA_SECRET_WORDS for word in words)


def values_in(text: str) -> Iterator[str]:
    """The secret values inside one variable's value: the value itself, each line of a multi-line
    one, the string leaves under secret-named keys of a JSON object (an inline CLI config's
    ``apiKey``, a service account's ``private_key`` lines)."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            parsed = json.loads(stripped)
        except (ValueError, RecursionError):  # not JSON, or nested too deep to read: its lines are the values
            pass
        else:
            yield from _json_secrets(parsed, 0)
            return
    lines = [line.strip() for line in stripped.splitlines() if line.strip()]
    yield from (line for line in lines if not line.startswith("-----"))


def _json_secrets(value: object, depth: int) -> Iterator[str]:
    if depth > 16:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str) and isinstance(key, str) and sp.is_secret_key(key):
                yield from values_in(item)
            elif isinstance(item, (dict, list)):
                yield from _json_secrets(item, depth + 1)
            elif isinstance(item, str):
                yield from url_passwords(item)
    elif isinstance(value, list):
        for item in value:
            yield from _json_secrets(item, depth + 1)


def url_passwords(text: str) -> Iterator[str]:
    """The password part of each ``scheme://user:password@host`` in ``text``."""
    for match in _URL_PASSWORD.finditer(text):
        yield match.group(1)


def from_env(env: Mapping[str, str], source: str, exclude: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """Secret values in an environment (``exclude``: entries already taken from another one)."""
    found: list[tuple[str, str]] = []
    for name, value in env.items():
        if exclude is not None and exclude.get(name) == value:
            continue
        if secret_env_name(name):
            found += [(piece, source) for piece in values_in(value)]
        elif "://" in value:
            found += [(piece, source) for piece in url_passwords(value)]
    return found


def from_mask_env(env: Mapping[str, str]) -> list[tuple[str, str]]:
    return [(line.strip(), MASK_ENV) for line in env.get(MASK_ENV, "").splitlines() if line.strip()]


def dotenv_values(text: str) -> Iterator[tuple[str, str]]:
    """(name, value) of each assignment in a dotenv file (quotes and a trailing comment removed)."""
    for line in text.splitlines():
        match = _DOTENV_LINE.match(line)
        if match is None or line.lstrip().startswith("#"):
            continue
        value = match.group(2)
        if value[:1] in ("'", '"') and value.endswith(value[0]) and len(value) > 1:
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        yield match.group(1), value


def _mask_file_paths(project: Path, globs: Sequence[str]) -> list[Path]:
    paths: set[Path] = set()
    for pattern in globs:
        try:
            paths.update(path for path in project.glob(pattern) if path.is_file())
        except (OSError, ValueError):
            continue
    return sorted(path for path in paths if not path.name.endswith(_PLACEHOLDER_FILES))


def from_mask_files(project: Path, globs: Sequence[str], notes: list[str]) -> list[tuple[str, str]]:
    """The values of the project's dotenv-style mask files: every value under a secret-looking
    name, and under any other name every value that is not plainly ordinary (a URL without a
    password, a path, an address, a number, a lower-case word)."""
    found: list[tuple[str, str]] = []
    for path in _mask_file_paths(project, globs):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            notes.append(f"mask file {path.name} not read ({exc.strerror or exc})")
            continue
        source = f"mask file {path.relative_to(project)}"
        ordinary = 0
        for name, value in dotenv_values(text):
            passwords = list(url_passwords(value))
            if secret_env_name(name) or not _ORDINARY.fullmatch(value):
                found += [(piece, source) for piece in values_in(value)]
            elif passwords:
                found += [(piece, source) for piece in passwords]
            elif len(value) >= MIN_LENGTH:
                ordinary += 1
        if ordinary:
            notes.append(f"{source}: {ordinary} ordinary value(s) (URLs, paths, numbers, words) not masked")
    return found


def _tracked(project: Path, candidates: Sequence[str], globs: Sequence[str]) -> set[str]:
    """Which candidates occur in the repository's tracked files (the mask files excepted): one
    ``git grep`` reading the values on stdin, so they appear in no argument list."""
    if not candidates or not (project / ".git").exists():
        return set()
    excluded = [f":(exclude,glob){pattern}" for pattern in globs] + [f":(exclude,glob)**/{pattern}" for pattern in globs]
    try:
        done = run_git(project, "grep", "-I", "-h", "-o", "-F", "--no-color", "-f", "-", "--", ".", *excluded,
                       stdin="\n".join(candidates).encode(), env={"GIT_LITERAL_PATHSPECS": "0"}, timeout=30)
    except GitError:
        return set()
    if done.returncode not in (0, 1):
        return set()
    return set(done.stdout.decode("utf-8", "replace").splitlines())


def screen(pairs: Iterable[tuple[str, str]], project: Path | None, globs: Sequence[str]) -> KnownSecrets:
    """Keep the values worth masking; a note (source and reason, never the value) for the others."""
    known = KnownSecrets()
    skipped: dict[tuple[str, str], int] = {}

    def skip(source: str, reason: str) -> None:
        skipped[source, reason] = skipped.get((source, reason), 0) + 1

    seen: set[str] = set()
    kept: list[tuple[str, str]] = []
    for value, source in pairs:
        if value in seen:
            continue
        seen.add(value)
        if len(value) < MIN_LENGTH:
            skip(source, f"shorter than {MIN_LENGTH} characters")
        elif value.lower() in _COMMON or sp.is_placeholder(value):
            skip(source, "too common or a placeholder")
        elif "\n" in value or "\r" in value:
            skip(source, "more than one line")
        else:
            kept.append((value, source))
    tracked = _tracked(project, [value for value, _ in kept], globs) if project is not None else set()
    for value, source in kept:
        if value in tracked:
            skip(source, "found in the repository's tracked files")
        else:
            known.values.append((value, source))
    known.notes += [f"not masked: {count} value(s) from {source}, {reason}" for (source, reason), count in skipped.items()]
    return known


def collect(
    env: Mapping[str, str],
    project: Path | None = None,
    mask_files: Sequence[str] = DEFAULT_MASK_FILES,
    mask_values: Sequence[str] = (),
) -> KnownSecrets:
    """Everything known at start: the environment, ``KILO_LOOP_MASK``, ``maskValues`` and the
    project's mask files."""
    notes: list[str] = []
    pairs = from_env(env, "environment") + from_mask_env(env) + [(value, "maskValues") for value in mask_values]
    if project is not None and mask_files:
        pairs += from_mask_files(project, mask_files, notes)
    known = screen(pairs, project, mask_files)
    known.notes[:0] = notes
    return known
