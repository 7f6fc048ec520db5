"""The serve transport: kilo / opencode driven through their server API (`<cli> serve`)."""

from kilo_loop.agent.serve.backend import ServeBackend

__all__ = ["ServeBackend"]
