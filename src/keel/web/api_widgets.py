"""The `/v1/widgets` routes: show a context's widget in a chat, refresh every live one.

`POST /v1/widgets` answers what `keel widget show --json` prints; `POST /v1/widgets/refresh`
what `keel widget refresh --json` prints: each message edited because its lines changed.
A context with no widget, or unknown, is a 422 saying which contexts have one.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from keel.link.values import Conversation
from keel.web.auth import require_token, served
from keel.web.bodies import RefreshBody, WidgetBody
from keel.web.errors import RESPONSES, KeelJSON
from keel.web.intake import JSONRoute
from keel.web.service import Service

router = APIRouter(
    prefix="/v1", dependencies=[Depends(require_token)], responses=RESPONSES, route_class=JSONRoute
)
Svc = Annotated[Service, Depends(served)]


@router.post("/widgets", summary="Show a context's widget in a chat: its lines, numbered")
def post_widget(body: WidgetBody, svc: Svc) -> KeelJSON:
    """`keel widget show --json`."""
    svc.brain()
    with svc.database():
        shown = svc.engine.show_widget(
            Conversation(bot=body.bot, chat=body.chat, thread=body.thread),
            body.context,
            message_id=body.message_id,
            at=body.at,
        )
    return KeelJSON(shown.to_json())


@router.post("/widgets/refresh", summary="Edit each live widget whose lines changed")
def post_refresh(svc: Svc, body: RefreshBody | None = None) -> KeelJSON:
    """`keel widget refresh --json`; every field of the body is optional, the body too."""
    svc.brain()
    with svc.database():
        edits, left = svc.engine.refresh_widgets(at=body.at if body is not None else None)
    return KeelJSON({"edited": [e.to_json() for e in edits], "left": [w.to_json() for w in left]})
