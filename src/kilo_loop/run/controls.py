"""The operator's controls by name: one wire name per command, shared by the dashboard
(`POST /api/control`), the terminal, the inbox of a steered run (inbox.jsonl, the fleet's
`POST /api/runs/{id}/control`) and the `control` events of events.jsonl.

The fleet and the inbox were born with two names of their own (`abort-after-session`,
`shared-context`); they stay accepted as aliases of the one name, so an older sender still works.
"""

from __future__ import annotations

from enum import StrEnum

# Set in the environment of a run that a parent steers through its inbox (`--parallel`, a fleet worker).
INBOX_ENV = "KILO_LOOP_INBOX"


class ControlAction(StrEnum):
    PAUSE = "pause"
    RESUME = "resume"
    ABORT_AFTER_CURRENT = "abort-after-current"
    STOP = "stop"
    SET_SHARED_CONTEXT = "set-shared-context"
    SET_PROMPT_EXTRA = "set-prompt-extra"
    ANSWER = "answer"
    NOTE = "note"
    WITHDRAW_NOTE = "withdraw-note"

    @classmethod
    def named(cls, name: object) -> ControlAction:
        """The action a wire name (or one of its aliases) means; ValueError names the known ones."""
        if isinstance(name, str):
            action = _BY_NAME.get(name)
            if action is not None:
                return action
        raise ValueError(f"unknown action {name!r}; expected one of {', '.join(CONTROL_NAMES)}")


ALIASES: dict[str, ControlAction] = {
    "abort-after-session": ControlAction.ABORT_AFTER_CURRENT,
    "shared-context": ControlAction.SET_SHARED_CONTEXT,
}
_BY_NAME: dict[str, ControlAction] = {**{action.value: action for action in ControlAction}, **ALIASES}
# What the dashboard's control endpoint takes (answers, notes and reverts have endpoints of their own).
CONTROL_NAMES: tuple[str, ...] = tuple(
    action.value for action in ControlAction
    if action not in (ControlAction.ANSWER, ControlAction.NOTE, ControlAction.WITHDRAW_NOTE))
