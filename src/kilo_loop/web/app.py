"""The dashboard application: the page and its assets, the API routers, and error handling
that answers every bad request with a JSON 4xx `{"error": "…"}` (never a stack trace)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import FileResponse, Response
from starlette.staticfiles import StaticFiles

from kilo_loop import __version__
from kilo_loop.errors import KiloLoopError
from kilo_loop.web import routes_history, routes_launcher, routes_review, routes_run
from kilo_loop.web.context import DashboardContext, json_response
from kilo_loop.web.errors import domain_status
from kilo_loop.web.security import SecurityMiddleware, SecurityPolicy

STATIC_DIR = Path(__file__).parent / "static"
log = logging.getLogger(__name__)


def describe_validation(errors: Any) -> str:
    """`body.iterations: Input should be a valid integer; query.limit: …` from pydantic's errors."""
    parts = []
    for error in list(errors)[:5]:
        where = ".".join(
            str(part) for part in error.get("loc", ()) if part != "body" or len(error["loc"]) == 1
        )
        parts.append(f"{where or 'request'}: {error.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


async def domain_error(_: Request, exc: Exception) -> Response:
    """Every KiloLoopError a route lets through, answered from one table (`web/errors.py`)."""
    assert isinstance(exc, KiloLoopError)
    status, message = domain_status(exc)
    return json_response({"error": message}, status)


async def validation_error(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    return json_response({"error": describe_validation(exc.errors())}, 422)


async def http_error(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    return json_response({"error": str(exc.detail)}, exc.status_code)


async def internal_error(_: Request, exc: Exception) -> Response:
    log.exception("dashboard request failed")
    return json_response({"error": f"internal error: {type(exc).__name__}"}, 500)


pages = APIRouter(include_in_schema=False)


@pages.get("/")
async def index() -> Response:
    return FileResponse(STATIC_DIR / "index.html", headers={"cache-control": "no-store"})


@pages.get("/favicon.ico")
async def favicon() -> Response:
    return FileResponse(STATIC_DIR / "favicon.svg", media_type="image/svg+xml")


def create_app(ctx: DashboardContext, policy: SecurityPolicy) -> FastAPI:
    """The app for one dashboard: its routes are module-level and reach `ctx` through `deps`."""
    app = FastAPI(
        title="kilo-loop dashboard",
        version=__version__,
        docs_url=None,
        redoc_url=None,
        description="Watch and steer a kilo-loop run; start runs from the launcher.",
        exception_handlers={
            KiloLoopError: domain_error,
            RequestValidationError: validation_error,
            StarletteHTTPException: http_error,
            Exception: internal_error,
        },
    )
    app.state.dashboard = ctx
    for router in (routes_run.router, routes_history.router, routes_launcher.router, routes_review.router, pages):
        app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    app.add_middleware(SecurityMiddleware, policy=policy)
    return app
