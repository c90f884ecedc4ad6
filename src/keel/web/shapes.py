"""The JSON the service answers with, for what the CLI prints with `--json`.

A listed turn, a chat message and a binding read as `keel turns`, `keel history` and
`keel bindings` print them; a recorded turn (`GET /v1/turns/{id}`) adds what the journal
kept of it: refusals with reasons, the catalog, each section with its place, budget,
size and text, the fit, and the turn's request as it came.

`read_back` documents, in the OpenAPI document, the route that reads back what an answer
names (a turn's `id`, a run's): a client, or a fuzzer, follows it without guessing.
"""

from __future__ import annotations

from typing import Any

from keel.assemble.values import Message
from keel.ledger.chat_context import decision_json
from keel.link.values import Binding
from keel.store.journal_values import SectionSize, TurnJournal


def read_back(description: str, **links: tuple[str, dict[str, str]]) -> dict[int | str, Any]:
    """A route's 200 answer with OpenAPI links: each names a `GET` route (its path) and its
    path parameters as runtime expressions (`$response.body#/id`)."""
    return {
        200: {
            "description": description,
            "links": {
                name: {
                    "operationRef": "#/paths/"
                    + path.replace("~", "~0").replace("/", "~1")
                    + "/get",
                    "parameters": parameters,
                }
                for name, (path, parameters) in links.items()
            },
        }
    }


def turn_json(journal: TurnJournal) -> dict[str, Any]:
    """One recorded turn, as a list of turns shows it."""
    conversation = journal.conversation
    request = journal.request
    return {
        "id": journal.id,
        "at": request.now.isoformat(),
        "bot": conversation.bot,
        "chat": conversation.chat,
        "thread": conversation.thread,
        "turn": journal.turn,
        "role": journal.role,
        "run": request.run.key if request.run is not None else None,
        "sender": request.sender,
        "input": request.input,
        "contexts": [decision_json(d) for d in journal.decisions],
        "refused": len(journal.refused),
        "fit": journal.fit.to_json() if journal.fit is not None else None,
    }


def section_json(section: SectionSize) -> dict[str, Any]:
    return {
        "id": section.id,
        "place": section.place,
        "budget_tokens": section.budget,
        "used_tokens": section.used,
        "clipped": section.clipped,
        "warnings": list(section.warnings),
        "text": section.text,
        "shown": section.shown,
    }


def recorded_json(journal: TurnJournal, history: tuple[Message, ...] = ()) -> dict[str, Any]:
    """One recorded turn whole: what it carried and why, its sections, its input."""
    request = journal.request
    return {
        **turn_json(journal),
        "refused": [
            {"context": r.context, "entity": r.entity, "link": r.kind, "reason": r.reason}
            for r in journal.refused
        ],
        "request": {
            "dm": request.dm,
            "role": request.role,
            "reply_to": list(request.reply_to),
            "entity": request.entity,
            "reach": [_entry(e.context, e.entity) for e in request.reach]
            if request.reach is not None
            else None,
            "attach": [_entry(e.context, e.entity) for e in request.attach],
            "open": [_entry(e.context, e.entity) for e in request.open],
        },
        "pins": dict(journal.pins),
        "catalog": list(journal.catalog),
        "knobs": {
            "max_active": journal.knobs.max_active,
            "turn_chars": journal.knobs.turn_chars,
            "rows": journal.knobs.rows,
        },
        "warnings": list(journal.log),
        "sections": [section_json(s) for s in journal.sections],
        "history": [{"role": m.role, "text": m.text} for m in history],
        "counter": journal.counter,
    }


def _entry(context: str, entity: str | None) -> dict[str, Any]:
    return {"context": context, "entity": entity}


def binding_json(binding: Binding) -> dict[str, Any]:
    return {
        "context": binding.context,
        "entity": binding.entity,
        "chat": binding.chat,
        "thread": binding.thread,
        "bot": binding.bot,
        "source": binding.source,
    }
