"""`file_send` / `voice_send(path, caption?, chat?, thread?, about?)`: send a brain's file.

The file is one of the brain's `files/` folder, named by its path inside it: a path that
is absolute, climbs out (`..`), or leads out through a link is refused, so nothing else on
the machine can be sent. The message is recorded as `send_message` records one — the
run's origin, `about` keying what a reply is about, the room's pin — with the file beside
it (`keel.store.delivery.Attachment`); the caption is its text in the history. The chat
surface sends it (Telegram's sendDocument, sendVoice).

A chat no surface carries files to (the CLI, a `run:` chat) cannot take one: the tool
says so instead of pretending it was sent. Both tools take the capability `message:file`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from keel.brain.snapshot import Brain
from keel.errors import Refused
from keel.link.values import Origin
from keel.store.delivery import Attachment, AttachmentKind
from keel.tools.context_open import STRING
from keel.tools.registry import Preview, Run, Tool, ToolContext
from keel.tools.send import check_pin, origin_of, record_send, send_preview
from keel.tools.send_message import PREVIEW_ID, RISK, next_message_id, where_to

# A capability of its own: a role that sends text does not see (nor pay for) these tools
# until it names it.
FILE_CAPABILITY = "message:file"
FILES = "files"
# Chats whose surface carries a file: Telegram's (`keel.telegram`).
FILE_SURFACES = ("tg:",)
# Telegram's bound on a caption, in characters.
MAX_CAPTION_CHARS = 1024
# What Telegram plays as a voice message; anything else it would refuse.
VOICE_SUFFIXES = (".ogg", ".oga", ".opus", ".mp3", ".m4a")


def brain_file(brain: Brain, path: str) -> Path:
    """The file `path` names inside the brain's files/ folder; `Refused` when it is not
    one (outside the folder, missing, a folder)."""
    named = PurePosixPath(path.replace("\\", "/"))
    if named.is_absolute() or ".." in named.parts or not named.parts:
        raise Refused(
            f"{path!r} is not a path inside the brain's {FILES}/ folder — name a file there "
            "by its path from that folder, e.g. 'returns/label.pdf'"
        )
    folder = (brain.root / FILES).resolve()
    found = (folder / named).resolve()
    if not found.is_relative_to(folder):
        raise Refused(f"{path!r} leads out of the brain's {FILES}/ folder — it cannot be sent")
    if not found.is_file():
        raise Refused(f"there is no file {FILES}/{named} in the brain — check the name")
    return found


def _checked(
    ctx: ToolContext, args: Mapping[str, Any], kind: AttachmentKind, message_id: str
) -> tuple[Origin, Attachment, str]:
    """The send's origin, its file and its caption; `Refused` when it cannot go."""
    where = where_to(ctx.request, args)
    if not where.chat.startswith(FILE_SURFACES):
        raise Refused(
            f"the chat {where.chat} is on no surface that carries files (only text reaches "
            "it) — say it in words with send_message instead"
        )
    found = brain_file(ctx.brain, args["path"])
    if kind == "voice" and found.suffix.lower() not in VOICE_SUFFIXES:
        raise Refused(
            f"{args['path']!r} is not a voice recording ({', '.join(VOICE_SUFFIXES)}) — "
            "send it with file_send"
        )
    caption = str(args.get("caption") or "").strip()
    if len(caption) > MAX_CAPTION_CHARS:
        raise Refused(
            f"a caption is at most {MAX_CAPTION_CHARS} characters; this one has "
            f"{len(caption)} — shorten it, or send the rest with send_message"
        )
    relative = found.relative_to((ctx.brain.root / FILES).resolve()).as_posix()
    attachment = Attachment(kind=kind, path=relative)
    about: Mapping[str, Any] = args.get("about") or {}
    origin = origin_of(
        ctx.brain,
        conversation=where,
        message_id=message_id,
        sent_at=datetime.now(UTC),
        run=ctx.request.run,
        entity=ctx.request.entity,
        reach=ctx.request.reach,
        about_entity=about.get("entity"),
        about_context=about.get("context"),
    )
    return origin, attachment, caption or attachment.placeholder()


def _sender(kind: AttachmentKind) -> Run:
    def run(ctx: ToolContext, args: Mapping[str, Any]) -> str:
        message_id = next_message_id() or uuid.uuid4().hex
        where = where_to(ctx.request, args)
        shown = where.chat + (f" thread {where.thread}" if where.thread else "")
        if ctx.tx.has_message(where, message_id):
            return f"sent {message_id} to {shown}"
        origin, attachment, text = _checked(ctx, args, kind, message_id)
        record_send(ctx.tx, ctx.brain, origin, text, attachment=attachment)
        return f"sent {message_id} to {shown}: the {kind} {FILES}/{attachment.path}"

    return run


def _previewer(kind: AttachmentKind) -> Preview:
    def preview(ctx: ToolContext, args: Mapping[str, Any]) -> str:
        origin, attachment, text = _checked(ctx, args, kind, PREVIEW_ID)
        check_pin(ctx.tx, ctx.brain, origin)
        about: Mapping[str, Any] = args.get("about") or {}
        return send_preview(
            where_to(ctx.request, args),
            f"({kind} {FILES}/{attachment.path}) {text}",
            about_entity=about.get("entity"),
            about_context=about.get("context"),
            risk=RISK,
        )

    return preview


_PARAMETERS = {
    "type": "object",
    "properties": {
        "path": STRING,
        "caption": STRING,
        "chat": STRING,
        "thread": STRING,
        "about": {
            "type": "object",
            "properties": {"entity": STRING, "context": STRING},
            "additionalProperties": False,
        },
    },
    "required": ["path"],
}

FILE_SEND = Tool(
    name="file_send",
    description=(
        "Send a file of the brain's files/ folder (`path` inside it) to this chat, or "
        "`chat`, with a `caption`; `about` as for send_message."
    ),
    parameters=_PARAMETERS,
    capability=FILE_CAPABILITY,
    risk=RISK,
    run=_sender("document"),
    preview=_previewer("document"),
)
VOICE_SEND = Tool(
    name="voice_send",
    description=(
        "Send a voice recording (.ogg, .mp3, .m4a) of the brain's files/ folder, as file_send does."
    ),
    parameters=_PARAMETERS,
    capability=FILE_CAPABILITY,
    risk=RISK,
    run=_sender("voice"),
    preview=_previewer("voice"),
)
