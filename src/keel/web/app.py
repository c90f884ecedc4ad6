"""`create_app`: the ASGI application of `keel serve` — the API, the dashboard, the health
check and the OpenAPI document (`/openapi.json`).

The app holds one `Service` (engine, model, runs, token) in `app.state.service`; routes
read it per request. Its lifespan opens the runs backend at start-up and closes it at
shutdown (the backend of `keel serve` hosts the runs worker). Nothing here opens a socket:
`keel serve` hands the app to uvicorn, and tests call it through the framework's test
client (entered as a context manager, which runs the lifespan).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles

from keel import __version__
from keel.web import api, api_runs, api_widgets, errors, forms, pages
from keel.web.auth import TokenGate
from keel.web.errors import KeelJSON
from keel.web.intake import BodyLimit
from keel.web.service import Service

DESCRIPTION = """\
Keel's turns, chats, reports and runs over HTTP: each route does what the `keel` command
of the same name does, and answers with what that command prints with `--json`.

Errors: 409 `{"refused": reason}` for a refusal, 409 `{"overflow", "fit"}` for a turn that
does not fit, 413 for a body larger than the server's bound (1 MiB unless `keel serve
--max-body` says otherwise), 422 for a body that is not JSON or not valid (naming the
field) or a request that cannot be done, 404 for a missing thing, 501 when this server
runs no runs, 503 when the database cannot be used or the runs worker stopped. With `keel
serve --token`, every `/v1` route needs `Authorization: Bearer <token>`.
"""


async def _sign_in(_: Request, __: Exception) -> RedirectResponse:
    return RedirectResponse("/login", status_code=303)


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Open the service's runs backend while the application runs (off the event loop:
    launching a worker blocks for seconds)."""
    held: Service = app.state.service
    runs = held.runs  # the one opened is the one closed, whatever replaces it meanwhile
    await anyio.to_thread.run_sync(runs.open)
    try:
        yield
    finally:
        await anyio.to_thread.run_sync(runs.close)


def create_app(svc: Service) -> FastAPI:
    """The application over one `Service`."""
    app = FastAPI(
        lifespan=_lifespan,
        title="Keel",
        version=__version__,
        description=DESCRIPTION,
        default_response_class=KeelJSON,
        # Swagger UI and ReDoc load their scripts from a CDN; the dashboard works offline,
        # so the document is served as JSON only.
        docs_url=None,
        redoc_url=None,
    )
    app.state.service = svc
    # The last added runs first: a request without the token is refused before its body is
    # counted, and a body too large before anything parses it.
    app.add_middleware(BodyLimit)
    app.add_middleware(TokenGate)
    errors.install(app)
    app.add_exception_handler(pages.SignIn, _sign_in)

    @app.get("/healthz", summary="Liveness: the server answers; its brain, model and runs")
    def healthz(request: Request) -> dict[str, Any]:
        held: Service = request.app.state.service
        brain = held.brain()
        return {
            "ok": True,
            "brain": brain.manifest.name or brain.root.name,
            "skipped_files": len(brain.skips),
            "model": held.model_spec,
            "runs": held.runs.unavailable() is None,
        }

    @app.post("/telegram/{bot}", include_in_schema=False)
    async def telegram_webhook(bot: str, request: Request) -> KeelJSON:
        """One Telegram update, signed with the server's secret (`keel.telegram.webhook`)."""
        held: Service = request.app.state.service
        if held.telegram is None:
            off = "Telegram webhooks are off — start keel serve with --telegram-secret"
            return KeelJSON({"error": off}, status_code=404)
        secret = request.headers.get("X-Telegram-Bot-Api-Secret-Token")
        status, answer = await held.telegram.receive(bot, secret, await request.body())
        return KeelJSON(answer, status_code=status)

    app.include_router(api.router)
    app.include_router(api_runs.router)
    app.include_router(api_widgets.router)
    app.include_router(forms.router)
    app.include_router(pages.router)
    app.mount("/static", StaticFiles(directory=pages.HERE / "static"), name="static")
    return app
