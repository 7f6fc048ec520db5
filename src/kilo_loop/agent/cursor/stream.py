"""`cursor-agent -p --output-format stream-json` events as AgentEvents (Cursor's documented format).

One JSON object a line: `system/init {session_id, model}`, `user` and `assistant`
`{message: {content: [{type: text, text}]}}`, `tool_call {subtype: started|completed, call_id,
tool_call: {<kind>ToolCall: {args, result: {success | error}}}}` (kinds: shell, read, write,
edit, grep, glob, ls, delete, todo…; a generic `function {name, arguments}` otherwise), and a
final `result {subtype, is_error, result, session_id}`; `usage` is read when present.

A shell call is reported when it *starts*, so the loop's guard can end the session as soon as
a destructive command is announced (Cursor has no pre-tool hook the loop can install); other
tools are reported when they complete.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kilo_loop.agent.claude.stream import claude_tokens
from kilo_loop.agent.ndjson import NdjsonParser, as_dict, as_str
from kilo_loop.agent.protocol import (
    AgentError,
    AgentEvent,
    SessionStarted,
    StepFinished,
    Text,
    TokenUsage,
    ToolUse,
)

_NAMES = {"shellToolCall": "bash", "readToolCall": "read", "writeToolCall": "write", "editToolCall": "edit",
          "grepToolCall": "grep", "globToolCall": "glob", "lsToolCall": "list", "deleteToolCall": "delete",
          "updateTodosToolCall": "todowrite"}


def tool_parts(tool_call: Any) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(tool name, args, result) of a `tool_call` object."""
    raw = as_dict(tool_call)
    for kind, body in raw.items():
        body = as_dict(body)
        if kind == "function":
            arguments = body.get("arguments")
            args = arguments if isinstance(arguments, dict) else {"arguments": as_str(arguments)}
            return as_str(body.get("name")) or "tool", args, as_dict(body.get("result"))
        args = as_dict(body.get("args"))
        if "path" in args and "filePath" not in args:
            args = {**args, "filePath": args["path"]}
        return _NAMES.get(kind, kind.removesuffix("ToolCall") or "tool"), args, as_dict(body.get("result"))
    return "tool", {}, {}


def _outcome(result: dict[str, Any]) -> tuple[str, str, str]:
    """(status, output, error) of a completed call's result."""
    if "error" in result:
        error = as_dict(result.get("error"))
        return "error", "", as_str(error.get("message") or error.get("error") or result.get("error"))
    success = as_dict(result.get("success"))
    exit_code = success.get("exitCode")
    output = as_str(success.get("stdout") or success.get("content") or success.get("output") or "")
    if isinstance(exit_code, int) and exit_code != 0:
        return "error", output, as_str(success.get("stderr")) or output
    return "completed", output, ""


class CursorEventMapper:
    def __init__(self) -> None:
        self.session_id: str | None = None

    def __call__(self, raw: dict[str, Any]) -> Iterator[AgentEvent]:
        session = as_str(raw.get("session_id"))
        if session and session != self.session_id:
            self.session_id = session
            yield SessionStarted(session)
        kind = raw.get("type")
        if kind == "assistant":
            for block in as_dict(raw.get("message")).get("content") or []:
                block = as_dict(block)
                if block.get("type") == "text" and as_str(block.get("text")).strip():
                    yield Text(as_str(block.get("text")))
        elif kind == "tool_call":
            event = self._tool_call(raw)
            if event is not None:
                yield event
        elif kind == "result":
            usage = raw.get("usage")
            yield StepFinished(tokens=claude_tokens(usage) if isinstance(usage, dict) else TokenUsage(),
                               cost=0.0, reason="stop")
            if raw.get("is_error") is True or as_str(raw.get("subtype")) not in ("", "success"):
                yield AgentError(as_str(raw.get("subtype")) or "error", as_str(raw.get("result")) or "cursor-agent failed")

    def _tool_call(self, raw: dict[str, Any]) -> ToolUse | None:
        tool, args, result = tool_parts(raw.get("tool_call"))
        call_id = as_str(raw.get("call_id"))
        subtype = raw.get("subtype")
        if subtype == "started":
            return ToolUse(tool, args, "running", call_id=call_id) if tool == "bash" else None
        if subtype != "completed":
            return None
        status, output, error = _outcome(result)
        if tool == "bash" and status == "completed":
            return None  # already reported when it started
        return ToolUse(tool, args, status, output=output, error=error, call_id=call_id)


class CursorStreamParser(NdjsonParser):
    def __init__(self) -> None:
        super().__init__(CursorEventMapper())
