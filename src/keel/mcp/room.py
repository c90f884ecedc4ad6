"""`Room`: what a coding agent's door serves — one conversation (bot, chat, thread), one role.

A coding agent is one participant in one conversation of the brain: the MCP server and the
prompt hook both take it from their command line and make every turn and tool call there.
The role is the one named, else access.yaml's rule for the bot and chat (a `--dm` chat
uses the bot's DM rule), resolved again on every call, since the brain can change under a
long-lived server.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from keel.link.values import Conversation, TurnRequest

# A session id this long or shorter is its thread's id as it is (a UUID is 36).
SESSION_CHARS = 64


def digest_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


@dataclass(frozen=True, slots=True, kw_only=True)
class Room:
    """One conversation and the role a door answers it as (None: access.yaml's)."""

    conversation: Conversation
    role: str | None = None
    dm: bool = False
    # The person the agent works for, when its door was told (`--from`); every turn in the
    # room names them as its sender.
    sender: str | None = None

    def in_session(self, session: str) -> Room:
        """The room for one agent session: its own thread of the chat, unless the command
        line named a thread, so one session's kept links never ride into another's (the
        chat's own bindings still cover every thread)."""
        conversation = self.conversation
        if conversation.thread is not None:
            return self
        # Long or odd session ids are cut to a stable digest: a thread id has a length cap.
        ident = session if len(session) <= SESSION_CHARS else digest_of(session)
        return replace(self, conversation=replace(conversation, thread=f"session:{ident}"))

    def request(self, *, text: str = "", now: datetime | None = None) -> TurnRequest:
        """A turn (or tool call) in this room, now unless told otherwise."""
        return TurnRequest(
            conversation=self.conversation,
            now=now or datetime.now(UTC),
            role=self.role,
            dm=self.dm,
            input=text,
            sender=self.sender,
        )

    @property
    def where(self) -> str:
        """The room in words: `bot nova in tg:chat:-100...` (and its thread)."""
        conversation = self.conversation
        thread = f" thread {conversation.thread}" if conversation.thread else ""
        return f"bot {conversation.bot} in {conversation.chat}{thread}"
