"""The handoff packet between sessions: the agent leaves `.kilocode-loop/handoff.md`; the loop
moves it into the run directory (redacted) so a crash or a kill -9 between iterations loses
nothing, and the next fresh session's prompt takes it from there. The orchestrator never
touches the files itself."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kilo_loop.loop.prompt import clip_handoff
from kilo_loop.run.files import write_text_atomic


class HandoffStore:
    def __init__(self, agent_file: Path, pending_file: Path, redact: Callable[[str], str]) -> None:
        self.agent_file = agent_file  # what the agent writes, in the project
        self.pending_file = pending_file  # what the next fresh session gets, in the run directory
        self._redact = redact

    def collect(self) -> bool:
        """Move the agent's packet (if it left one) to the pending slot; True when it did."""
        text = _read(self.agent_file)
        self.agent_file.unlink(missing_ok=True)
        if text is None or not text.strip():
            return False
        self.put(text)
        return True

    def put(self, text: str) -> None:
        """A packet the loop wrote itself (e.g. when it starts a fresh session on its own)."""
        write_text_atomic(self.pending_file, self._redact(text))

    def take(self) -> str | None:
        """The packet for the next fresh session (pending first, else one the agent just left), clipped;
        both files are gone afterwards."""
        text = _read(self.pending_file)
        if text is None:
            text = _read(self.agent_file)
            text = self._redact(text) if text is not None else None
        self.discard()
        if not text or not text.strip():
            return None
        return clip_handoff(text)

    def drop_agent_file(self) -> None:
        """A continued (shared) session needs no packet: the agent's file goes, a pending one stays."""
        self.agent_file.unlink(missing_ok=True)

    def discard(self) -> None:
        self.pending_file.unlink(missing_ok=True)
        self.agent_file.unlink(missing_ok=True)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
