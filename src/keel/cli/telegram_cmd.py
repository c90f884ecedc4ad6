"""`keel telegram`: run one brain bot as a Telegram bot (long polling).

aiogram is imported when the command runs, so other commands never pay for it, and a
missing `telegram` extra is a usage error that names the install.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated
from urllib.parse import urlsplit

import typer

from keel.brain.problems import suggest
from keel.cli.options import BrainArg, DbOpt, JsonOpt, open_engine
from keel.cli.root import app, console, emit_json, guard
from keel.errors import UsageError
from keel.log import logger
from keel.runtime.model_specs import FORMS, build_model, default_model, parse_model

log = logger("telegram")

if TYPE_CHECKING:
    from aiogram import Bot

    from keel.runtime.engine import Engine
    from keel.runtime.models import ModelClient
    from keel.telegram.polling import Tally

DEFAULT_TOKEN_ENV = "KEEL_TELEGRAM_TOKEN"
INSTALL = "pip install 'keel-engine[telegram]' (or: uv sync --extra telegram)"


@app.command()
def telegram(
    brain: BrainArg,
    bot: Annotated[str, typer.Option("--bot", help="The brain's bot to run.")],
    token_env: Annotated[
        str, typer.Option("--token-env", help="The environment variable holding the token.")
    ] = DEFAULT_TOKEN_ENV,
    api_url: Annotated[
        str | None,
        typer.Option("--api-url", help="Another Bot API server (self-hosted, or a test double)."),
    ] = None,
    until_idle: Annotated[
        bool,
        typer.Option(
            "--until-idle",
            help="Handle every pending update, deliver every pending message, then exit.",
        ),
    ] = False,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help=f"The model that answers: {FORMS} (default: MANIFEST's model.name, else "
            "a provider whose key is set; none only prepares each turn).",
        ),
    ] = None,
    webhook: Annotated[
        str | None,
        typer.Option(
            "--webhook",
            help="Register this URL (keel serve's /telegram/BOT) as the bot's webhook, then exit.",
        ),
    ] = None,
    secret: Annotated[
        str | None,
        typer.Option(
            "--telegram-secret",
            envvar="KEEL_TELEGRAM_SECRET",
            help="The secret Telegram signs webhook calls with (as keel serve's).",
            show_default=False,
            show_envvar=True,
        ),
    ] = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run a brain bot as a Telegram bot: each message a turn, each answer a native reply."""

    def body() -> None:
        try:
            import aiogram  # noqa: F401 - only to say which install is missing
        except ImportError as exc:
            raise UsageError(
                f"keel telegram needs aiogram ({exc.name} is missing) — {INSTALL}"
            ) from None
        token = os.environ.get(token_env, "").strip()
        if not token:
            raise UsageError(
                f"no Telegram bot token in ${token_env} — set it to the token BotFather gave "
                "(or name another variable with --token-env)"
            )
        if webhook is not None:
            asyncio.run(_register(token, api_url, webhook, secret, bot))
            if as_json:
                emit_json({"bot": bot, "webhook": webhook})
            else:
                console().print(f"{bot}: webhook set to {webhook}")
            return
        with open_engine(brain, db) as engine, _logging():
            _known_bot(engine, bot)
            chosen = parse_model(model) if model else default_model(_declared(engine))
            client_model = build_model(chosen)
            if client_model is None:
                log.warning(
                    "no model answers: each message is recorded as a turn and nothing is said "
                    "— give --model, or set OPENAI_API_KEY or ANTHROPIC_API_KEY"
                )
            tally = asyncio.run(_run(engine, client_model, token, bot, api_url, until_idle))
        summary = {
            "bot": bot,
            "updates": tally.updates,
            "answered": tally.answered,
            "decided": tally.decided,
            "skipped": tally.skipped,
            "delivered": tally.delivered,
            "failed": tally.failed,
        }
        if as_json:
            emit_json(summary)
        else:
            console().print(
                f"{bot}: {tally.updates} update(s), {tally.answered} answered, "
                f"{len(tally.skipped)} skipped, {tally.decided} card(s) decided; "
                f"{tally.delivered} message(s) delivered, {tally.failed} failed"
            )

    guard(as_json, body)


@contextmanager
def _logging() -> Iterator[None]:
    """What each update became (skipped, not answered, a failed delivery), on stderr."""
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="keel telegram: %(levelname)s %(message)s"
    )
    keel_log = logging.getLogger("keel")
    level = keel_log.level
    keel_log.setLevel(logging.INFO)
    try:
        yield
    finally:
        keel_log.setLevel(level)


def _declared(engine: Engine) -> str | None:
    return engine.brain.manifest.model.name


async def _run(
    engine: Engine,
    model: ModelClient | None,
    token: str,
    bot: str,
    api_url: str | None,
    until_idle: bool,
) -> Tally:
    from aiogram.exceptions import TelegramUnauthorizedError

    from keel.telegram.polling import Adapter

    client = _client(token, api_url)
    try:
        return await Adapter(engine, model, client, bot=bot).poll(until_idle=until_idle)
    except TelegramUnauthorizedError:
        raise UsageError("Telegram refused the bot token — check it with BotFather") from None
    finally:
        await client.session.close()


async def _register(
    token: str, api_url: str | None, url: str, secret: str | None, bot: str
) -> None:
    if not secret:
        raise UsageError(
            "a webhook needs the secret keel serve checks — pass --telegram-secret or set "
            "KEEL_TELEGRAM_SECRET (the same on both)"
        )
    if not url.startswith("https://") and api_url is None:
        raise UsageError(f"Telegram calls webhooks over HTTPS only — {url!r} is not https://")
    route = urlsplit(url).path.rstrip("/")
    if not _http_url(url) or not route.endswith(f"/telegram/{bot}"):
        raise UsageError(
            f"{url!r} is not keel serve's route for bot '{bot}' — it ends in /telegram/{bot} "
            f"(such as https://bot.example.com/telegram/{bot})"
        )
    client = _client(token, api_url)
    try:
        await client.set_webhook(url, secret_token=secret)
    finally:
        await client.session.close()


def _client(token: str, api_url: str | None) -> Bot:
    if api_url is not None and not _http_url(api_url):
        raise UsageError(
            f"--api-url {api_url!r} is not an http:// or https:// address — give the Bot API "
            "server's base, such as http://127.0.0.1:8081"
        )
    from aiogram import Bot
    from aiogram.client.session.aiohttp import AiohttpSession
    from aiogram.client.telegram import TelegramAPIServer
    from aiogram.utils.token import TokenValidationError

    session = AiohttpSession(api=TelegramAPIServer.from_base(api_url)) if api_url else None
    try:
        return Bot(token, session=session)
    except TokenValidationError:
        raise UsageError(
            "that is not a Telegram bot token (it looks like 123456:ABC...) — "
            "copy it again from BotFather"
        ) from None


def _http_url(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _known_bot(engine: Engine, bot: str) -> None:
    """Refuse a bot access.yaml gives no rule, before connecting: it could answer no one."""
    access = engine.brain.access
    bots = access.bots
    if bot not in bots and access.broken is None:
        where = access.path or "constitution/access.yaml"
        close = suggest(bot, bots)  # the list follows anyway: only a close one is named
        near = f" — did you mean '{close}'?" if close is not None else ""
        raise UsageError(
            f"no bot '{bot}' in {where}{near} — run one of its bots "
            f"({', '.join(bots) or 'none yet'}), or give '{bot}' rules there first"
        )
