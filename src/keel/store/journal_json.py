"""The turn journal's JSON: what a `TurnJournal` is stored as, and read back from.

Two documents per turn, each versioned (`v`): the summary (`data_json`: the request, the
decisions, refusals, pins, catalog, sections and fit) and the replay part (`replay_json`:
what the stores held, the candidates with their view rows, the role's renders, and each
section's text, in the summary's order of sections). Values are
plain: times ISO 8601 in UTC, view cells as the text a block shows before escaping (so a
re-render is exact), None as null.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from datetime import date, datetime
from typing import Any

from keel.assemble.values import Fit
from keel.brain.knobs import TurnKnobs
from keel.brain.specs import ENTITY_KINDS, ReachEntry
from keel.budget.rows import ViewRows
from keel.link.values import (
    Binding,
    Conversation,
    Kept,
    KeptLink,
    Link,
    Origin,
    Refusal,
    RunRef,
    Stored,
    TurnRequest,
)
from keel.store.journal_values import (
    JOURNAL_VERSION,
    KNOBS,
    Candidate,
    CodeAnswer,
    Decision,
    JournalReplay,
    SectionSize,
    TurnJournal,
)
from keel.store.sql import link_kind


def data_json(journal: TurnJournal) -> dict[str, Any]:
    """The summary: everything but the replay part."""
    return {
        "v": JOURNAL_VERSION,
        "request": _request_json(journal.request),
        "turn": journal.turn,
        "role": journal.role,
        "decisions": [_decision_json(d) for d in journal.decisions],
        "refused": [
            {**_pair(r.context, r.entity, r.kind), "reason": r.reason} for r in journal.refused
        ],
        "pins": dict(journal.pins),
        "reach": [_entry_json(e) for e in journal.reach],
        "knobs": {
            "max_active": journal.knobs.max_active,
            "turn_chars": journal.knobs.turn_chars,
            "rows": journal.knobs.rows,
            "code_timeout_ms": journal.knobs.code_timeout_ms,
        },
        "catalog": list(journal.catalog),
        "log": list(journal.log),
        "code": [
            {"context": c.context, "entity": c.entity, "answer": c.answer, "failure": c.failure}
            for c in journal.code
        ],
        "session": journal.session,
        "sections": [
            {
                "id": s.id,
                "budget": s.budget,
                "used": s.used,
                "clipped": s.clipped,
                "place": s.place,
                "warnings": list(s.warnings),
                "shown": s.shown,
            }
            for s in journal.sections
        ],
        "fit": asdict(journal.fit) if journal.fit is not None else None,
        "counter": journal.counter,
        # Only a reply to a widget's: a journal of any other turn reads as before.
        **(
            {"widget_lines": [{"context": c, "lines": n} for c, n in journal.widget_lines]}
            if journal.widget_lines
            else {}
        ),
    }


def replay_json(journal: TurnJournal) -> dict[str, Any]:
    """The replay part (empty when the journal was read without it)."""
    replay = journal.replay
    if replay is None:
        return {"v": JOURNAL_VERSION}
    return {
        "v": JOURNAL_VERSION,
        "stored": _stored_json(replay.stored),
        "candidates": [_candidate_json(c) for c in replay.candidates],
        "renders": [view_json(v) for v in replay.renders],
        "texts": [s.text for s in journal.sections],
    }


def journal_from_json(
    ident: int | None, data: Mapping[str, Any], replay: Mapping[str, Any] | None
) -> TurnJournal:
    """A journal row's value; `replay` None reads the summary only.

    Raises `KeyError`, `TypeError` or `ValueError` on a row that does not hold this shape
    (the store turns them into a `StoreError` naming the row).
    """
    if data.get("v") != JOURNAL_VERSION:
        raise ValueError(f"journal version {data.get('v')!r}, expected {JOURNAL_VERSION}")
    knobs = data["knobs"]
    fit = data["fit"]
    return TurnJournal(
        id=ident,
        request=_request(data["request"]),
        turn=int(data["turn"]),
        role=str(data["role"]),
        decisions=tuple(_decision(d) for d in data["decisions"]),
        refused=tuple(
            Refusal(
                context=r["context"],
                entity=r["entity"],
                kind=link_kind(r["link"], "a journaled refusal"),
                reason=r["reason"],
            )
            for r in data["refused"]
        ),
        pins={str(k): v for k, v in data["pins"].items()},
        reach=tuple(_entry(e) for e in data["reach"]),
        knobs=TurnKnobs(
            max_active=int(knobs["max_active"]),
            turn_chars=int(knobs["turn_chars"]),
            rows=int(knobs["rows"]),
            code_timeout_ms=int(knobs["code_timeout_ms"]),
        ),
        catalog=tuple(data["catalog"]),
        log=tuple(data["log"]),
        code=tuple(_code(c) for c in data["code"]),
        session=data["session"],
        sections=_sections(data["sections"], replay),
        fit=Fit(**fit) if fit is not None else None,
        counter=data["counter"],
        widget_lines=tuple((w["context"], int(w["lines"])) for w in data.get("widget_lines", ())),
        replay=_replay(replay) if replay is not None else None,
    )


def _sections(
    data: Sequence[Mapping[str, Any]], replay: Mapping[str, Any] | None
) -> tuple[SectionSize, ...]:
    """The sections of the summary, with their texts when the replay part holds them.

    Rows written before places, warnings and texts were journaled read without them.
    """
    texts: Sequence[str | None] = replay.get("texts") or () if replay is not None else ()
    if len(texts) != len(data):
        texts = [None] * len(data)
    return tuple(
        SectionSize(
            id=s["id"],
            budget=s["budget"],
            used=int(s["used"]),
            clipped=s["clipped"],
            place=s.get("place"),
            warnings=tuple(s.get("warnings") or ()),
            shown=s.get("shown"),
            text=text,
        )
        for s, text in zip(data, texts, strict=True)
    )


# ---------------------------------------------------------------------------------------
# View rows


def cell_text(value: Any) -> str | None:
    """A view cell as the text a block shows before escaping (what `cell` starts from)."""
    if value is None:
        return None
    return value.isoformat() if isinstance(value, datetime | date) else str(value)


def view_json(rows: ViewRows) -> dict[str, Any]:
    return {
        "view": rows.view,
        "by": rows.by,
        "columns": list(rows.columns),
        "rows": [[cell_text(v) for v in row] for row in rows.rows],
        "total": rows.total,
        "problem": rows.problem,
    }


def view_rows(data: Mapping[str, Any]) -> ViewRows:
    return ViewRows(
        view=data["view"],
        by=data["by"],
        columns=tuple(data["columns"]),
        rows=tuple(tuple(row) for row in data["rows"]),
        total=int(data["total"]),
        problem=data["problem"],
    )


# ---------------------------------------------------------------------------------------
# The parts


def _pair(context: str, entity: str | None, kind: str) -> dict[str, Any]:
    return {"context": context, "entity": entity, "link": kind}


def _link_json(link: Link) -> dict[str, Any]:
    found = {**_pair(link.context, link.entity, link.kind), "feature": link.feature}
    if link.kept is not None:  # journals before kept links were shown have no such key
        found["kept"] = {"from_turn": link.kept.from_turn, "turns_left": link.kept.turns_left}
    if link.asked:  # only then: the journals of other turns keep their shape
        found["asked"] = True
    return found


def _link(data: Mapping[str, Any]) -> Link:
    kept = data.get("kept")
    return Link(
        context=data["context"],
        entity=data["entity"],
        kind=link_kind(data["link"], "a journaled link"),
        feature=data["feature"],
        kept=None
        if kept is None
        else Kept(from_turn=int(kept["from_turn"]), turns_left=int(kept["turns_left"])),
        asked=data.get("asked") is True,
    )


def _decision_json(decision: Decision) -> dict[str, Any]:
    status = "attached" if decision.attached else "stubbed"
    return {
        **_link_json(decision.link),
        "status": status,
        "chars": decision.chars,
        "knob": decision.knob,
    }


def _decision(data: Mapping[str, Any]) -> Decision:
    knob = data["knob"]
    if knob is not None and knob not in KNOBS:
        raise ValueError(f"unknown knob {knob!r}")
    found = next((k for k in KNOBS if k == knob), None)
    return Decision(link=_link(data), chars=int(data["chars"]), knob=found)


def _entry_json(entry: ReachEntry) -> dict[str, Any]:
    return {"context": entry.context, "entity": entry.entity}


def _entry(data: Mapping[str, Any]) -> ReachEntry:
    return ReachEntry(context=data["context"], entity=data["entity"])


def _code(data: Mapping[str, Any]) -> CodeAnswer:
    answer = data["answer"]
    if answer not in (None, "yes", "no"):
        raise ValueError(f"unknown code answer {answer!r}")
    return CodeAnswer(
        context=data["context"],
        entity=data["entity"],
        answer="yes" if answer == "yes" else "no" if answer == "no" else None,
        failure=data["failure"],
    )


def _time(value: str) -> datetime:
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        raise ValueError(f"time {value!r} has no zone")
    return moment


def _request_json(request: TurnRequest) -> dict[str, Any]:
    conversation = request.conversation
    reach = request.reach
    return {
        "bot": conversation.bot,
        "chat": conversation.chat,
        "thread": conversation.thread,
        "now": request.now.isoformat(),
        "role": request.role,
        "dm": request.dm,
        "input": request.input,
        "reply_to": list(request.reply_to),
        "run": request.run.key if request.run is not None else None,
        "entity": request.entity,
        "reach": [_entry_json(e) for e in reach] if reach is not None else None,
        "attach": [_entry_json(e) for e in request.attach],
        "open": [_entry_json(e) for e in request.open],
    }


def _run(value: str | None) -> RunRef | None:
    if value is None:
        return None
    word, _, ident = value.partition(":")
    kind = next((k for k in ENTITY_KINDS if k == word), None)
    if kind is None or not ident:
        raise ValueError(f"run {value!r} is not KIND:ID")
    return RunRef(kind=kind, id=ident)


def _request(data: Mapping[str, Any]) -> TurnRequest:
    reach = data["reach"]
    return TurnRequest(
        conversation=Conversation(bot=data["bot"], chat=data["chat"], thread=data["thread"]),
        now=_time(data["now"]),
        role=data["role"],
        dm=bool(data["dm"]),
        input=data["input"],
        reply_to=tuple(data["reply_to"]),
        run=_run(data["run"]),
        entity=data["entity"],
        reach=tuple(_entry(e) for e in reach) if reach is not None else None,
        attach=tuple(_entry(e) for e in data["attach"]),
        open=tuple(_entry(e) for e in data["open"]),
    )


def _stored_json(stored: Stored) -> dict[str, Any]:
    return {
        "turn": stored.turn,
        "origins": [
            {
                "bot": o.bot,
                "chat": o.chat,
                "message_id": o.message_id,
                "sent_at": o.sent_at.isoformat(),
                "thread": o.thread,
                "feature": o.feature,
                "run": o.run,
                "reach": [_entry_json(e) for e in o.reach],
                "pending_card": o.pending_card,
                # Only a widget's: a journal of any other turn reads as before.
                **({"widget": o.widget} if o.widget is not None else {}),
            }
            for o in stored.origins
        ],
        "bindings": [
            {
                "context": b.context,
                "entity": b.entity,
                "chat": b.chat,
                "thread": b.thread,
                "bot": b.bot,
                "source": b.source,
            }
            for b in stored.bindings
        ],
        "kept": [
            {**_pair(k.context, k.entity, k.kind), "feature": k.feature, "until_turn": k.until_turn}
            for k in stored.kept
        ],
    }


def _stored(data: Mapping[str, Any]) -> Stored:
    return Stored(
        turn=int(data["turn"]),
        origins=tuple(
            Origin(
                bot=o["bot"],
                chat=o["chat"],
                message_id=o["message_id"],
                sent_at=_time(o["sent_at"]),
                thread=o["thread"],
                feature=o["feature"],
                run=o["run"],
                reach=tuple(_entry(e) for e in o["reach"]),
                pending_card=bool(o["pending_card"]),
                widget=o.get("widget"),
            )
            for o in data["origins"]
        ),
        bindings=tuple(
            Binding(
                context=b["context"],
                entity=b["entity"],
                chat=b["chat"],
                thread=b["thread"],
                bot=b["bot"],
                source="access" if b["source"] == "access" else "tool",
            )
            for b in data["bindings"]
        ),
        kept=tuple(
            KeptLink(
                context=k["context"],
                entity=k["entity"],
                kind=link_kind(k["link"], "a journaled kept link"),
                feature=k["feature"],
                until_turn=int(k["until_turn"]),
            )
            for k in data["kept"]
        ),
    )


def _candidate_json(candidate: Candidate) -> dict[str, Any]:
    views = candidate.views
    return {
        **_link_json(candidate.link),
        "chars": candidate.chars,
        "instructions": {"chars": candidate.instructions_chars, "sha": candidate.instructions_sha},
        "views": [view_json(v) for v in views] if views is not None else None,
        "sections": [[key, text] for key, text in candidate.sections],
        "sections_missing": candidate.sections_missing,
        "sections_failure": candidate.sections_failure,
    }


def _candidate(data: Mapping[str, Any]) -> Candidate:
    views = data["views"]
    return Candidate(
        link=_link(data),
        chars=int(data["chars"]),
        instructions_chars=int(data["instructions"]["chars"]),
        instructions_sha=data["instructions"]["sha"],
        views=tuple(view_rows(v) for v in views) if views is not None else None,
        sections=tuple((str(k), str(t)) for k, t in data.get("sections", ())),
        sections_missing=bool(data.get("sections_missing", False)),
        sections_failure=data.get("sections_failure"),
    )


def _replay(data: Mapping[str, Any]) -> JournalReplay:
    if data.get("v") != JOURNAL_VERSION:
        raise ValueError(f"replay version {data.get('v')!r}, expected {JOURNAL_VERSION}")
    return JournalReplay(
        stored=_stored(data["stored"]),
        candidates=tuple(_candidate(c) for c in data["candidates"]),
        renders=tuple(view_rows(v) for v in data["renders"]),
    )
