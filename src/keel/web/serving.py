"""Building what `keel serve` serves: the Engine, the model, the seed, the runs, the app.

Kept apart from the command so tests and other hosts build the same service: one Engine
watching the brain, the model from `--model` (else the brain's `model.name` when it is a
spec, else a provider whose key is set, else none), the seed played into a new database,
the runs backend (`worker=True`: runs on `keel.runs`, with the worker hosted by the app's
lifespan — `keel.web.dbos_runs`), and the application over all of it.

The seed's turns are played here, before the application exists; its runs start in the
app's lifespan, once the hosted worker is up and before the first request. A server
without that worker says once why it skips them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from fastapi import FastAPI

from keel.errors import UsageError
from keel.runtime.engine import Engine
from keel.runtime.model_specs import build_model, default_model, parse_model
from keel.web.app import create_app
from keel.web.limits import MAX_BODY_BYTES
from keel.web.runs import RunsBackend
from keel.web.seed import Claimed, Progress, play_runs, seed_once, skip_runs
from keel.web.service import Seeded, Service


def build_service(
    brain: str | Path,
    db: str | None = None,
    *,
    model: str | None = None,
    token: str | None = None,
    seed: bool = True,
    runs: RunsBackend | None = None,
    worker: bool = False,
    env: Mapping[str, str] | None = None,
    max_body: int = MAX_BODY_BYTES,
    telegram_secret: str | None = None,
    telegram_api_url: str | None = None,
    progress: Progress | None = None,
) -> tuple[Service, FastAPI]:
    """The service and its application; the caller closes `service.engine` when done.

    `runs` is the runs backend to serve; without one, `worker=True` serves runs on
    `keel.runs` and hosts their worker while the application runs (runs answer with the
    server's `model`, when one is named), and `worker=False` serves none. `max_body` is
    the bytes a request's body may hold (413 past it). With a `telegram_secret`, the
    server answers Telegram's webhooks at `POST /telegram/{bot}` (`keel.telegram.webhook`,
    on the Bot API server at `telegram_api_url` when given). `progress` is told each seed
    step played, as (played, of).

    Raises `UsageError` for a brain that is not one or a model that cannot be built, and
    `StoreError` for a database that cannot be used.
    """
    environ = os.environ if env is None else env
    engine = Engine(brain, db, watch=True)
    try:
        choice = (
            parse_model(model)
            if model is not None
            else default_model(engine.brain.manifest.model.name, environ)
        )
        client = build_model(choice, environ)
        engine.store.migrate()
        claimed = (
            seed_once(engine, progress=progress)
            if seed
            else Claimed(seeded=Seeded(note="not played: --no-seed"))
        )
        if runs is None:
            from keel.web.dbos_runs import runs_for

            runs = runs_for(engine, model=model, worker=worker)
    except BaseException:
        engine.close()
        raise
    svc = Service(
        engine,
        model=client,
        model_spec=choice.spec,
        runs=runs,
        token=token,
        seeded=claimed.seeded,
        max_body=max_body,
    )
    if telegram_secret:
        try:
            from keel.telegram.webhook import Webhooks
        except ImportError as exc:
            engine.close()
            raise UsageError(
                f"Telegram webhooks need the telegram extra ({exc.name} is missing): "
                "pip install 'keel-engine[telegram]'"
            ) from None
        svc.telegram = Webhooks(
            engine, client, secret=telegram_secret, env=environ, api_url=telegram_api_url
        )
    _seed_runs(svc, claimed)
    return svc, create_app(svc)


# What a server whose runs backend is not the hosted worker's says of the seed's runs.
NOT_HOSTED = "this server's runs backend does not start a seed's runs"


def _seed_runs(svc: Service, claimed: Claimed) -> None:
    """Have the claimed seed's runs start once the hosted worker is up (the seed's record
    on the service follows); or skip them now, saying why."""
    if claimed.seed is None:
        return
    from keel.web.dbos_runs import DurableRuns

    runs = svc.runs
    if not isinstance(runs, DurableRuns):
        svc.seeded = skip_runs(claimed, runs.unavailable() or NOT_HOSTED)
        return
    hosted: DurableRuns = runs

    def start() -> None:
        svc.seeded = play_runs(hosted, claimed)

    hosted.when_open(start)
