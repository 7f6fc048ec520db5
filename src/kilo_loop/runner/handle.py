"""A run that is set up and ready to go: what the terminal and the dashboard watch and steer, and its
one drive to the end."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

from kilo_loop.agent.protect_check import AGENT_CONFIG_GLOBS
from kilo_loop.agent.protocol import AgentBackend, prepare_backend
from kilo_loop.agent.router import runtimes_without_cost
from kilo_loop.agent.serve import ServeBackend
from kilo_loop.checkpoint.store import (
    CheckpointError,
    RevertResult,
    revert_to_checkpoint,
)
from kilo_loop.finish import ForgeOptions, StageFinisher, build_finisher
from kilo_loop.goal.issue import parse_issue_ref
from kilo_loop.goal.model import Goal
from kilo_loop.guard.runtime import Guard
from kilo_loop.loop.commands import (
    Command,
    CommandHandler,
    CommandQueue,
    CommandRefused,
    Refusal,
    Reply,
    stop_serving,
)
from kilo_loop.loop.hitl import AnswerBook, effective_answer_timeout
from kilo_loop.loop.orchestrator import LoopContext, Orchestrator
from kilo_loop.notify import Notifier
from kilo_loop.redact import KnownSecrets, Redactor, collect, from_env, screen
from kilo_loop.review.controller import ReviewOptions
from kilo_loop.review.options import review_options
from kilo_loop.review.readonly import ReadOnlyGuard
from kilo_loop.review.wiring import reviewer_factory
from kilo_loop.run.bus import EventBus
from kilo_loop.run.control import RunControl
from kilo_loop.run.events import AgentServerStarted, RunStarted, SecretsMasked
from kilo_loop.run.layout import ProjectLayout
from kilo_loop.run.notices import notice_subscriber
from kilo_loop.run.recorder import RunRecorder
from kilo_loop.run.state import RunState
from kilo_loop.run.store import RunNotFound, last_seq, resolve_run
from kilo_loop.runner.backends import agent_policy, all_protect_globs, serve_backend_of
from kilo_loop.runner.hooks import SafetyHooks
from kilo_loop.runner.setup import PreparedRun, read_prompt_extra
from kilo_loop.runner.terminal import stdin_is_tty
from kilo_loop.sandbox.jail import Jail
from kilo_loop.sandbox.setup import run_jail
from kilo_loop.sandbox.watch import WatchedBackend
from kilo_loop.settings import Settings

# The mask source of the warm server's password in the report's counts (no secret word in it: the
# counts are redacted like any event data, and a number under a password-named key would be).
_SERVER_PASSWORD_SOURCE = "agent server"


class RunHandle:
    """A run that is set up and ready to go: everything the terminal and the dashboard
    need to watch and steer it (state, control channel, event bus, files)."""

    def __init__(self, settings: Settings, project: Path, goal: Goal, backend: AgentBackend, runtime: str,
                 prepared: PreparedRun) -> None:
        self.settings, self.project, self.goal, self.runtime = settings, project, goal, runtime
        # Known secrets (the environment's, the project's .env values, maskValues) are masked by
        # value, in memory only; the agent's injected environment is added once it is prepared.
        self.known = collect(os.environ, project, settings.mask_files, settings.mask_values) if settings.redact \
            else KnownSecrets()
        self.redactor = Redactor(enabled=settings.redact, known=self.known.values)
        ProjectLayout(project).ensure()
        self.layout, self.resumed = prepared.layout, prepared.resumed
        self.layout.ensure()
        self.prompt_extra = read_prompt_extra(settings.prompt_extra, project)
        self.bus = EventBus(self.layout.events, self.redactor.redact_value, start_seq=last_seq(self.layout.events))
        # Redacted once here (goal title, stages…); from now on the state is built from redacted events.
        shown = RunState.model_validate(self.redactor.redact_value(prepared.state.snapshot()))
        self.recorder = RunRecorder(self.layout, shown, self.bus, self.redactor.redact_value,
                                    lambda: self.redactor.mask_counts)
        self.control = RunControl()
        self.commands = CommandQueue()
        self._over = False
        self.answers = AnswerBook(ProjectLayout(project).answers, self.state.run_id, self.redactor.redact_value)
        # Each open channel (terminal, dashboard) adds a probe; a question waits only if one is open.
        self.answer_channels: list[Callable[[], bool]] = []
        self._backend = backend
        self.jail: Jail | None = None  # decided when the run opens (the probe is cached per binary)

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
            raise CommandRefused(Refusal.CONFLICT, f"run {self.run_id} has ended")
        return await self.commands.ask(command)

    async def _revert(self, checkpoints: Path, iteration: int, force: bool) -> RevertResult:
        try:
            return await asyncio.to_thread(revert_to_checkpoint, self.project, checkpoints, iteration, force)
        except CheckpointError as exc:
            raise CommandRefused(Refusal.CONFLICT, str(exc)) from exc

    def _checkpoints_of(self, run_id: str | None) -> Path:
        if run_id in (None, self.run_id):
            return self.layout.checkpoints
        try:
            return resolve_run(ProjectLayout(self.project), run_id or "").checkpoints
        except RunNotFound as exc:
            raise CommandRefused(Refusal.NOT_FOUND, str(exc)) from exc

    def answer_channel_open(self) -> bool:
        return any(probe() for probe in self.answer_channels)

    async def run(self) -> RunState:
        """Drive the loop to its end; the final state is always saved to disk."""
        self._open_state()
        proxy = self.jail.proxy if self.jail is not None else None
        if proxy is not None:
            await proxy.start()
        guard = self._guard()
        agent_env = self._prepare_agents()
        notifier = self._notifier()
        self.recorder.emit(RunStarted(message=f"run {self.run_id} {'resumed' if self.resumed else 'started'}: "
                           f"{self.goal.title} ({len(self.goal.stages)} stage(s), runtime {self.runtime})"))
        review = review_options(self.settings)
        server = serve_backend_of(self._backend)
        if server is not None:
            await self._open_server(server, guard, agent_env, review is not None)
        ctx = self._loop_context(guard, review)
        finisher = self._finisher()
        ctx.finish = (lambda state: finisher.after_iteration(state, self.recorder.emit)) if finisher else None
        handler = CommandHandler(self.control, self.recorder, self._revert, self._checkpoints_of)
        for early in self.commands.pending():  # sent before the start (e.g. the launcher's instructions)
            await handler.handle(early)
        serving = asyncio.create_task(handler.serve(self.commands), name=f"kilo-loop commands {self.run_id}")
        try:
            await Orchestrator(ctx).run()
            if finisher is not None:
                await finisher.after_run(self.state, self.recorder.emit)
        finally:
            self._over = True
            if proxy is not None:
                await proxy.aclose()
            if server is not None:
                await server.aclose()
            await stop_serving(serving)
            handler.refuse_pending(self.commands, f"run {self.run_id} has ended")
            if notifier is not None:
                await notifier.aclose(10.0)
            self.bus.close()
        return self.state

    def _open_state(self) -> None:
        """The run's first event: its state (a resumed run's carried over), then what the resume warns of."""
        warnings = self.answers.load_for_resume() if self.resumed else []
        self.jail = run_jail(self.settings.sandbox, self.settings.dry_run, self.project, all_protect_globs(self.goal),
                             self._backend, self.goal.source, warnings.append, self.settings.sandbox_network,
                             self.settings.sandbox_allow_hosts)
        start = self.state.model_copy(update={
            "sandbox": self.jail.describe() if self.jail is not None else "off",
            "answers": len(self.answers.answers), "max_iterations": self.state.iteration + self.settings.iterations,
            "prompt_extra": self.prompt_extra or self.state.prompt_extra,
        })
        self.recorder.open(start, self.resumed)
        for warning in warnings:
            self.recorder.warn(warning)

    def _guard(self) -> Guard | None:
        settings = self.settings
        # with checkpoints, deletes inside the project that a revert can undo are not refused
        return Guard(settings.guard_deny, settings.guard_allow, packs=settings.guard_packs,
                     work_tree=str(self.project) if settings.checkpoint else None) if settings.guard else None

    def _prepare_agents(self) -> dict[str, str]:
        """The backend turns the loop's policy into its CLIs' flags, env and config; the env it needs."""
        settings = self.settings
        prepared = prepare_backend(self._backend, agent_policy(
            settings, self.project, self.layout.dir, tuple(s.model for s in self.goal.stages if s.model),
            (*all_protect_globs(self.goal), *(AGENT_CONFIG_GLOBS if settings.guard else ())), self.jail))
        for note in prepared.notes:
            self.recorder.warn(note)
        self._register_agent_secrets(prepared.env)
        if settings.max_cost is not None:
            for name in runtimes_without_cost(self._backend):
                self.recorder.warn(f"{name} reports no cost: --max-cost cannot stop its sessions, --max-tokens can")
        return prepared.env

    def _register_agent_secrets(self, agent_env: dict[str, str]) -> None:
        """Mask what the loop injects into the agent's environment too, and say what is masked."""
        if not self.settings.redact:
            return
        injected = screen(from_env(agent_env, "agent environment", exclude=os.environ), None, ())
        self.redactor.add_known(injected.values)
        registered = self.known.sources()
        for source, count in injected.sources().items():
            registered[source] = registered.get(source, 0) + count
        notes = self.known.notes + injected.notes
        if registered or notes:
            listed = ", ".join(f"{source} {count}" for source, count in registered.items()) or "none"
            self.recorder.emit(SecretsMasked(message=f"masking known secrets by value: {listed}"
                                             + "".join(f"; {note}" for note in notes),
                                             registered=registered, notes=notes))

    def _finisher(self) -> StageFinisher | None:
        """--finish: the loop commits each finished stage (on the run's own branch with `branch` and `pr`)."""
        s = self.settings
        forge = ForgeOptions(remote=s.remote, kind=s.forge, api=s.forge_url, repo=s.forge_repo)
        issue = parse_issue_ref(str(s.goal)) if s.goal else None
        finisher = build_finisher("none" if s.dry_run else s.finish, self.project, self.run_id, self.layout.dir,
                                  self.goal.title, self.goal.source, s.commit_author, forge, issue, s.issue_comments)
        if finisher is not None:
            self.recorder.emit(finisher.start())
        return finisher

    def _notifier(self) -> Notifier | None:
        """Out-of-band notices, one more subscriber of the bus."""
        if not self.settings.notify:
            return None
        # Events reach the notifier redacted already (the bus did it), so it passes text on as it is.
        notifier = Notifier(self.settings.notify, lambda text: text, self.recorder.warn)
        self.bus.subscribe(notice_subscriber(lambda: self.recorder.state, notifier.notify))
        return notifier

    def _loop_context(self, guard: Guard | None, review: ReviewOptions | None) -> LoopContext:
        settings = self.settings
        proxy = self.jail.proxy if self.jail is not None else None
        backend = WatchedBackend(self._backend, proxy) if proxy is not None else self._backend
        ctx = LoopContext(
            settings=settings, goal=self.goal, project=self.project, backend=backend, control=self.control,
            recorder=self.recorder, answers=self.answers, hooks=SafetyHooks(self.redactor.redact, self.jail), guard=guard,
            answer_channel_open=self.answer_channel_open,
            answer_timeout=effective_answer_timeout(settings.answer_timeout, settings.dry_run, stdin_is_tty()),
        )
        if review is not None:
            ctx.review = reviewer_factory(review, settings, self.goal, self.project, self._backend, self.recorder,
                                          self.control, guard, ctx.agent_env, self.answer_channel_open)
        return ctx

    async def _open_server(self, backend: ServeBackend, guard: Guard | None, agent_env: dict[str, str],
                           reviewers: bool) -> None:
        reviewer_guard = ReadOnlyGuard(guard, self.project) if reviewers else None
        up = await backend.open(project=self.project, env=agent_env, guard=guard, run_dir=self.layout.dir,
                                warn=self.recorder.warn, reviewer_guard=reviewer_guard, secret=self._mask_server_password)
        if up:
            self.recorder.emit(AgentServerStarted(
                message=f"agent server up ({backend.name} serve on 127.0.0.1): every permission is decided by "
                        "the loop before the tool runs", runtime=backend.name))

    def _mask_server_password(self, password: str) -> None:
        """The warm server's password is the run's own secret, readable by the agent (the server's
        environment): masked like the secrets the loop knows, wherever it would be written."""
        if self.settings.redact:
            self.redactor.add_known([(password, _SERVER_PASSWORD_SOURCE)])

    def kill_agent_now(self) -> None:
        """A force exit cannot await: no agent server may outlive the loop."""
        server = serve_backend_of(self._backend)
        if server is not None:
            server.kill_now()
