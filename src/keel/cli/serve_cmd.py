"""`keel serve`: the HTTP API and the dashboard over one brain, served by uvicorn.

One process holds one Engine (watching the brain, so an edited file reaches the next
request). A database Keel has never recorded a turn in gets the brain's seed first
(`seed.yaml`, once), so the dashboard opens on real turns. Binds to loopback unless told
otherwise; `--token` (or KEEL_SERVE_TOKEN) asks every `/v1` route and the dashboard for it.
A request's body may hold `--max-body` bytes (1 MiB by default); a larger one is 413.

The server hosts the runs worker (`keel.web.dbos_runs`): from start-up to shutdown the
brain's heartbeats fire on their schedules, the runs of dead processes are taken over,
and runs start, fire and resume over HTTP in this process. `--no-worker` serves without
it (no runs here). A process that ends while one of its runs waits for a card ends at
once, as `keel worker` does: the run waits in the journal for whoever decides the card.
FastAPI, uvicorn and DBOS are imported only when the command runs.
"""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from keel.cli.options import BrainArg, DbOpt
from keel.cli.root import app, fail
from keel.cli.status import EXIT_FAILED
from keel.errors import KeelError
from keel.web.limits import BODY_BYTES, MAX_BODY_BYTES

LOOPBACK = ("127.0.0.1", "::1", "localhost")


@app.command()
def serve(
    brain: BrainArg,
    db: DbOpt = None,
    host: Annotated[str, typer.Option("--host", help="The address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", help="The port to listen on.", min=0, max=65535)
    ] = 8000,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="Who answers turns: openai:NAME, anthropic:NAME, "
            "openai-compatible:NAME@URL, scripted:FILE or none (default: none unless "
            "OPENAI_API_KEY or ANTHROPIC_API_KEY is set).",
            show_default=False,
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="KEEL_SERVE_TOKEN",
            help="Ask every /v1 route and the dashboard for this bearer token.",
            show_default=False,
            show_envvar=True,
        ),
    ] = None,
    seed: Annotated[
        bool,
        typer.Option("--seed/--no-seed", help="Play the brain's seed.yaml into a new database."),
    ] = True,
    worker: Annotated[
        bool,
        typer.Option(
            "--worker/--no-worker",
            help="Host the runs worker: heartbeats on their schedules, runs over HTTP, the "
            "runs of dead processes taken over (needs a database file or PostgreSQL).",
        ),
    ] = True,
    access_log: Annotated[
        bool, typer.Option("--access-log", help="Log every request (uvicorn's access log).")
    ] = False,
    max_body: Annotated[
        int,
        typer.Option(
            "--max-body",
            help="The bytes a request's body may hold; a larger one is answered 413.",
            min=BODY_BYTES.low,
            max=BODY_BYTES.high,
        ),
    ] = MAX_BODY_BYTES,
    telegram_secret: Annotated[
        str | None,
        typer.Option(
            "--telegram-secret",
            envvar="KEEL_TELEGRAM_SECRET",
            help="Answer Telegram's webhooks at POST /telegram/BOT, signed with this secret "
            "(the bot's token from KEEL_TELEGRAM_TOKEN_BOT or KEEL_TELEGRAM_TOKEN).",
            show_default=False,
            show_envvar=True,
        ),
    ] = None,
    telegram_api_url: Annotated[
        str | None,
        typer.Option("--telegram-api-url", help="Another Bot API server for the webhooks' bots."),
    ] = None,
) -> None:
    """Serve the HTTP API and the dashboard (http://HOST:PORT/)."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("keel.serve")
    log.info("starting: brain %s", brain)
    try:
        import uvicorn

        from keel.cli.serve_start import AnnouncingServer, seed_progress
        from keel.web.runs import NoRuns
        from keel.web.serving import build_service
    except ImportError as exc:
        fail(
            f"keel serve needs the web extra ({exc.name} is missing): "
            "pip install 'keel-engine[web]'"
        )
    # The provider SDKs' HTTP client logs every request at INFO (a scripted model's to a
    # made-up host): the run's steps already say what was asked; keep its warnings only.
    for noisy in ("httpx", "httpx2"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        with seed_progress(log) as progress:
            svc, application = build_service(
                brain,
                db,
                model=model,
                token=token,
                seed=seed,
                worker=worker,
                max_body=max_body,
                telegram_secret=telegram_secret,
                telegram_api_url=telegram_api_url,
                progress=progress,
            )
    except KeelError as exc:
        fail(exc)
    log.info("seed: %s", svc.seeded.note)
    if host not in LOOPBACK and svc.token is None:
        log.warning("listening on %s without a token: anyone who reaches it can use it", host)
    if isinstance(svc.runs, NoRuns):  # a server that cannot host the worker says why
        log.log(logging.WARNING if worker else logging.INFO, "runs: %s", svc.runs.reason)
    config = uvicorn.Config(
        application, host=host, port=port, access_log=access_log, log_level="info"
    )
    server = AnnouncingServer(
        config, lambda url: log.info("dashboard: %s  ·  model: %s", url, svc.model_spec)
    )
    try:
        server.run()
    except KeyboardInterrupt:  # Ctrl-C, raised again once the server shut down cleanly
        pass
    except SystemExit:  # uvicorn's own exit when it cannot bind: said below, in our words
        if server.started:
            raise
    finally:
        svc.engine.close()
    if not server.started:  # the port taken, or start-up failed: uvicorn said why above
        fail(
            f"the server did not start on {host}:{port} (see the error above) — if the port "
            "is taken, pick another with --port",
            code=EXIT_FAILED,
        )
