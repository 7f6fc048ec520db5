"""Handing the work over: the loop (never the agent) commits each finished stage, on the user's branch
(`--finish commit`) or on a branch of the run's own (`--finish branch`)."""

from kilo_loop.finish.finisher import StageFinisher, build_finisher
from kilo_loop.finish.handover import ForgeOptions

__all__ = ["ForgeOptions", "StageFinisher", "build_finisher"]
