"""Golden files: the whole assembled input of several turns of the reference brain.

A change to what a turn sends shows up as a diff of these files. To accept an intended
change, run the tests with KEEL_UPDATE_GOLDEN=1 and review the diff before committing.
"""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from keel.assemble.values import Assembly
from keel.brain import Brain, ReachEntry, load_brain
from keel.link import Conversation, RunRef, TurnRequest
from keel.state.database import connect
from keel.store import Store
from keel.tokens.estimate import Estimator
from keel.tools import TOOLS
from keel.tools.send import origin_of, record_send
from keel.turn.prepare import prepare_and_assemble

EXAMPLE = Path(__file__).parents[2] / "examples" / "brain"
GOLDEN = Path(__file__).parent / "golden"
NOW = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
OWNER = Conversation(bot="nova", chat="tg:user:1")


def dump(assembly: Assembly) -> str:
    """Every section with its numbers, then the fit verdict: one stable text."""
    parts = []
    for s in assembly.sections:
        flags = " clipped" if s.clipped else ""
        budget = s.budget_tokens if s.budget_tokens is not None else "-"
        parts.append(f"=== {s.id} [{s.place}] budget={budget} used={s.used_tokens}{flags}")
        parts.extend(f"!!! {w}" for w in s.warnings)
        if s.messages:
            parts.extend(f"--- {m.role}\n{m.text}" for m in s.messages)
        else:
            parts.append(s.text)
    fit = assembly.fit
    parts.append(
        f"=== fit ok={fit.ok} estimate={fit.estimate} window={fit.window} "
        f"reserve={fit.output_reserve} allocation={fit.input_allocation} ({assembly.counter})"
    )
    return "\n".join(parts) + "\n"


def check(name: str, assembly: Assembly) -> None:
    path = GOLDEN / f"{name}.txt"
    text = dump(assembly)
    if os.environ.get("KEEL_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path.name} is missing — run with KEEL_UPDATE_GOLDEN=1 to write it"
    assert text == path.read_text(encoding="utf-8"), f"{path.name} differs from this turn"


@pytest.fixture
def brain(tmp_path: Path) -> Brain:
    root = tmp_path / "brain"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".keel"))
    return load_brain(root)


@pytest.fixture
def store(brain: Brain, sqlite_url: str) -> Store:
    made = Store(connect(sqlite_url, brain))
    made.migrate()
    return made


def assemble(brain: Brain, store: Store, request: TurnRequest) -> Assembly:
    return prepare_and_assemble(brain, store, request, Estimator(), TOOLS.for_role)[1]


def test_a_client_group_turn(brain: Brain, store: Store) -> None:
    room = Conversation(bot="nova", chat="tg:chat:-1002000000101")
    request = TurnRequest(
        conversation=room,
        now=NOW,
        input="When does our retainer renew?",
        open=(ReachEntry(context="client", entity="globex"),),
    )
    check("client_group", assemble(brain, store, request))


def test_the_film_beat_and_the_reply_to_its_post(brain: Brain, store: Store) -> None:
    beat = TurnRequest(conversation=OWNER, now=NOW, run=RunRef(kind="heartbeat", id="evening-film"))
    check("film_beat", assemble(brain, store, beat))
    origin = origin_of(
        brain,
        conversation=OWNER,
        message_id="m1",
        sent_at=NOW,
        run=RunRef(kind="heartbeat", id="evening-film"),
        about_entity="tt2582802",
    )
    with store.transaction() as tx:
        record_send(tx, brain, origin, "Tonight: Whiplash (2014), 106 minutes.")
    reply = TurnRequest(
        conversation=OWNER,
        now=NOW + timedelta(hours=3),
        role="coach",
        input="8/10, loved the drumming",
        reply_to=("m1",),
    )
    check("film_reply", assemble(brain, store, reply))


def test_a_support_thread_bound_to_its_ticket_with_history(brain: Brain, store: Store) -> None:
    topic = Conversation(bot="desk", chat="tg:chat:-1003000000001", thread="77")
    with store.transaction() as tx:
        from keel.tools.binding import check_bind

        tx.bind(
            check_bind(
                brain,
                brain.roles["support"],
                context="ticket",
                entity="T-481",
                chat=topic.chat,
                thread="77",
            )
        )
    first = TurnRequest(conversation=topic, now=NOW, input="My lamp arrived broken.")
    assemble(brain, store, first)
    second = TurnRequest(
        conversation=topic,
        now=NOW + timedelta(minutes=5),
        input="Can I get a refund?",
        open=(ReachEntry(context="policy"),),
    )
    check("support_thread", assemble(brain, store, second))
