"""What differs between `kilo run` and `opencode run` (the rest is shared), and their command line."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kilo_loop.agent.protocol import AgentRequest

RuntimeName = Literal["kilo", "opencode"]


@dataclass(frozen=True)
class Runtime:
    name: RuntimeName
    auto_flag: str
    config_env: str
    project_configs: tuple[str, ...]
    env_prefix: str


KILO = Runtime("kilo", "--auto", "KILO_CONFIG_CONTENT", ("kilo.json", ".kilo/kilo.json"), "KILO")
OPENCODE = Runtime(
    "opencode",
    # 1.18 documents --auto and hides --dangerously-skip-permissions; its run handler reads them as one
    # (`auto || yolo || dangerously-skip-permissions`).
    "--auto",
    "OPENCODE_CONFIG_CONTENT",
    ("opencode.json", ".opencode/opencode.json"),
    "OPENCODE",
)
RUNTIMES: dict[RuntimeName, Runtime] = {"kilo": KILO, "opencode": OPENCODE}


def detect_runtime(binary: str, requested: str = "auto") -> Runtime:
    """`auto` picks opencode when the binary's name says so, kilo otherwise."""
    if requested == "kilo":
        return KILO
    if requested == "opencode":
        return OPENCODE
    return OPENCODE if "opencode" in Path(binary).name.lower() else KILO


def build_command(binary: str, runtime: Runtime, request: AgentRequest) -> list[str]:
    command = [binary, "run", "--format", "json"]
    if request.auto_approve:
        command.append(runtime.auto_flag)
    for flag, value in (("--agent", request.agent), ("--model", request.model), ("--variant", request.variant)):
        if value:
            command += [flag, value]
    if request.thinking:
        command.append("--thinking")
    command += ["--title", request.title]
    if request.session_id:
        command += ["--session", request.session_id]
    command.append(request.prompt)
    return command


def cli_warnings(stderr: str) -> list[str]:
    """Warnings the CLI printed on stderr (kilo marks them with `!`), e.g. an unknown --agent."""
    lines = (line.strip() for line in stderr.splitlines())
    return [line.lstrip("! ").strip() for line in lines if line.startswith("!") or line.lower().startswith("warn")]
