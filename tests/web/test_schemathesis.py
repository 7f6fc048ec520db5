"""Schemathesis against the dashboard's OpenAPI schema, calling a running server: no request,
valid or not, gets a 5xx.

The schema is built from the app at import time (schemathesis parametrizes at collection);
`test_the_served_schema_is_the_one_tested` checks the running server's /openapi.json is the same.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from kilo_loop.redact import Redactor
from kilo_loop.settings import load_settings
from kilo_loop.web.app import create_app
from kilo_loop.web.context import DashboardContext
from kilo_loop.web.controller import RunController
from kilo_loop.web.security import SecurityPolicy
from kilo_loop.web.sse import EventHub
from tests.web.support import ServerProcess, git_env, make_project, start_server


def dashboard_openapi() -> dict[str, Any]:
    project = Path(tempfile.gettempdir())
    base = load_settings({}, None)
    hub = EventHub()
    ctx = DashboardContext(project, base, RunController(project, base, hub, lambda: True), hub, Redactor())
    return create_app(ctx, SecurityPolicy(frozenset())).openapi()


SPEC = dashboard_openapi()
# The event stream never ends by design; it has its own tests (test_sse.py).
schema = schemathesis.openapi.from_dict(SPEC).exclude(path="/api/events")


@pytest.fixture(scope="module")
def api_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("schemathesis")
    env = git_env(root)
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        project = make_project(root / "repo")
    server = start_server(project, root / "server.log", {**env, "KILO_LOOP_DRY_RUN_DELAY": "0.01"})
    yield server
    server.stop()


def test_the_served_schema_is_the_one_tested(api_server: ServerProcess) -> None:
    assert httpx.get(f"{api_server.url}/openapi.json", headers=api_server.auth).json() == SPEC


@schema.parametrize()
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_no_server_errors(case: schemathesis.Case[Any], api_server: ServerProcess) -> None:
    case.call_and_validate(base_url=api_server.url, headers=api_server.auth, checks=[not_a_server_error])


def test_the_server_survived(api_server: ServerProcess) -> None:
    assert httpx.get(f"{api_server.url}/api/state", headers=api_server.auth).status_code == 200
    assert "Traceback" not in api_server.output()
