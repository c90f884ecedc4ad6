"""Keel as a Telegram bot: updates become turns, and the outbox is delivered (aiogram).

An edge like the CLI: it uses the engine and the store, and nothing of Keel imports it
(it needs the `telegram` extra).
"""

from keel.telegram.updates import BotUser, Incoming, Skipped, read_update, turn_request

__all__ = ["BotUser", "Incoming", "Skipped", "read_update", "turn_request"]
