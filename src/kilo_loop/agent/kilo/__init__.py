"""kilo and opencode: the `run --format json` backend, its stream, its inline config."""

from kilo_loop.agent.kilo.backend import KiloBackend
from kilo_loop.agent.kilo.runtime import KILO, OPENCODE, RUNTIMES, Runtime, detect_runtime

__all__ = ["KILO", "OPENCODE", "RUNTIMES", "KiloBackend", "Runtime", "detect_runtime"]
