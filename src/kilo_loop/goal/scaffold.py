"""Scaffold a new markdown plan (`kilo-loop new-plan`) from the project's template.

The template is `<project>/.kilo/templates/plan.md`, or `DEFAULT_TEMPLATE` when the
project has none. Placeholders (spaces inside the braces are allowed):

- `{{title}}` — the plan title as given (whitespace collapsed to single spaces);
- `{{date}}`  — the creation date, `YYYY-MM-DD` in local time, taken from the epoch;
- `{{slug}}`  — the file-name slug.

Any other `{{…}}` text is left as written. The plan is written to
`<dir>/<epoch-ms>-<slug>.md` (default dir `.kilo/plans`).
"""

from __future__ import annotations

import re
import time
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath

from kilo_loop.errors import KiloLoopError, UsageError
from kilo_loop.goal.model import GoalError
from kilo_loop.goal.parse import parse_markdown_goal
from kilo_loop.goal.registry import is_plan_location
from kilo_loop.run.files import write_bytes_atomic

DEFAULT_DIR = ".kilo/plans"
TEMPLATE_PARTS = (".kilo", "templates", "plan.md")
SLUG_LIMIT = 60
MAX_TEMPLATE_BYTES = 1024 * 1024
_PLACEHOLDER = re.compile(r"\{\{\s*(title|date|slug)\s*\}\}")

DEFAULT_TEMPLATE = """\
# {{title}}

_Created {{date}} · `{{slug}}`_

## Context

Why this plan exists, what is in and out of scope, and the constraints the agent must respect.
Each checklist item below is one stage; the loop works through them in order. Append
` :: verify: <command>` to a stage so the loop itself checks it (a stage is only done when
that command exits 0), and ` :: acceptance: <criteria>` to say what done means.

## Stages

- [ ] Explore the relevant code and write down the approach
- [ ] Implement the change with tests :: acceptance: the new tests pass
- [ ] Run the full test suite and fix any regressions
"""


class ScaffoldError(KiloLoopError, ValueError):
    """A plan that cannot be scaffolded; the message says why and what to do."""


class ScaffoldArgumentError(ScaffoldError, UsageError):
    """A title, --dir or --epoch that cannot make a plan: a usage error (exit 2), nothing written."""


@dataclass(frozen=True)
class ScaffoldedPlan:
    path: Path
    relative: str  # the path relative to the project, posix separators
    content: str
    discoverable: bool  # whether `discover_plans` will list it


def slugify(text: str, limit: int = SLUG_LIMIT) -> str:
    """Lowercase ASCII words joined by dashes, at most `limit` characters; `plan` when nothing is left."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return slug[:limit].rstrip("-") or "plan"


def render_plan(template: str, *, title: str, date: str, slug: str) -> str:
    values = {"title": title, "date": date, "slug": slug}
    return _PLACEHOLDER.sub(lambda found: values[found.group(1)], template)


def load_template(project: Path) -> str:
    path = project.joinpath(*TEMPLATE_PARTS)
    if not path.exists():
        return DEFAULT_TEMPLATE
    try:
        if path.stat().st_size > MAX_TEMPLATE_BYTES:
            raise ScaffoldError(f"{path}: the template is larger than {MAX_TEMPLATE_BYTES} bytes")
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ScaffoldError(f"{path}: the template is not UTF-8 text: save it as UTF-8") from None
    except OSError as exc:
        raise ScaffoldError(f"{path}: cannot read the template ({exc.strerror or exc})") from None


def _directory_parts(directory: str) -> tuple[str, ...]:
    pure = PurePosixPath(directory.replace("\\", "/"))
    if pure.is_absolute():
        raise ScaffoldArgumentError(f"--dir must be relative to the project, not absolute: {directory!r}")
    parts = tuple(part for part in pure.parts if part != ".")
    if ".." in parts:
        raise ScaffoldArgumentError(f"--dir may not leave the project ('..'): {directory!r}")
    return parts


def _date_of(epoch_ms: int) -> str:
    try:
        return datetime.fromtimestamp(epoch_ms / 1000).date().isoformat()
    except (OverflowError, OSError, ValueError):
        raise ScaffoldArgumentError(f"--epoch {epoch_ms} is not a usable time in milliseconds") from None


def _is_discoverable(parts: tuple[str, ...], content: str) -> bool:
    if not is_plan_location(parts):
        return False
    try:
        parse_markdown_goal(content)
    except GoalError:
        return False
    return True


def build_plan(
    project: Path,
    title: str,
    *,
    slug: str | None = None,
    epoch_ms: int | None = None,
    directory: str = DEFAULT_DIR,
    template: str | None = None,
    stamp_name: bool = True,
) -> ScaffoldedPlan:
    """Where the plan goes and what it says; reads the project template unless one is given.
    `stamp_name=False` leaves the epoch out of the file name (`<slug>.md`)."""
    clean_title = " ".join(title.split())
    if not clean_title:
        raise ScaffoldArgumentError('the plan title is empty: kilo-loop new-plan "My plan title"')
    if epoch_ms is None:
        epoch_ms = time.time_ns() // 1_000_000
    if epoch_ms < 0:
        raise ScaffoldArgumentError(f"--epoch must not be negative: {epoch_ms}")
    final_slug = slugify(slug if slug is not None else clean_title)
    name = f"{epoch_ms}-{final_slug}.md" if stamp_name else f"{final_slug}.md"
    parts = (*_directory_parts(directory), name)
    text = load_template(project) if template is None else template
    content = render_plan(text, title=clean_title, date=_date_of(epoch_ms), slug=final_slug)
    return ScaffoldedPlan(path=project.joinpath(*parts), relative="/".join(parts), content=content,
                          discoverable=_is_discoverable(parts, content))


def write_plan(plan: ScaffoldedPlan, force: bool = False) -> None:
    """Create the plan file (and its directory); an existing file is an error unless `force`."""
    try:
        plan.path.parent.mkdir(parents=True, exist_ok=True)
        if force:
            write_bytes_atomic(plan.path, plan.content.encode("utf-8"))
            return
        with plan.path.open("x", encoding="utf-8", newline="") as handle:
            handle.write(plan.content)
    except FileExistsError:
        raise ScaffoldError(f"{plan.relative} already exists: pass --force to overwrite it, or --slug "
                            "to pick another name") from None
    except OSError as exc:
        raise ScaffoldError(f"cannot write {plan.relative} ({exc.strerror or exc})") from None
