"""Map the server's bus events (`GET /event`) and message list onto the loop's AgentEvents.

A server part is the same object `<cli> run --format json` prints inside its
`part` field, so each finished part is handed to the NDJSON parser's own
`event_from_object`: the console, reports and dashboard see the very same
ToolUse / Text / StepFinished / AgentError whichever transport ran the turn.

`TurnMapper` follows one turn of one session. `feed()` takes one decoded
frame and returns the AgentEvents it completes plus the signals the backend
acts on (a permission or question request, the turn going busy or idle).
SSE delivery is best effort, so at the end of the turn `reconcile()` takes
`GET /session/{id}/message` and returns what the stream dropped; every part
is emitted once, by part id.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kilo_loop.agent.kilo.stream import event_from_object
from kilo_loop.agent.protocol import AgentError, AgentEvent, PromptCarried

_PART_KINDS = {"tool": "tool_use", "text": "text", "reasoning": "reasoning", "step-finish": "step_finish"}
_FINAL_TOOL_STATES = ("completed", "error")


@dataclass(frozen=True)
class PermissionAsk:
    """`permission.asked`: the CLI waits for the loop's reply before the tool runs."""

    id: str
    session_id: str
    permission: str
    patterns: tuple[str, ...]
    metadata: dict[str, Any]
    call_id: str = ""

    @property
    def command(self) -> str:
        value = self.metadata.get("command")
        return value if isinstance(value, str) else ""


@dataclass(frozen=True)
class QuestionItem:
    question: str
    header: str = ""
    options: tuple[str, ...] = ()
    multiple: bool = False


@dataclass(frozen=True)
class QuestionAsk:
    """`question.asked`: the CLI's own question tool waits for an answer."""

    id: str
    session_id: str
    questions: tuple[QuestionItem, ...]


@dataclass(frozen=True)
class TurnBusy:
    pass


@dataclass(frozen=True)
class TurnIdle:
    pass


Signal = PermissionAsk | QuestionAsk | TurnBusy | TurnIdle


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def permission_ask(props: dict[str, Any]) -> PermissionAsk | None:
    request_id = _str(props.get("id"))
    if not request_id:
        return None
    patterns = props.get("patterns")
    return PermissionAsk(
        id=request_id,
        session_id=_str(props.get("sessionID")),
        permission=_str(props.get("permission")),
        patterns=tuple(p for p in patterns if isinstance(p, str)) if isinstance(patterns, list) else (),
        metadata=_dict(props.get("metadata")),
        call_id=_str(_dict(props.get("tool")).get("callID")),
    )


def question_ask(props: dict[str, Any]) -> QuestionAsk | None:
    request_id = _str(props.get("id"))
    raw = props.get("questions")
    if not request_id or not isinstance(raw, list):
        return None
    items = []
    for entry in raw:
        entry = _dict(entry)
        options = entry.get("options")
        labels = tuple(_str(_dict(o).get("label")) for o in options) if isinstance(options, list) else ()
        items.append(QuestionItem(_str(entry.get("question")), _str(entry.get("header")),
                                  tuple(label for label in labels if label), bool(entry.get("multiple"))))
    return QuestionAsk(request_id, _str(props.get("sessionID")), tuple(items))


def _session_of(props: dict[str, Any]) -> str:
    for holder in (props, _dict(props.get("part")), _dict(props.get("info"))):
        session = _str(holder.get("sessionID"))
        if session:
            return session
    return ""


@dataclass
class TurnMapper:
    session_id: str
    prompt: str = ""
    thinking: bool = False
    known_messages: frozenset[str] = frozenset()  # messages that existed before this turn
    roles: dict[str, str] = field(default_factory=dict)
    tools: dict[str, str] = field(default_factory=dict)  # callID -> tool name, for the broker
    busy: bool = False
    # Text injected into the live session (a note) -> its token; the user message that holds it -> the token.
    injected: dict[str, str] = field(default_factory=dict)
    _injected_messages: dict[str, str] = field(default_factory=dict)
    _emitted: set[str] = field(default_factory=set)
    _errors: int = 0

    # ------------------------------------------------------------------ the stream
    def feed(self, frame: dict[str, Any]) -> list[AgentEvent | Signal]:
        kind = _str(frame.get("type"))
        props = _dict(frame.get("properties"))
        if kind == "permission.asked":
            ask = permission_ask(props)
            return [ask] if ask else []  # brokered for every session: a subagent's call waits too
        if kind == "question.asked":
            question = question_ask(props)
            return [question] if question else []
        if _session_of(props) != self.session_id:
            return []
        if kind == "message.updated":
            info = _dict(props.get("info"))
            self.roles[_str(info.get("id"))] = _str(info.get("role"))
            carried = self._carried(info)
            return [carried] if carried else []
        elif kind == "message.part.updated":
            part = _dict(props.get("part"))
            self._note_injected_part(part)
            event = self._part(part)
            return [event] if event else []
        elif kind == "session.error":
            return [self._error(props.get("error"))]
        elif kind == "session.status":
            return self._status(_str(_dict(props.get("status")).get("type")))
        elif kind == "session.idle":
            return self._status("idle")
        return []

    @property
    def awaiting_injection(self) -> bool:
        """Injected text no model request has carried yet: the turn is not over."""
        return bool(self.injected)

    def _note_injected_part(self, part: dict[str, Any]) -> None:
        token = self.injected.get(_str(part.get("text"))) if part.get("type") == "text" else None
        if token is not None:
            self._injected_messages[_str(part.get("messageID"))] = token

    def _carried(self, info: dict[str, Any]) -> PromptCarried | None:
        """The first assistant message answering an injected user message: the request that carries it."""
        if _str(info.get("role")) != "assistant":
            return None
        token = self._injected_messages.pop(_str(info.get("parentID")), None)
        if token is None:
            return None
        self.injected = {text: t for text, t in self.injected.items() if t != token}
        return PromptCarried(token)

    def _status(self, status: str) -> list[AgentEvent | Signal]:
        if status in ("busy", "retry"):
            self.busy = True
            return [TurnBusy()]
        if status == "idle" and self.busy:
            return [TurnIdle()]
        return []

    def _error(self, error: Any) -> AgentError:
        self._errors += 1
        event = event_from_object({"type": "error", "error": error})
        assert isinstance(event, AgentError)
        return event

    def _part(self, part: dict[str, Any], role: str = "") -> AgentEvent | None:
        part_id, kind = _str(part.get("id")), _str(part.get("type"))
        if kind == "tool":
            self.tools[_str(part.get("callID"))] = _str(part.get("tool"))
        if not part_id or part_id in self._emitted or not self._is_final(part, kind):
            return None
        if (role or self.roles.get(_str(part.get("messageID")))) == "user":
            return None
        self._emitted.add(part_id)
        return event_from_object({"type": _PART_KINDS[kind], "part": part})

    def _is_final(self, part: dict[str, Any], kind: str) -> bool:
        if kind == "tool":
            return _str(_dict(part.get("state")).get("status")) in _FINAL_TOOL_STATES
        if kind in ("text", "reasoning"):
            text = _str(part.get("text"))
            finished = "end" in _dict(part.get("time"))
            wanted = kind == "text" or self.thinking
            return wanted and finished and not part.get("synthetic") and bool(text.strip()) and text != self.prompt
        return kind == "step-finish"

    # ------------------------------------------------------------------ the message list
    def reconcile(self, messages: Iterable[Any]) -> list[AgentEvent]:
        """Events of this turn's messages that the stream did not deliver, in message order."""
        missed: list[AgentEvent] = []
        for message in messages:
            info = _dict(_dict(message).get("info"))
            message_id = _str(info.get("id"))
            if message_id in self.known_messages:
                continue
            role = self.roles[message_id] = _str(info.get("role"))
            for part in _dict(message).get("parts") or []:
                event = self._part(_dict(part), role)
                if event is not None:
                    missed.append(event)
            if info.get("role") == "assistant" and info.get("error") and not self._errors:
                missed.append(self._error(info.get("error")))
        return missed
