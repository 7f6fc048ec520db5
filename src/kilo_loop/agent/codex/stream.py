"""`codex exec --json` events as AgentEvents.

One JSON object a line: `thread.started {thread_id}`, `turn.started`, `item.started` /
`item.completed {item: {id, type, …}}`, `turn.completed {usage}`, `turn.failed {error}`,
`error {message}`. Item types: `agent_message {text}`, `reasoning {text}`,
`command_execution {command, aggregated_output, exit_code, status}`,
`file_change {changes: [{path, kind}], status}`, `mcp_tool_call {server, tool, arguments}`,
`web_search {query}`, `todo_list {items}`, and `error {message}` — a non-fatal notice
(kept as a warning, not an error).

A tool call becomes one `ToolUse` when its item completes, as kilo reports them. Codex
reports tokens per turn (`input_tokens` includes the cached ones) and no cost.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from kilo_loop.agent.ndjson import NdjsonParser, as_dict, as_int, as_str
from kilo_loop.agent.protocol import (
    AgentError,
    AgentEvent,
    Reasoning,
    SessionStarted,
    StepFinished,
    Text,
    TokenUsage,
    ToolUse,
)

# What Codex says once its own retries of a 5xx/overload are spent (it names no status code).
_TRANSIENT = re.compile(r"high demand|temporary errors?|try again later|overloaded", re.IGNORECASE)
# Notices the loop causes itself (it passes --dangerously-bypass-hook-trust for its own guard hook).
_OWN_NOTICES = ("--dangerously-bypass-hook-trust",)


def codex_tokens(usage: Any) -> TokenUsage:
    raw = as_dict(usage)
    cached = as_int(raw.get("cached_input_tokens"))
    prompt = as_int(raw.get("input_tokens"))
    output = as_int(raw.get("output_tokens"))
    reasoning = as_int(raw.get("reasoning_output_tokens"))
    return TokenUsage(total=prompt + output, input=max(0, prompt - cached), output=output, reasoning=reasoning,
                      cache_read=cached, cache_write=as_int(raw.get("cache_write_input_tokens")))


def _tool(item: dict[str, Any]) -> ToolUse | None:
    kind = item.get("type")
    status = as_str(item.get("status"))
    failed = status in ("failed", "declined")
    call_id = as_str(item.get("id"))
    if kind == "command_execution":
        output = as_str(item.get("aggregated_output"))
        exit_code = item.get("exit_code")
        failed = failed or (isinstance(exit_code, int) and exit_code != 0)
        return ToolUse("bash", {"command": as_str(item.get("command"))}, "error" if failed else "completed",
                       output=output, error=output if failed else "", call_id=call_id)
    if kind == "file_change":
        paths = [as_str(as_dict(change).get("path")) for change in item.get("changes") or []]
        return ToolUse("apply_patch", {"filePath": ", ".join(paths), "paths": paths},
                       "error" if failed else "completed", call_id=call_id)
    if kind == "mcp_tool_call":
        arguments = item.get("arguments")
        error = as_str(as_dict(item.get("error")).get("message"))
        return ToolUse(f"{as_str(item.get('server'))}.{as_str(item.get('tool'))}",
                       arguments if isinstance(arguments, dict) else {}, "error" if failed or error else "completed",
                       error=error, call_id=call_id)
    if kind == "web_search":
        return ToolUse("websearch", {"query": as_str(item.get("query"))}, "completed", call_id=call_id)
    if kind == "todo_list":
        return ToolUse("todowrite", {"items": item.get("items") or []}, "completed", call_id=call_id)
    return None


def _error(name: str, message: str) -> AgentError:
    return AgentError(name, message, retryable=True if _TRANSIENT.search(message) else None)


class CodexEventMapper:
    def __init__(self) -> None:
        self.warnings: list[str] = []

    def __call__(self, raw: dict[str, Any]) -> Iterator[AgentEvent]:
        kind = raw.get("type")
        if kind == "thread.started" and as_str(raw.get("thread_id")):
            yield SessionStarted(as_str(raw.get("thread_id")))
        elif kind == "item.completed":
            yield from self._item(as_dict(raw.get("item")))
        elif kind == "turn.completed":
            yield StepFinished(tokens=codex_tokens(raw.get("usage")), cost=0.0, reason="stop")
        elif kind == "turn.failed":
            yield _error("TurnFailed", as_str(as_dict(raw.get("error")).get("message")) or "the turn failed")
        elif kind == "error":
            yield _error("Error", as_str(raw.get("message")) or "codex reported an error")

    def _item(self, item: dict[str, Any]) -> Iterator[AgentEvent]:
        kind = item.get("type")
        text = as_str(item.get("text"))
        if kind == "agent_message" and text.strip():
            yield Text(text)
        elif kind == "reasoning" and text.strip():
            yield Reasoning(text)
        elif kind == "error":
            message = as_str(item.get("message"))
            if message and not any(own in message for own in _OWN_NOTICES):
                self.warnings.append(message)
        else:
            tool = _tool(item)
            if tool is not None:
                yield tool


class CodexStreamParser(NdjsonParser):
    def __init__(self) -> None:
        self.codex = CodexEventMapper()
        super().__init__(self.codex)
