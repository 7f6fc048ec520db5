"""Wire a run together: project, goal, backend, run directory (new or resumed), the event bus and
its subscribers, then drive the orchestrator on one event loop — one named step per module."""

from __future__ import annotations

from kilo_loop.runner.backends import agent_policy as agent_policy
from kilo_loop.runner.backends import make_backend as make_backend
from kilo_loop.runner.backends import serve_backend_of as serve_backend_of
from kilo_loop.runner.direct import Attach as Attach
from kilo_loop.runner.direct import attach_terminal as attach_terminal
from kilo_loop.runner.direct import execute_run as execute_run
from kilo_loop.runner.errors import AllStagesDone as AllStagesDone
from kilo_loop.runner.errors import SetupError as SetupError
from kilo_loop.runner.handle import RunHandle as RunHandle
from kilo_loop.runner.plan import RunPlan as RunPlan
from kilo_loop.runner.plan import plan_run as plan_run
from kilo_loop.runner.run_ids import new_run_id as new_run_id
from kilo_loop.runner.setup import initial_state as initial_state
from kilo_loop.runner.setup import prepare_run as prepare_run
from kilo_loop.runner.setup import read_prompt_extra as read_prompt_extra
from kilo_loop.runner.setup import resolve_goal as resolve_goal
from kilo_loop.runner.setup import resolve_project as resolve_project
from kilo_loop.runner.setup import resumed_state as resumed_state
