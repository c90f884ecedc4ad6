"""CLI-agent sessions: what each session was last sent, so a restart does not resend it all.

One row per (session, context, entity) holding the hashes of `keel.payload.sessions`:
the instructions' digest, whether they were sent, and the views' digests as a JSON object
(name → digest, in the block's order). The session id is the caller's own string.

`save_session` replaces a session's whole state: it deletes the session's rows and writes
the new ones in the caller's transaction. A session runs one turn at a time; should two
workers save one session at once on PostgreSQL, the second fails on the primary key
instead of mixing two states.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection, bindparam, delete, select

from keel.errors import StoreError
from keel.payload.sessions import SentContext, SessionState
from keel.store import schema
from keel.store.sql import key, unkey

_TABLE = schema.sessions
# Built once: building a statement costs more than SQLite takes to run it.
_STATE = select(_TABLE).where(_TABLE.c.session == bindparam("s"))
_FORGET = delete(_TABLE).where(_TABLE.c.session == bindparam("s"))
_INSERT = _TABLE.insert()


def _session(session_id: str) -> str:
    if not session_id:
        raise StoreError("the session id is an empty string — pass the CLI agent's session id")
    return session_id


def session_state(conn: Connection, session_id: str) -> SessionState:
    """What the session was last sent; an empty state for a session never saved."""
    rows = conn.execute(_STATE, {"s": _session(session_id)})
    return SessionState(
        contexts=tuple(
            SentContext(
                context=row.context,
                entity=unkey(row.entity),
                instructions=row.instructions,
                instructions_sent=bool(row.instructions_sent),
                views=_views(row.views, session_id, row.context),
            )
            for row in rows
        )
    )


def save_session(conn: Connection, session_id: str, state: SessionState) -> None:
    """Replace everything stored for the session with `state`."""
    session = _session(session_id)
    rows = [
        {
            "session": session,
            "context": entry.context,
            "entity": key(entry.entity, f"the entity of {entry.context!r} in session {session!r}"),
            "instructions": entry.instructions,
            "instructions_sent": entry.instructions_sent,
            "views": json.dumps(dict(entry.views), ensure_ascii=False),
        }
        for entry in state.contexts
    ]
    conn.execute(_FORGET, {"s": session})
    if rows:
        conn.execute(_INSERT, rows)


def _views(text: str, session_id: str, context: str) -> tuple[tuple[str, str], ...]:
    try:
        views: Any = json.loads(text)
    except ValueError:
        views = None
    if not isinstance(views, dict) or not all(isinstance(v, str) for v in views.values()):
        raise StoreError(
            f"the views of {context!r} in session {session_id!r} ({_TABLE.name}) are not a "
            f"JSON object of view name to digest: {text[:80]!r} — delete the session's rows "
            "and it will be sent everything again"
        )
    return tuple(views.items())
