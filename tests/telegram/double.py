"""A local Bot API double: an HTTP server on 127.0.0.1 that answers as Telegram does.

It keeps a queue of updates (getUpdates hands out those at or past the offset, and an
offset forgets those before it, as Telegram's does), records every call with its decoded
fields, answers sendMessage with a new message in Telegram's shape (editMessageText with
the message it edits, its id kept), and fails the next
calls of a method on demand (`fail_next`: a 429 with retry_after, a 500, a 400). A method
`held` takes its calls and answers none of them while held (counted in `held_calls`,
never sent): a client killed while it waits sent nothing. Like Telegram, it refuses a
message over 4,096 UTF-16 units, an empty one, a parse mode it does not know, and
entities that do not lie inside the text (offsets in UTF-16 units) or link to no web
address — so a sender that gets these wrong fails against it too. createForumTopic
answers a ForumTopic (its `message_thread_id` is the id of the topic's first, service
message, as Telegram's is), and is refused in a private chat or for a name Telegram
would not take (empty, over 128 characters). sendDocument and sendVoice take the file
as a multipart upload (recorded as its name and bytes) and answer a message carrying it.
aiogram is pointed at it with `TelegramAPIServer.from_base(double.url)`.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

Json = dict[str, Any]
BOT_USER = {"id": 4242, "is_bot": True, "first_name": "Desk", "username": "desk_bot"}
TOKEN = "4242:TEST-token-for-the-double"


@dataclass
class Failure:
    status: int
    description: str
    parameters: Json | None = None


@dataclass
class BotAPIDouble:
    url: str = ""
    updates: list[Json] = field(default_factory=list)
    calls: list[tuple[str, Json]] = field(default_factory=list)
    failures: dict[str, list[Failure]] = field(default_factory=dict)
    next_message_id: int = 1000
    lock: threading.Lock = field(default_factory=threading.Lock)
    held: set[str] = field(default_factory=set)
    held_calls: list[tuple[str, Json]] = field(default_factory=list)

    def push(self, update: Json) -> None:
        with self.lock:
            self.updates.append(update)

    def fail_next(self, method: str, failure: Failure) -> None:
        with self.lock:
            self.failures.setdefault(method, []).append(failure)

    def sent(self, method: str = "sendMessage") -> list[Json]:
        with self.lock:
            return [fields for name, fields in self.calls if name == method]

    async def answer(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        fields = _attached({key: _decode(value) for key, value in (await request.post()).items()})
        with self.lock:
            hold = method in self.held
            if hold:
                self.held_calls.append((method, fields))
        if hold:
            # No answer while held (the client is killed meanwhile); once released, a
            # failure no client is left to read: the call was never sent.
            while True:
                await asyncio.sleep(0.05)
                with self.lock:
                    if method not in self.held:
                        break
            gone: Json = {"ok": False, "error_code": 502, "description": "Bad Gateway"}
            return web.json_response(gone, status=502)
        with self.lock:
            self.calls.append((method, fields))
            failures = self.failures.get(method)
            failure = failures.pop(0) if failures else None
            failure = failure or _refusal(method, fields)
            if failure is not None:
                body: Json = {
                    "ok": False,
                    "error_code": failure.status,
                    "description": failure.description,
                }
                if failure.parameters:
                    body["parameters"] = failure.parameters
                return web.json_response(body, status=failure.status)
            return web.json_response({"ok": True, "result": self._result(method, fields)})

    def _result(self, method: str, fields: Json) -> Any:
        if method == "getUpdates":
            offset = int(fields.get("offset", 0))
            self.updates = [u for u in self.updates if u["update_id"] >= offset]
            return self.updates[: int(fields.get("limit", 100))]
        if method == "getMe":
            return BOT_USER
        if method in ("sendMessage", "editMessageText"):
            return self._message(fields)
        if method in _FILES:
            return self._with_file(method, fields)
        if method == "createForumTopic":
            self.next_message_id += 1
            return {
                "message_thread_id": self.next_message_id,
                "name": fields["name"],
                "icon_color": 7322096,
            }
        return True

    def _with_file(self, method: str, fields: Json) -> Json:
        kind = _FILES[method]
        upload = fields[kind]
        message = self._message({**fields, "text": fields.get("caption", "")})
        del message["text"]
        if "caption" in fields:
            message["caption"] = fields["caption"]
        unique = f"f{self.next_message_id}"
        message[kind] = {"file_id": unique, "file_unique_id": unique}
        if kind == "document":
            message[kind]["file_name"] = upload["filename"]
        else:
            message[kind]["duration"] = 1
        return message

    def _message(self, fields: Json) -> Json:
        """The message sent, or edited: an edit keeps the id of the message it edits."""
        if "message_id" in fields:
            ident = int(fields["message_id"])
        else:
            self.next_message_id += 1
            ident = self.next_message_id
        chat_id = int(fields["chat_id"])
        message: Json = {
            "message_id": ident,
            "date": 1_777_000_000,
            "chat": {"id": chat_id, "type": "supergroup" if chat_id < 0 else "private"},
            "from": BOT_USER,
            "text": fields["text"],
        }
        if "message_thread_id" in fields:
            message["message_thread_id"] = int(fields["message_thread_id"])
            message["is_topic_message"] = True
        return message


_FILES = {"sendDocument": "document", "sendVoice": "voice"}
LONGEST = 4096
TOPIC_NAME = 128
CAPTION = 1024
PARSE_MODES = ("HTML", "Markdown", "MarkdownV2")


def _refusal(method: str, fields: Json) -> Failure | None:
    """Telegram's 400 for a text message or a topic it would not take, or None."""
    special = _SPECIAL.get(method)
    if special is not None:
        return special(fields)
    if method not in ("sendMessage", "editMessageText"):
        return None
    units = len(str(fields.get("text", "")).encode("utf-16-le")) // 2
    if not str(fields.get("text", "")).strip():
        return Failure(400, "Bad Request: message text is empty")
    if units > LONGEST:
        return Failure(400, "Bad Request: message is too long")
    if "parse_mode" in fields and fields["parse_mode"] not in PARSE_MODES:
        return Failure(400, f"Bad Request: unsupported parse_mode {fields['parse_mode']}")
    for entity in fields.get("entities", []):
        offset, length = int(entity["offset"]), int(entity["length"])
        if offset < 0 or length <= 0 or offset + length > units:
            return Failure(400, "Bad Request: can't parse entities: entity is out of the text")
        url = str(entity.get("url", "https://"))
        if not url.startswith(("http://", "https://")):
            return Failure(400, "Bad Request: can't parse entities: unsupported URL protocol")
    return None


def _topic_refusal(fields: Json) -> Failure | None:
    if int(fields["chat_id"]) > 0:
        return Failure(400, "Bad Request: the chat is not a forum")
    if not 1 <= len(str(fields.get("name", ""))) <= TOPIC_NAME:
        return Failure(400, "Bad Request: TOPIC_NAME_INVALID")
    return None


def _file_refusal(fields: Json) -> Failure | None:
    if len(str(fields.get("caption", ""))) > CAPTION:
        return Failure(400, "Bad Request: message caption is too long")
    return None


_SPECIAL = {
    "createForumTopic": _topic_refusal,
    "sendDocument": _file_refusal,
    "sendVoice": _file_refusal,
}


def _attached(fields: Json) -> Json:
    """The fields with each `attach://<name>` replaced by the file uploaded as <name>."""
    for key, value in list(fields.items()):
        if isinstance(value, str) and value.startswith("attach://"):
            fields[key] = fields.pop(value.removeprefix("attach://"), value)
    return fields


def _decode(value: Any) -> Any:
    if isinstance(value, web.FileField):
        return {"filename": value.filename, "bytes": value.file.read()}
    if isinstance(value, str) and value[:1] in "{[":
        return json.loads(value)
    return value


@contextmanager
def running_double() -> Iterator[BotAPIDouble]:
    """The double, serving on a free port of 127.0.0.1 in a thread of its own."""
    double = BotAPIDouble()
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    runner: web.AppRunner | None = None

    async def start() -> None:
        nonlocal runner
        app = web.Application()
        app.router.add_post("/bot{token}/{method}", double.answer)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        double.url = f"http://127.0.0.1:{port}"
        ready.set()

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(start(), loop).result(timeout=10)
    ready.wait(10)
    try:
        yield double
    finally:
        with double.lock:
            double.held.clear()  # a held call ends, so the server can stop
        if runner is not None:
            asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
