"""A direct run from the command line: the terminal's keys, typed answers and signals attached, driven
to its end."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kilo_loop.loop.commands import (
    StopNow,
)
from kilo_loop.run.events import RunEvent, StatusChanged
from kilo_loop.run.state import RunState
from kilo_loop.runner.handle import RunHandle
from kilo_loop.runner.plan import RunPlan
from kilo_loop.runner.terminal import install_signal_handlers
from kilo_loop.ui.terminal import TerminalInput


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
    remove_signals = install_signal_handlers(lambda: handle.send(StopNow()), say, before_exit)

    def detach() -> None:
        remove_signals()
        terminal.stop()

    return detach


Attach = Callable[[RunHandle], Callable[[], None]]


async def execute_run(plan: RunPlan, view: Callable[[RunEvent], None], say: Callable[[str], None],
                      attach: Sequence[Attach] = ()) -> RunState:
    """A direct run from the command line: console view and terminal controls attached, and whatever
    else steers it (`attach`: each returns its detach function)."""
    handle = plan.handle()
    handle.bus.subscribe(view)
    detachers = [attach_terminal(handle, say), *(hook(handle) for hook in attach)]
    try:
        return await handle.run()
    finally:
        for detach in reversed(detachers):
            detach()
