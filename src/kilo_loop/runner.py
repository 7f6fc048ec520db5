"""Wire a run together: project, goal, backend, run directory (new or resumed),
the event bus and its subscribers, then drive the orchestrator on one event loop."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kilo_loop.agent.protect_check import AGENT_CONFIG_GLOBS
from kilo_loop.agent.protocol import AgentBackend, AgentPolicy, prepare_backend
from kilo_loop.agent.registry import BackendLoadError, auto_runtime, create_backend, find_binary, load_backend
from kilo_loop.agent.router import RuntimeRouter, runtimes_without_cost
from kilo_loop.agent.serve import ServeBackend
from kilo_loop.agent.simulator import DryRunBackend
from kilo_loop.errors import UsageError
from kilo_loop.fleet.child import INBOX_ENV
from kilo_loop.git import NotAGitRepo, git_root
from kilo_loop.gitstatus import TreeStatus
from kilo_loop.goal.model import Goal, GoalError, Stage
from kilo_loop.goal.parse import goal_from_text, load_goal
from kilo_loop.goal.sync import mark_stage_done
from kilo_loop.loop.commands import (
    Command,
    CommandHandler,
    CommandQueue,
    CommandRefused,
    Reply,
    StopNow,
    stop_serving,
)
from kilo_loop.loop.control import RunControl
from kilo_loop.loop.hitl import AnswerBook, effective_answer_timeout, hitl_refusal
from kilo_loop.loop.orchestrator import LoopContext, Orchestrator
from kilo_loop.notify import Notifier, parse_targets, to_apprise_url
from kilo_loop.review.options import review_options, review_runtimes
from kilo_loop.review.readonly import ReadOnlyGuard
from kilo_loop.run.bus import EventBus
from kilo_loop.run.events import AgentServerStarted, RunEvent, RunStarted, StatusChanged, now_iso
from kilo_loop.run.layout import ProjectLayout, RunLayout
from kilo_loop.run.notices import notice_subscriber
from kilo_loop.run.recorder import RunRecorder
from kilo_loop.run.state import RetryState, RunState, StageState, VerifyResult
from kilo_loop.run.status import StageStatus
from kilo_loop.run.store import RunNotFound, last_seq, load_for_resume, resolve_run
from kilo_loop.safety.checkpoint import (
    CheckpointError,
    RevertResult,
    capture_checkpoint,
    revert_to_checkpoint,
)
from kilo_loop.safety.guard import Guard
from kilo_loop.safety.redact import Redactor
from kilo_loop.safety.verify import run_verify
from kilo_loop.sandbox.jail import Jail
from kilo_loop.sandbox.setup import check_mode as check_sandbox_mode
from kilo_loop.sandbox.setup import jail_expected, run_jail
from kilo_loop.settings import Settings
from kilo_loop.ui.terminal import TerminalInput


class SetupError(UsageError, RuntimeError):
    """A problem found before anything is created; the message says what to do."""


# ------------------------------------------------------------------ resolution
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
    path = settings.goal.expanduser()
    if not path.is_absolute() and not path.exists() and (project / path).exists():
        path = project / path
    return load_goal(path.resolve())


def run_runtime(settings: Settings) -> str:
    """The run's runtime: --runtime, or (auto) the one the binary's name or a *_BIN variable says."""
    if settings.runtime != "auto":
        return settings.runtime
    return auto_runtime(settings.kilo_bin, os.environ)


def _cli_backend(runtime: str, settings: Settings, explicit: bool) -> AgentBackend:
    try:
        binary = find_binary(runtime, settings.kilo_bin if explicit else None, os.environ)
        return create_backend(runtime, binary)
    except BackendLoadError as exc:
        raise SetupError(str(exc)) from exc


def make_backend(settings: Settings, goal: Goal | None = None) -> tuple[AgentBackend, str]:
    """The run's backend and runtime name; stages naming another runtime get theirs through a router."""
    if settings.dry_run:
        return DryRunBackend(ask_questions=settings.hitl != "off"), "dry-run"
    if settings.backend:
        try:
            custom = load_backend(settings.backend, settings)
        except BackendLoadError as exc:
            raise SetupError(str(exc)) from exc
        return custom, custom.name
    runtime = run_runtime(settings)
    backend = _with_transport(_cli_backend(runtime, settings, explicit=True), runtime, settings)
    wanted = [*(s.runtime for s in (goal.stages if goal else [])), *review_runtimes(settings)]
    stage_runtimes = sorted({name for name in wanted if name and name != runtime})
    if not stage_runtimes:
        return backend, runtime
    others = {name: _with_transport(_cli_backend(name, settings, explicit=False), name, settings)
              for name in stage_runtimes}
    return RuntimeRouter(backend, others), runtime


def serve_backend_of(backend: AgentBackend) -> ServeBackend | None:
    """The run's warm server: the backend itself, or a router's own runtime (other runtimes use `run`)."""
    if isinstance(backend, RuntimeRouter):
        backend = backend.by_runtime[backend.name]
    return backend if isinstance(backend, ServeBackend) else None


def _with_transport(backend: AgentBackend, runtime: str, settings: Settings) -> AgentBackend:
    """kilo/opencode under `--transport serve` (the default): one warm server, `run` as its fallback."""
    binary = getattr(backend, "binary", None)
    if settings.transport == "serve" and runtime in ("kilo", "opencode") and isinstance(binary, str):
        return ServeBackend(binary, runtime, backend)
    return backend


def default_agent(settings: Settings, runtime: str) -> str | None:
    # The original tool defaulted to a `code-design` agent; kilo 7.7.7 has none (it warns and falls
    # back to `code`), so without --agent the CLI picks its own default, as opencode does.
    return settings.agent


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


# ------------------------------------------------------------------ run setup
def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid() % 10000:04d}"


def _unused_run_id(layout: ProjectLayout) -> str:
    """A new run id; two runs started within the same second get distinct ones."""
    base = new_run_id()
    candidate, n = base, 1
    while (layout.runs / candidate).exists():
        n += 1
        candidate = f"{base}-{n}"
    return candidate


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
        run_id=run_id, status="starting", project=str(project), goal_title=goal.title,
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
    """Carry over stage progress, blocked stages, verify feedback, percent, session and guard note;
    the goal file may have changed. (The reducer marks iterations cut short as interrupted.)"""
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
        "blocked_stages": blocked, "status": "starting", "finished_at": None, "stop_reason": "",
        "resume_command": "", "pending_questions": [], "paused": False, "abort_requested": False,
        # A resume is a fresh start for the stop conditions; the guard note itself is kept and re-injected.
        "stale_iterations": 0, "consecutive_guard_blocks": 0, "retry": RetryState(), "current_stage_id": None,
        "shared_context": previous.shared_context or settings.shared_context,
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
    run_id = settings.run_id or _unused_run_id(project_layout)
    try:
        run = project_layout.run(run_id)
    except ValueError as exc:
        raise SetupError(f"--run-id: {exc}") from exc
    if run.state.exists():
        raise SetupError(f"run {run_id} already exists; pick another --run-id or --resume {run_id}")
    return PreparedRun(run, initial_state(settings, goal, project, run_id, runtime), resumed=False)


class AllStagesDone(SetupError):
    """Every stage of the goal is done already and the run was not forced."""

    def __init__(self, goal: Goal) -> None:
        super().__init__(f"every stage of '{goal.title}' is already done")
        self.goal = goal


def reopen_all(goal: Goal) -> Goal:
    return goal.model_copy(update={"stages": [s.model_copy(update={"done": False}) for s in goal.stages]})


@dataclass
class RunPlan:
    """A run resolved before anything is created: settings, goal, agent backend, run directory."""

    settings: Settings
    project: Path
    goal: Goal
    backend: AgentBackend
    runtime: str
    prepared: PreparedRun

    def handle(self) -> RunHandle:
        return RunHandle(self.settings, self.project, self.goal, self.backend, self.runtime, self.prepared)


def plan_run(settings: Settings, project: Path, check_hitl: bool = True) -> RunPlan:
    """The one run preparation, for the command line and the dashboard's launcher alike: the goal
    (a finished one only with `force`, reopened), the backend and the run directory (new or resumed).
    Raises SetupError (AllStagesDone, a bad goal, a missing agent CLI…) before anything is written."""
    # A plan steered through its inbox (--parallel, a fleet worker) has the many-runs dashboard to answer.
    answerable = settings.dashboard or bool(os.environ.get(INBOX_ENV))
    refusal = hitl_refusal(settings.hitl, _stdin_can_answer(), answerable) if check_hitl else None
    if refusal:
        raise SetupError(refusal)
    goal = resolve_goal(settings, project)
    if goal.all_done() and not settings.resume:
        if not settings.force:
            raise AllStagesDone(goal)
        goal = reopen_all(goal)
    backend, runtime = make_backend(settings, goal)
    preflight(settings, backend, runtime)
    check_sandbox_mode(settings.sandbox, settings.dry_run)
    prepared = prepare_run(settings, goal, project, runtime)
    return RunPlan(settings, project, goal, backend, runtime, prepared)


def cli_targets(backend: AgentBackend, runtime: str) -> list[tuple[str, str]]:
    """(runtime, binary) of every agent CLI the backend drives (a router's stages' too)."""
    members = backend.by_runtime if isinstance(backend, RuntimeRouter) else {runtime: backend}
    return [(name, binary) for name, member in members.items()
            if isinstance(binary := getattr(member, "binary", None), str)]


def preflight(settings: Settings, backend: AgentBackend, runtime: str) -> None:
    """Before a real run: each CLI must accept the flags the loop passes (a clear SetupError, exit 2)."""
    if settings.dry_run or settings.backend or not settings.preflight:
        return
    from kilo_loop.doctor.preflight import cli_sandbox_failures, failure_message
    from kilo_loop.doctor.probe import preflight as probe_preflight

    failed = probe_preflight(cli_targets(backend, runtime))
    failed += cli_sandbox_failures(cli_targets(backend, runtime), os.environ, jail_expected(settings.sandbox))
    if failed:
        raise SetupError(failure_message(failed))


# ------------------------------------------------------------------ safety hooks
class SafetyHooks:
    def __init__(self, redact: Callable[[str], str], jail: Jail | None = None) -> None:
        self._redact = redact
        self._jail = jail

    async def checkpoint(self, project: Path, checkpoints_dir: Path, iteration: int,
                         status: TreeStatus | None = None) -> str:
        cp = await asyncio.to_thread(capture_checkpoint, project, checkpoints_dir, iteration, status)
        return f"HEAD {str(cp.head or 'none')[:10]}, {len(cp.untracked)} untracked, patch {cp.patch_bytes} bytes"

    async def verify(self, command: str, cwd: Path, timeout_s: float) -> VerifyResult:
        return await run_verify(command, cwd, timeout_s, self._redact, jail=self._jail)

    def sync_markdown(self, goal: Goal, stage: Stage) -> bool:
        try:
            # Not fsynced: the loop fsyncs state.json (which records the stage done) right after, which
            # commits the file system's journal with this rename; a kill -9 cannot tear either.
            return mark_stage_done(goal, stage, True, durable=False)
        except GoalError:
            return False  # the plan was moved or made read-only mid-run; the caller warns



# ------------------------------------------------------------------ execution
def agent_policy(settings: Settings, project: Path, run_dir: Path, models: tuple[str, ...] = (),
                 protect: tuple[str, ...] = (), jail: Jail | None = None) -> AgentPolicy:
    """What the loop decided, for the backend to turn into its CLI's flags, env and config."""
    return AgentPolicy(project=project, guard=settings.guard, guard_deny=tuple(settings.guard_deny),
                       guard_allow=tuple(settings.guard_allow), guard_packs=dict(settings.guard_packs),
                       run_dir=run_dir,
                       isolate_home=settings.isolate_home, environ=dict(os.environ),
                       provider_config_mode=settings.provider_config_mode,
                       models=tuple(m for m in (settings.model, *models) if m), protect=protect, jail=jail)


def _all_protect_globs(goal: Goal) -> tuple[str, ...]:
    return tuple(dict.fromkeys(g for stage in goal.stages for g in goal.protected_for(stage)))


def _force_exit(before_exit: Callable[[], None]) -> Callable[..., None]:
    def handler(*_: object) -> None:
        before_exit()  # os._exit skips atexit: give the terminal back first
        os._exit(130)

    return handler


def _install_signal_handlers(
    stop: Callable[[], None], say: Callable[[str], None], before_exit: Callable[[], None]
) -> Callable[[], None]:
    """Ctrl+C stops the run; a second one force-exits. SIGTERM stops the run."""
    loop = asyncio.get_running_loop()
    presses = {"count": 0}

    def on_sigint() -> None:
        presses["count"] += 1
        if presses["count"] > 1:
            say("second Ctrl+C: exiting now")
            _force_exit(before_exit)()
        say("Ctrl+C: stopping the run (press again to force-exit)")
        stop()

    loop.add_signal_handler(signal.SIGINT, on_sigint)
    loop.add_signal_handler(signal.SIGTERM, stop)

    def remove() -> None:
        loop.remove_signal_handler(signal.SIGTERM)
        # Not remove_signal_handler(SIGINT): that reinstates KeyboardInterrupt for a moment.
        # Once the run is over, any Ctrl+C (final summary, dashboard kept open) exits at once.
        signal.signal(signal.SIGINT, _force_exit(before_exit))

    return remove


def _stdin_is_tty() -> bool:
    try:
        return os.isatty(sys.stdin.fileno())
    except (AttributeError, OSError, ValueError):
        return False


def _stdin_can_answer() -> bool:
    """A terminal, or a pipe or file that scripted answers can come from (not /dev/null, not closed)."""
    if _stdin_is_tty():
        return True
    try:
        return not os.path.samefile(f"/proc/self/fd/{sys.stdin.fileno()}", os.devnull)
    except (AttributeError, OSError, ValueError):
        return False


class RunHandle:
    """A run that is set up and ready to go: everything the terminal and the dashboard
    need to watch and steer it (state, control channel, event bus, files)."""

    def __init__(self, settings: Settings, project: Path, goal: Goal, backend: AgentBackend, runtime: str,
                 prepared: PreparedRun) -> None:
        self.settings, self.project, self.goal, self.runtime = settings, project, goal, runtime
        self.redactor = Redactor(enabled=settings.redact)
        ProjectLayout(project).ensure()
        self.layout, self.resumed = prepared.layout, prepared.resumed
        self.layout.ensure()
        self.prompt_extra = read_prompt_extra(settings.prompt_extra, project)
        self.bus = EventBus(self.layout.events, self.redactor.redact_value, start_seq=last_seq(self.layout.events))
        # Redacted once here (goal title, stages…); from now on the state is built from redacted events.
        shown = RunState.model_validate(self.redactor.redact_value(prepared.state.snapshot()))
        self.recorder = RunRecorder(self.layout, shown, self.bus, self.redactor.redact_value)
        self.control = RunControl(shared_context=prepared.state.shared_context)
        self.commands = CommandQueue()
        self._over = False
        self.answers = AnswerBook(ProjectLayout(project).answers, self.state.run_id, self.redactor.redact_value)
        # Each open channel (terminal, dashboard) adds a probe; a question waits only if one is open.
        self.answer_channels: list[Callable[[], bool]] = []
        self._backend = backend

    @property
    def state(self) -> RunState:
        """The current state (the reducer's latest); read it, never change it."""
        return self.recorder.state

    @property
    def run_id(self) -> str:
        return self.state.run_id

    @property
    def over(self) -> bool:
        """True once the run has ended: it takes no more commands."""
        return self._over

    def send(self, command: Command) -> None:
        """Fire and forget (a key press, a signal); ignored once the run is over."""
        if not self._over:
            self.commands.send(command)

    async def ask(self, command: Command) -> Reply:
        """Send and wait for the run's reply; CommandRefused when it refuses (or is over)."""
        if self._over:
            raise CommandRefused(409, f"run {self.run_id} has ended")
        return await self.commands.ask(command)

    async def _revert(self, checkpoints: Path, iteration: int, force: bool) -> RevertResult:
        try:
            return await asyncio.to_thread(revert_to_checkpoint, self.project, checkpoints, iteration, force)
        except CheckpointError as exc:
            raise CommandRefused(409, str(exc)) from exc

    def _checkpoints_of(self, run_id: str | None) -> Path:
        if run_id in (None, self.run_id):
            return self.layout.checkpoints
        try:
            return resolve_run(ProjectLayout(self.project), run_id or "").checkpoints
        except RunNotFound as exc:
            raise CommandRefused(404, str(exc)) from exc

    def answer_channel_open(self) -> bool:
        return any(probe() for probe in self.answer_channels)

    async def run(self) -> RunState:
        """Drive the loop to its end; the final state is always saved to disk."""
        settings, recorder = self.settings, self.recorder
        warnings = self.answers.load_for_resume() if self.resumed else []
        jail = run_jail(settings.sandbox, settings.dry_run, self.project, _all_protect_globs(self.goal), self._backend,
                        self.goal.source, warnings.append)
        start = self.state.model_copy(update={
            "sandbox": jail.describe() if jail is not None else "off",
            "answers": len(self.answers.answers), "max_iterations": self.state.iteration + settings.iterations,
            "prompt_extra": self.prompt_extra or self.state.prompt_extra,
        })
        recorder.open(start, self.resumed)
        for warning in warnings:
            recorder.warn(warning)
        guard = Guard(settings.guard_deny, settings.guard_allow, packs=settings.guard_packs) if settings.guard else None
        prepared = prepare_backend(self._backend, agent_policy(
            settings, self.project, self.layout.dir, tuple(s.model for s in self.goal.stages if s.model),
            (*_all_protect_globs(self.goal), *(AGENT_CONFIG_GLOBS if settings.guard else ())), jail))
        for note in prepared.notes:
            recorder.warn(note)
        if settings.max_cost is not None:
            for name in runtimes_without_cost(self._backend):
                recorder.warn(f"{name} reports no cost: --max-cost cannot stop its sessions, --max-tokens can")
        # Events reach the notifier redacted already (the bus did it), so it passes text on as it is.
        notifier = Notifier(settings.notify, lambda text: text, recorder.warn) if settings.notify else None
        if notifier is not None:
            self.bus.subscribe(notice_subscriber(lambda: self.recorder.state, notifier.notify))
        recorder.emit(RunStarted(message=f"run {self.run_id} {'resumed' if self.resumed else 'started'}: "
                      f"{self.goal.title} ({len(self.goal.stages)} stage(s), runtime {self.runtime})"))
        review = review_options(settings)
        server = serve_backend_of(self._backend)
        if server is not None:
            await self._open_server(server, guard, prepared.env, review is not None)
        ctx = LoopContext(
            settings=settings, goal=self.goal, project=self.project, backend=self._backend, control=self.control,
            recorder=recorder, answers=self.answers, hooks=SafetyHooks(self.redactor.redact, jail), guard=guard,
            answer_channel_open=self.answer_channel_open,
            answer_timeout=effective_answer_timeout(settings.answer_timeout, settings.dry_run, _stdin_is_tty()),
            review=review,
        )
        self.control.prompt_extra = self.prompt_extra
        handler = CommandHandler(self.control, recorder, self._revert, self._checkpoints_of)
        for early in self.commands.pending():  # sent before the start (e.g. the launcher's instructions)
            await handler.handle(early)
        serving = asyncio.create_task(handler.serve(self.commands), name=f"kilo-loop commands {self.run_id}")
        try:
            await Orchestrator(ctx).run()
        finally:
            self._over = True
            if server is not None:
                await server.aclose()
            await stop_serving(serving)
            handler.refuse_pending(self.commands, f"run {self.run_id} has ended")
            if notifier is not None:
                await notifier.aclose(10.0)
            self.bus.close()
        return self.state

    async def _open_server(self, backend: ServeBackend, guard: Guard | None, agent_env: dict[str, str],
                           reviewers: bool) -> None:
        reviewer_guard = ReadOnlyGuard(guard, self.project) if reviewers else None
        up = await backend.open(project=self.project, env=agent_env, guard=guard, run_dir=self.layout.dir,
                                warn=self.recorder.warn, reviewer_guard=reviewer_guard)
        if up:
            self.recorder.emit(AgentServerStarted(
                message=f"agent server up ({backend.name} serve on 127.0.0.1): every permission is decided by "
                        "the loop before the tool runs", runtime=backend.name))

    def kill_agent_now(self) -> None:
        """A force exit cannot await: no agent server may outlive the loop."""
        server = serve_backend_of(self._backend)
        if server is not None:
            server.kill_now()


def attach_terminal(handle: RunHandle, say: Callable[[str], None]) -> Callable[[], None]:
    """Terminal keys, typed answers and Ctrl+C for this run; returns the detach function."""
    terminal = TerminalInput(handle.send, lambda: handle.state, say)
    terminal.start()
    handle.answer_channels.append(lambda: terminal.open or terminal.has_early_answers)

    def on_event(event: RunEvent) -> None:
        if isinstance(event, StatusChanged) and event.status == "waiting-answer":
            terminal.flush_early_answers()  # every question of the round is pending now

    def before_exit() -> None:
        handle.kill_agent_now()
        terminal.stop()

    handle.bus.subscribe(on_event)
    remove_signals = _install_signal_handlers(lambda: handle.send(StopNow()), say, before_exit)

    def detach() -> None:
        remove_signals()
        terminal.stop()

    return detach


async def execute_run(plan: RunPlan, view: Callable[[RunEvent], None], say: Callable[[str], None]) -> RunState:
    """A direct run from the command line: console view and terminal controls attached."""
    handle = plan.handle()
    handle.bus.subscribe(view)
    detach = attach_terminal(handle, say)
    detach_inbox = _attach_inbox_if_steered(handle)
    try:
        return await handle.run()
    finally:
        detach_inbox()
        detach()


def _attach_inbox_if_steered(handle: RunHandle) -> Callable[[], None]:
    """A plan run by `--parallel` or a fleet worker takes commands and answers from its inbox file."""
    from kilo_loop.fleet.attach import attach_inbox, inbox_requested

    return attach_inbox(handle) if inbox_requested() else (lambda: None)
