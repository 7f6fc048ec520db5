"""`kilo-loop watch`: the run view in a terminal. It follows the dashboard's state and event stream and
steers the run through the same API (so the same refusals); `q` leaves, the run goes on."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Log, Static

from kilo_loop.tui import view
from kilo_loop.tui.client import ApiRefused, DashboardClient, SseFrame
from kilo_loop.tui.screens import ConfirmScreen, LineScreen, QuestionScreen

LOG_KEPT = 2000  # log lines kept for filter and search; the dashboard pages older history from disk
REDRAW_SECONDS = 0.25  # frames arriving faster are drawn together
FLOOD_PER_SECOND = 20
FLOOD_REDRAW_SECONDS = 1.0
RETRY_SECONDS = 1.0
FLEET_POLL_SECONDS = 2.0  # a fleet's stream carries no state frames


def _rows(text: str, width: int) -> int:
    return sum(max(1, -(-len(line) // width)) for line in text.split("\n"))


class WatchApp(App[None]):
    TITLE = "kilo-loop watch"
    AUTO_FOCUS = None  # the log follows the run until the reader focuses it (Tab) to scroll back
    ENABLE_COMMAND_PALETTE = False  # every action has its key in the footer
    CSS = """
    Screen { layout: vertical; }
    #top { height: auto; padding: 0 1; background: $boost; }
    #title { text-style: bold; }
    #middle { height: auto; max-height: 40%; }
    #stages { width: 1fr; height: auto; padding: 0 1; }
    #now { width: 1fr; height: auto; padding: 0 1; border-left: solid $accent; }
    #logbar { height: 1; padding: 0 1; background: $boost; }
    #log { height: 1fr; scrollbar-size-horizontal: 0; }  /* long lines: focus the log, then ← → */
    #message { height: auto; padding: 0 1; color: $warning; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "leave (run goes on)"),
        Binding("p", "pause", "pause/resume"),
        Binding("s", "stop", "stop"),
        Binding("a", "answer", "answer"),
        Binding("n", "note", "note"),
        Binding("w", "withdraw", "withdraw note", show=False),
        Binding("b", "abort", "abort after session", show=False),
        Binding("r", "revert", "revert", show=False),
        Binding("f", "filter", "filter"),
        Binding("slash", "search", "search"),
    ]

    def __init__(self, client: DashboardClient | None, *, state: dict[str, Any] | None = None,
                 events: list[dict[str, Any]] | None = None, budget: dict[str, Any] | None = None,
                 now: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.client = client
        self.state: dict[str, Any] = state or {"status": "starting"}
        self.budget = budget
        self.now_panel = view.NowPanel()
        self.events: deque[dict[str, Any]] = deque(maxlen=LOG_KEPT)
        self.seq = int(self.state.get("seq") or 0)
        self.filter, self.search = "all", ""
        self._now = now
        self._pending: list[dict[str, Any]] = []
        self._dirty = True
        self._log_seq = 0
        self._shown: dict[str, str] = {}
        self._head: SseFrame | None = None
        self._drawn_at = 0.0
        self.connected = client is None
        for event in events or []:
            self._take(event)

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        with Vertical(id="top"):
            yield Static(id="title", markup=False)
            yield Static(id="headline", markup=False)
            yield Static(id="clock", markup=False)
            yield Static(id="figures", markup=False)
        with Horizontal(id="middle"):
            yield Static(id="stages", markup=False)
            yield Static(id="now", markup=False)
        yield Static(id="message", markup=False)
        yield Static(id="logbar", markup=False)
        yield Log(id="log", max_lines=LOG_KEPT, auto_scroll=True)
        yield Footer()

    def on_mount(self) -> None:
        self._redraw_log()
        self.refresh_view()
        self.set_interval(REDRAW_SECONDS, self._tick)
        self.set_interval(1.0, self._clock_tick)
        if self.client is not None:
            self.follow()
            if self.client.fleet:
                self.set_interval(FLEET_POLL_SECONDS, self.poll_state)

    async def on_unmount(self) -> None:
        if self.client is not None:
            await self.client.close()

    def _tick(self) -> None:
        # a trickle of events is drawn at once; a flood (a run emitting tens of lines a second) once a second,
        # which no reader outpaces and which keeps the watcher's CPU small
        now = time.monotonic()
        flood = len(self._pending) > FLOOD_PER_SECOND * (now - self._drawn_at)
        if flood and now - self._drawn_at < FLOOD_REDRAW_SECONDS:
            return
        self._drawn_at = now
        self._merge_head()
        if self._pending:
            log = self.query_one("#log", Log)
            lines = [view.log_text(e) for e in self._pending if view.visible(e, self.filter, self.search)]
            if lines:  # follow the newest lines, unless the reader scrolled up in the focused log
                follow = not log.has_focus or log.is_vertical_scroll_end
                log.write_lines(lines, scroll_end=False)
                if follow:
                    log.scroll_end(animate=False, immediate=True, x_axis=False)
            self._pending.clear()
            self._dirty = True
        if self._dirty:
            self.refresh_view()

    def _clock_tick(self) -> None:
        self._show("clock", view.clock_line(self.state, self._now() * 1000))

    # ------------------------------------------------------------------ rendering
    def refresh_view(self) -> None:
        state, width = self.state, self.size.width or 80
        title = state.get("goalTitle") or state.get("runId") or "kilo-loop"
        chips = [f"run {state.get('runId')}" if state.get("runId") else "", "dry run" if state.get("dryRun") else "",
                 "" if self.connected else "reconnecting…"]
        self._show("title", " · ".join([str(title), *[c for c in chips if c]]))
        self._show("headline", view.headline(state, 10 if width < 100 else 20))
        self._show("clock", view.clock_line(state, self._now() * 1000))
        self._show("figures", view.figures_line(state, self.budget))
        self._show("stages", "\n".join(["Stages", *view.stage_lines(state)]))
        now = ["Now", *view.now_lines(state, self.now_panel)]
        notes = view.note_lines(state, 3)
        self._show("now", "\n".join(now + (["Notes", *notes] if notes else [])))
        questions = state.get("pendingQuestions") or []
        bar = f"Log [{self.filter}]" + (f" search: {self.search}" if self.search else "")
        if questions and not view.is_final(state):
            bar += f" · {len(questions)} question(s) waiting: press a"
        self._show("logbar", bar)
        self._dirty = False

    def _show(self, name: str, text: str) -> None:
        """Update a panel only when its text changed: a redraw costs far more than the comparison."""
        old = self._shown.get(name)
        if old != text:
            self._shown[name] = text
            widget = self.query_one(f"#{name}", Static)
            # a new layout only when the panel's height may change (a reflow costs most of a redraw)
            width = max(1, widget.content_size.width)
            widget.update(text, layout=old is None or _rows(old, width) != _rows(text, width))

    def _redraw_log(self) -> None:
        log = self.query_one("#log", Log)
        log.clear()
        log.write_lines(view.shown_lines(self.events, self.filter, self.search), scroll_end=False)
        self.call_after_refresh(log.scroll_end, animate=False, x_axis=False)  # once it has its size

    def say(self, text: str, error: bool = False) -> None:
        self.query_one("#message", Static).update(text)
        self.notify(text, severity="error" if error else "information", timeout=4)

    # ------------------------------------------------------------------ following the run
    def _take(self, event: dict[str, Any]) -> bool:
        seq = event.get("seq")
        if isinstance(seq, int):
            if seq <= self._log_seq:  # a replayed line already shown
                return False
            self._log_seq = seq
            self.seq = max(self.seq, seq)
        self.events.append(event)
        self.now_panel.feed(event)
        return True

    def adopt(self, state: dict[str, Any]) -> None:
        self.state = state
        self.seq = int(state.get("seq") or 0)
        self.events.clear()
        self._log_seq = 0
        self.now_panel = view.NowPanel()
        for event in state.get("logTail") or []:
            if isinstance(event, dict):
                self._take(event)
        self.seq = int(state.get("seq") or self.seq)
        self._redraw_log()
        self._dirty = True

    def on_frame(self, frame: SseFrame) -> bool:
        """One SSE frame; False when the stream should be opened afresh (another run is active)."""
        if frame.event == "log":
            data = frame.data
            if isinstance(data, dict) and self._take(data):
                self._pending.append(data)
        elif frame.event == "state":
            self._head = frame  # only the newest is read, at the next redraw
        elif frame.event == "run":
            return False
        return True

    def _merge_head(self) -> None:
        head, self._head = (self._head.data if self._head else None), None
        if isinstance(head, dict):
            self.state = view.merge_head(self.state, head)
            self._dirty = True

    @work(exclusive=True, group="follow")
    async def follow(self) -> None:
        assert self.client is not None
        fresh = True
        while True:
            try:
                if fresh:
                    self.adopt(await self.client.state())
                    self.budget = await self.client.budget()
                    fresh = False
                self.connected, self._dirty = True, True
                async for frame in self.client.events(self.seq):
                    if not self.on_frame(frame):
                        fresh = True
                        break
            except (ApiRefused, OSError, ValueError) as exc:
                self.query_one("#message", Static).update(f"dashboard: {exc}")
            except Exception as exc:  # noqa: BLE001  # httpx's stream errors: reconnect, like the browser
                self.query_one("#message", Static).update(f"dashboard stream ended ({type(exc).__name__})")
            self.connected = False
            self._dirty = True
            await asyncio.sleep(RETRY_SECONDS)

    async def poll_state(self) -> None:
        if self.client is None:
            return
        try:
            self.state = {**self.state, **await self.client.state()}
            self._dirty = True
        except ApiRefused as exc:
            self.query_one("#message", Static).update(f"dashboard: {exc}")

    # ------------------------------------------------------------------ controls
    async def _call(self, what: str, call: Callable[[DashboardClient], Awaitable[Any]]) -> Any:
        if self.client is None:
            self.say("not attached to a run", error=True)
            return None
        try:
            reply = await call(self.client)
        except ApiRefused as exc:
            self.say(f"{what} refused: {exc}", error=True)
            return None
        return reply if reply is not None else {}

    async def action_pause(self) -> None:
        action = "resume" if self.state.get("paused") else "pause"
        reply = await self._call(action, lambda c: c.control(action))
        if reply is not None:
            self.state = {**self.state, "paused": bool(reply.get("paused", action == "pause"))}
            self._dirty = True
            self.say("pause requested: the run pauses after this session" if action == "pause" else "resumed")

    @work(exclusive=True, group="dialog")
    async def action_stop(self) -> None:
        if not await self.push_screen_wait(ConfirmScreen("Stop the run now (the session is ended)?")):
            return
        if await self._call("stop", lambda c: c.control("stop")) is not None:
            self.say("stop requested")

    async def action_abort(self) -> None:
        if await self._call("abort", lambda c: c.control("abort-after-current")) is not None:
            self.say("the run ends after this session")

    @work(exclusive=True, group="dialog")
    async def action_answer(self) -> None:
        questions = [q for q in self.state.get("pendingQuestions") or [] if isinstance(q, dict)]
        if not questions:
            self.say("no question is waiting for an answer")
            return
        answers: list[tuple[str, str]] = []
        for index, question in enumerate(questions):
            answer = await self.push_screen_wait(QuestionScreen(question, index, len(questions)))
            if answer:
                answers.append((str(question.get("question", "")), answer))
        if not answers:
            self.say("nothing answered")
            return
        if await self._call("answer", lambda c: c.answer(answers)) is not None:
            self.say(f"{len(answers)} answer(s) sent")

    @work(exclusive=True, group="dialog")
    async def action_note(self) -> None:
        text = await self.push_screen_wait(LineScreen("A note to the agent (it goes with its next model request):"))
        if text is None:
            return
        if not text.strip():
            self.say("an empty note is not sent: write the note first", error=True)
            return
        reply = await self._call("note", lambda c: c.note(text))
        if reply is not None:
            masked = " (a secret in it was masked)" if reply.get("masked") else ""
            self.say(f"note {reply.get('id', '')} {reply.get('status', 'queued')}{masked}")

    async def action_withdraw(self) -> None:
        queued = [n for n in self.state.get("notes") or [] if n.get("status") == "queued"]
        if not queued:
            self.say("no note is queued to withdraw")
            return
        note_id = str(queued[-1].get("id"))
        if await self._call("withdraw", lambda c: c.withdraw(note_id)) is not None:
            self.say(f"note {note_id} withdrawn")

    @work(exclusive=True, group="dialog")
    async def action_revert(self) -> None:
        raw = await self.push_screen_wait(LineScreen("Revert the work tree to the checkpoint before iteration:"))
        if raw is None:
            return
        if not raw.strip().isdigit() or int(raw) < 1:
            self.say(f"{raw!r} is not an iteration number (1, 2, …)", error=True)
            return
        iteration = int(raw)
        if not await self.push_screen_wait(ConfirmScreen(f"Restore the checkpoint before iteration {iteration}? "
                                                         "Later changes are lost.")):
            return
        reply = await self._call("revert", lambda c: c.revert(iteration))
        if reply is not None:
            self.say(f"reverted to before iteration {iteration}: {len(reply.get('restored') or [])} file(s) "
                     f"restored, {len(reply.get('deleted') or [])} deleted")

    def action_filter(self) -> None:
        self.filter = view.FILTERS[(view.FILTERS.index(self.filter) + 1) % len(view.FILTERS)]
        self._redraw_log()
        self.refresh_view()

    @work(exclusive=True, group="dialog")
    async def action_search(self) -> None:
        text = await self.push_screen_wait(LineScreen("Search the log (empty clears):", self.search))
        if text is not None:
            self.search = text.strip()
            self._redraw_log()
            self.refresh_view()
