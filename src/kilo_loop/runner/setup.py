"""A run's set-up before anything is written: the project, the goal, the operator's instructions, and
the run directory with its first state (new, or carried over from the run it resumes)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kilo_loop.git import NotAGitRepo, git_root
from kilo_loop.goal.issue import fetch_issue_goal, parse_issue_ref
from kilo_loop.goal.model import Goal, Stage
from kilo_loop.goal.parse import goal_from_text, load_goal
from kilo_loop.notify import parse_targets, to_apprise_url
from kilo_loop.run.events import now_iso
from kilo_loop.run.layout import ProjectLayout, RunLayout
from kilo_loop.run.state import RunState, StageState
from kilo_loop.run.status import Phase, StageStatus
from kilo_loop.run.store import RunNotFound, load_for_resume, resolve_run
from kilo_loop.runner.backends import default_agent
from kilo_loop.runner.errors import SetupError
from kilo_loop.runner.run_ids import unused_run_id
from kilo_loop.settings import Settings


def resolve_project(settings: Settings) -> Path:
    start = (settings.project or Path.cwd()).expanduser()
    if not start.is_dir():
        raise SetupError(f"--project {start} is not a directory")
    try:
        return git_root(start.resolve())
    except NotAGitRepo as exc:
        raise SetupError(str(exc)) from exc


def resolve_goal(settings: Settings, project: Path) -> Goal:
    if settings.goal_text:
        return goal_from_text(settings.goal_text)
    if settings.goal is None:
        raise SetupError("no goal: pass --goal <file.json|file.md> or --goal-text \"…\"")
    issue = parse_issue_ref(str(settings.goal))
    if issue is not None:  # fetched once and saved as a plan: a resume reads the saved one
        return load_goal(fetch_issue_goal(issue, ProjectLayout(project).root / "goals"))
    path = settings.goal.expanduser()
    if not path.is_absolute() and not path.exists() and (project / path).exists():
        path = project / path
    return load_goal(path.resolve())


# One word ending in a text file's extension, or a path: meant as a file, never as the instructions.
_FILE_NAME = re.compile(r"\S*/\S*|\S+\.(?:md|markdown|txt|text|prompt)", re.IGNORECASE)


def read_prompt_extra(value: str | None, project: Path) -> str | None:
    """--prompt-extra names a file (as in the original tool) or holds the text itself.  A value
    that names a file which is not there is refused: a typo must not become the instructions."""
    if not value:
        return None
    for candidate in (Path(value).expanduser(), project / value):
        try:
            if len(value) < 4096 and candidate.is_file():
                return candidate.read_text(encoding="utf-8", errors="replace").strip() or None
        except OSError:
            continue
    if _FILE_NAME.fullmatch(value.strip()):
        if any(candidate.is_dir() for candidate in (Path(value).expanduser(), project / value)):
            raise SetupError(f"--prompt-extra {value}: is a directory; name the file in it, or pass the "
                             "instructions themselves")
        raise SetupError(f"--prompt-extra {value}: no such file (looked in the current directory and "
                         f"{project}); fix the path, or pass the instructions themselves")
    return value.strip() or None


def goal_source(goal: Goal, project: Path) -> str | None:
    """The goal file as a run records it: relative to the project when inside it; None for --goal-text."""
    if goal.source is None:
        return None
    try:
        return goal.source.resolve().relative_to(project).as_posix()
    except ValueError:
        return str(goal.source)


def initial_state(settings: Settings, goal: Goal, project: Path, run_id: str, runtime: str) -> RunState:
    return RunState(
        run_id=run_id, status=Phase.STARTING, project=str(project), goal_title=goal.title,
        goal_source=goal_source(goal, project),
        goal_kind=goal.kind,
        stages=[StageState(id=s.id, title=s.title, status="done" if s.done else "pending", verify=s.verify,
                           acceptance=s.acceptance) for s in goal.stages],
        completed_stages=[s.id for s in goal.stages if s.done], runtime=runtime,
        agent=default_agent(settings, runtime), model=settings.model, max_iterations=settings.iterations,
        shared_context=settings.shared_context, hitl=settings.hitl, dry_run=settings.dry_run,
        started_at=now_iso(),
    )


def resumed_state(previous: RunState, goal: Goal, settings: Settings) -> RunState:
    """The replayed state with this start's inputs: the goal file's stages (it may have changed; done
    and blocked stages carry over by id) and --shared-context. What a resume resets (the live flags,
    the stop conditions) and what it marks (iterations cut short) is the reducer's, at state-init."""
    done = set(previous.completed_stages)
    blocked = [stage_id for stage_id in previous.blocked_stages if stage_id not in done]

    def status(stage: Stage) -> StageStatus:
        if stage.done or stage.id in done:
            return "done"
        return "blocked" if stage.id in blocked else "pending"

    stages = [StageState(id=s.id, title=s.title, status=status(s), verify=s.verify, acceptance=s.acceptance)
              for s in goal.stages]
    return previous.model_copy(update={
        "stages": stages, "completed_stages": [s.id for s in goal.stages if s.done or s.id in done],
        "blocked_stages": blocked, "shared_context": previous.shared_context or settings.shared_context,
    })


def check_same_goal(previous: RunState, goal: Goal, project: Path, ref: str) -> None:
    """A run resumes only with its own goal — the same file, or a goal of the same title (the file moved,
    or a fleet worker wrote it elsewhere): another goal's stages would inherit its done stages by id."""
    source = goal_source(goal, project)
    if goal.title == previous.goal_title or (source is not None and source == previous.goal_source):
        return
    was = f"--goal {previous.goal_source}" if previous.goal_source else f'--goal-text "{previous.goal_title}"'
    now = f"--goal {source}" if source else f'--goal-text "{goal.title}"'
    raise SetupError(f"--resume {ref}: run {previous.run_id} was started with {was}, not {now}: "
                     f"resume it with {was}, or start a new run without --resume")


@dataclass
class PreparedRun:
    layout: RunLayout
    state: RunState
    resumed: bool


def check_notify_targets(settings: Settings) -> None:
    """A bad --notify target fails before the run starts (the message shows it masked)."""
    try:
        for target in parse_targets(settings.notify):
            to_apprise_url(target)
    except ValueError as exc:
        raise SetupError(f"--notify: {exc}") from exc


def check_loop_paths(layout: ProjectLayout) -> None:
    """The loop's own paths under .kilocode-loop/ are free for what it writes there: a file where a
    directory goes (or the reverse) stops the run before it starts, not with a traceback mid-way."""
    for directory in (layout.root, layout.runs):
        if directory.exists() and not directory.is_dir():
            raise SetupError(f"{directory} is a file, but kilo-loop keeps its runs in that directory: "
                             "move the file out of the way")
    for file in (layout.progress, layout.answers, layout.handoff):
        if file.is_dir():
            raise SetupError(f"{file} is a directory, but the loop writes that file there: "
                             "move the directory out of the way")


def prepare_run(settings: Settings, goal: Goal, project: Path, runtime: str) -> PreparedRun:
    check_notify_targets(settings)
    read_prompt_extra(settings.prompt_extra, project)  # a missing file fails before the run dir exists
    project_layout = ProjectLayout(project)
    check_loop_paths(project_layout)
    if settings.resume:
        try:
            run = resolve_run(project_layout, settings.resume)
            previous = load_for_resume(run)
        except RunNotFound as exc:
            raise SetupError(f"--resume {settings.resume}: {exc}; to start over, run without --resume "
                             "(`kilo-loop report --last` shows the newest saved run)") from exc
        check_same_goal(previous, goal, project, settings.resume)
        return PreparedRun(run, resumed_state(previous, goal, settings), resumed=True)
    run_id = settings.run_id or unused_run_id(project_layout)
    try:
        run = project_layout.run(run_id)
    except ValueError as exc:
        raise SetupError(f"--run-id: {exc}") from exc
    if run.state.exists():
        raise SetupError(f"run {run_id} already exists; pick another --run-id or --resume {run_id}")
    return PreparedRun(run, initial_state(settings, goal, project, run_id, runtime), resumed=False)


def reopen_all(goal: Goal) -> Goal:
    return goal.model_copy(update={"stages": [s.model_copy(update={"done": False}) for s in goal.stages]})
