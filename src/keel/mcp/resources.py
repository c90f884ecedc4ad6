"""What the MCP server offers to read: the role's catalog, and each context it may open.

- `keel://catalog`: the role's catalog, the lines its system prompt would carry.
- `keel://context/<id>`: a context the role may open here (one its `contexts:` admits, or
  one access.yaml binds in this chat). Reading it is `context_open` — the same capability
  check, the same pin (in the Acme room `client` reads acme's card), and the context then
  rides the conversation's next `keep` turns, as an open does.
- `keel://context/<id>/<entity>`: a keyed context for one entity (percent-encoded), offered
  as the template `keel://context/<id>/{entity}`; the pin refuses another room's key.

A role that cannot call `context_open` (no `context:read`) is offered nothing: it could
read nothing. A URI naming a context the role is not offered is refused before anything is
read, and the refusal names only the contexts it is offered: in a client's room, the ids of
every other feature are not the client's to learn. The listing is computed from the brain
as it is now; no SDK type is used here, so the rules can be tested without a server.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, unquote

from keel.assemble.texts import catalog_text
from keel.brain.problems import did_you_mean
from keel.errors import UsageError
from keel.link.bindings import access_bindings
from keel.link.catalog import catalog
from keel.mcp.room import Room
from keel.runtime.engine import Engine

CATALOG_URI = "keel://catalog"
CONTEXT_PREFIX = "keel://context/"


@dataclass(frozen=True, slots=True, kw_only=True)
class Offered:
    """One context the role may open here, as a resource."""

    context: str
    description: str | None
    # What its key is (`entity:` of the context); None for a context that takes none.
    entity: str | None

    @property
    def uri(self) -> str:
        return context_uri(self.context)

    @property
    def template(self) -> str | None:
        """The URI template of the keyed form, for a keyed context."""
        return None if self.entity is None else f"{CONTEXT_PREFIX}{self.context}/{{entity}}"


def context_uri(context: str, entity: str | None = None) -> str:
    """`keel://context/<id>`, or `.../<entity>` with the key percent-encoded."""
    key = "" if entity is None else "/" + quote(entity, safe="")
    return f"{CONTEXT_PREFIX}{context}{key}"


def offered(engine: Engine, room: Room) -> tuple[Offered, ...]:
    """The contexts the room's role may open, sorted by id (none without `context:read`)."""
    brain = engine.brain
    request = room.request()
    role = engine.role_for(request)
    if not role.can("context:read"):
        return ()
    bound = {b.context for b in access_bindings(brain, request.conversation)}
    idents = sorted(i for i in brain.contexts if role.admits(i) or i in bound)
    return tuple(
        Offered(
            context=i, description=brain.contexts[i].description, entity=brain.contexts[i].entity
        )
        for i in idents
    )


def read(engine: Engine, room: Room, uri: str) -> str:
    """The text of a resource; `Refused` as `context_open` refuses, `UsageError` for a
    URI that names no resource."""
    request = room.request()
    if uri == CATALOG_URI:
        role = engine.role_for(request)
        text = catalog_text(catalog(engine.brain, role))
        return text or f"Role {role.id} has no contexts to open."
    if not uri.startswith(CONTEXT_PREFIX):
        raise UsageError(_unknown(uri))
    context, sep, key = uri.removeprefix(CONTEXT_PREFIX).partition("/")
    if not context or "/" in key or (sep and not key):
        raise UsageError(_unknown(uri))
    openable = [o.context for o in offered(engine, room)]
    if context not in openable:
        raise UsageError(_not_offered(context, engine.role_for(request).id, openable))
    return engine.open(request, context, unquote(key) if sep else None)


def _not_offered(context: str, role: str, openable: list[str]) -> str:
    """Why a context cannot be read here, naming only those the role is offered."""
    if not openable:
        return f"no context {context!r} to read here — role {role!r} may open none"
    return (
        f"no context {context!r} that role {role!r} may open here{did_you_mean(context, openable)}"
    )


def _unknown(uri: str) -> str:
    return (
        f"no resource {uri!r} — Keel serves {CATALOG_URI}, {CONTEXT_PREFIX}<id> and "
        f"{CONTEXT_PREFIX}<id>/<entity>"
    )
