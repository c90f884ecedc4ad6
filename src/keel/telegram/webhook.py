"""Telegram's webhooks for `keel serve`: `POST /telegram/{bot}`, one update per request.

Telegram signs each call with the secret given to setWebhook, in the
`X-Telegram-Bot-Api-Secret-Token` header; a call without the server's secret is refused
(401) before anything is read, so nobody else can make a bot speak. An accepted update is
handled as in long polling (`keel.telegram.polling.Adapter`), then the bot's outbox is
delivered, with the bot's token: `KEEL_TELEGRAM_TOKEN_<BOT>` (the bot's name in capitals,
other characters as `_`), else `KEEL_TELEGRAM_TOKEN`.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Mapping
from typing import Any

from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.types import Update
from pydantic import ValidationError

from keel.runtime.engine import Engine
from keel.runtime.models import ModelClient
from keel.telegram.polling import Adapter

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
TOKEN_ENV = "KEEL_TELEGRAM_TOKEN"


def token_env(bot: str) -> str:
    """The variable holding one bot's own token."""
    return f"{TOKEN_ENV}_{re.sub(r'[^A-Z0-9]', '_', bot.upper())}"


def client(token: str, api_url: str | None = None) -> Bot:
    """An aiogram `Bot` on Telegram, or on the Bot API server at `api_url`."""
    session = AiohttpSession(api=TelegramAPIServer.from_base(api_url)) if api_url else None
    return Bot(token, session=session)


class Webhooks:
    """The bots a server answers by webhook, all under one secret."""

    def __init__(
        self,
        engine: Engine,
        model: ModelClient | None,
        *,
        secret: str,
        env: Mapping[str, str],
        api_url: str | None = None,
    ) -> None:
        self._engine = engine
        self._model = model
        self._secret = secret
        self._env = env
        self._api_url = api_url

    async def receive(
        self, bot: str, secret: str | None, body: bytes
    ) -> tuple[int, dict[str, Any]]:
        """Handle one webhook call: the HTTP status and the JSON to answer with."""
        if secret is None or not hmac.compare_digest(secret.encode(), self._secret.encode()):
            return 401, {
                "error": f"a Telegram webhook needs the {SECRET_HEADER} header set "
                "to the server's secret (setWebhook's secret_token)"
            }
        bots = self._engine.brain.access.bots
        if bot not in bots and self._engine.brain.access.broken is None:
            return 404, {
                "error": f"no bot {bot!r} in access.yaml — this server answers "
                f"{', '.join(f'/telegram/{b}' for b in bots) or 'no bot yet'}"
            }
        token = self._env.get(token_env(bot)) or self._env.get(TOKEN_ENV)
        if not token:
            return 404, {"error": f"no token for bot {bot!r}: set ${token_env(bot)}"}
        try:
            update = Update.model_validate_json(body, context={})
        except ValidationError as exc:
            return 422, {"error": f"not a Telegram update: {exc.errors()[0]['msg']}"}
        bot_client = client(token, self._api_url)
        try:
            adapter = Adapter(self._engine, self._model, bot_client, bot=bot)
            done = await adapter.handle_update(update)
            delivered, failed = await adapter.deliver()
        finally:
            await bot_client.session.close()
        return 200, {
            "ok": True,
            "answered": done.answered,
            "decided": done.decided,
            "skipped": done.skipped,
            "delivered": delivered,
            "failed": failed,
        }
