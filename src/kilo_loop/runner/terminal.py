"""The process around a direct run: Ctrl+C and SIGTERM, and whether stdin can answer a question."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Callable


def _force_exit(before_exit: Callable[[], None]) -> Callable[..., None]:
    def handler(*_: object) -> None:
        before_exit()  # os._exit skips atexit: give the terminal back first
        os._exit(130)

    return handler


def install_signal_handlers(
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


def stdin_is_tty() -> bool:
    try:
        return os.isatty(sys.stdin.fileno())
    except (AttributeError, OSError, ValueError):
        return False


def stdin_can_answer() -> bool:
    """A terminal, or a pipe or file that scripted answers can come from (not /dev/null, not closed)."""
    if stdin_is_tty():
        return True
    try:
        return not os.path.samefile(f"/proc/self/fd/{sys.stdin.fileno()}", os.devnull)
    except (AttributeError, OSError, ValueError):
        return False
