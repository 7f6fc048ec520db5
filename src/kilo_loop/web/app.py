"""The dashboard application: the page and its assets, the API routers, and error handling
that answers every bad request with a JSON 4xx `{"error": "…"}` (never a stack trace)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import FileResponse, Response
from starlette.staticfiles import StaticFiles

from kilo_loop import __version__
from kilo_loop.errors import KiloLoopError
from kilo_loop.web.context import DashboardContext, json_response
from kilo_loop.web.errors import domain_status
from kilo_loop.web.routes_history import history_router
from kilo_loop.web.routes_launcher import launcher_router
from kilo_loop.web.routes_review import review_router
from kilo_loop.web.routes_run import run_router
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


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(KiloLoopError)
    async def domain_error(_: Request, exc: KiloLoopError) -> Response:
        status, message = domain_status(exc)
        return json_response({"error": message}, status)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> Response:
        return json_response({"error": describe_validation(exc.errors())}, 422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> Response:
        return json_response({"error": str(exc.detail)}, exc.status_code)

    @app.exception_handler(Exception)
    async def internal_error(_: Request, exc: Exception) -> Response:
        log.exception("dashboard request failed")
        return json_response({"error": f"internal error: {type(exc).__name__}"}, 500)


def create_app(ctx: DashboardContext, policy: SecurityPolicy) -> FastAPI:
    app = FastAPI(
        title="kilo-loop dashboard",
        version=__version__,
        docs_url=None,
        redoc_url=None,
        description="Watch and steer a kilo-loop run; start runs from the launcher.",
    )
    _install_error_handlers(app)
    app.include_router(run_router(ctx))
    app.include_router(history_router(ctx))
    app.include_router(launcher_router(ctx))
    app.include_router(review_router(ctx))

    @app.get("/", include_in_schema=False)
    async def index() -> Response:
        return FileResponse(STATIC_DIR / "index.html", headers={"cache-control": "no-store"})

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> Response:
        return FileResponse(STATIC_DIR / "favicon.svg", media_type="image/svg+xml")

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    app.add_middleware(SecurityMiddleware, policy=policy)
    return app
