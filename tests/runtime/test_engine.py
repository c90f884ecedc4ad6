"""`Engine`: one object for a brain, its database, its counter and its tools."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from keel.assemble.values import ModelStep, ToolCall
from keel.brain.specs import ReachEntry
from keel.errors import FitOverflow, Refused, UsageError
from keel.link.values import Conversation, RunRef, TurnRequest
from keel.runtime.engine import Engine
from keel.runtime.models import OpenAIChatModel
from keel.telegram.commands import context_text
from keel.testing import ScriptedModel
from tests.runtime.driver import copy_reference

NOW = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
ACME = Conversation(bot="nova", chat="tg:chat:-1002000000101")
OWNER = Conversation(bot="nova", chat="tg:user:1")
FORUM = "tg:chat:-1003000000001"


@pytest.fixture
def engine(tmp_path: Path, database_url: str) -> Iterator[Engine]:
    brain = copy_reference(tmp_path / "brain")
    with Engine(brain, database_url, watch=False) as engine:
        if not database_url.startswith("sqlite"):
            engine.apply_state()
        yield engine


def turn(conversation: Conversation, **fields: object) -> TurnRequest:
    return TurnRequest(conversation=conversation, now=NOW, **fields)  # type: ignore[arg-type]


def test_prepare_records_a_turn_and_assembles_its_input(engine: Engine) -> None:
    prepared, assembly = engine.prepare(turn(ACME, input="When does our retainer renew?"))
    assert [(a.link.context, a.link.entity, a.link.kind) for a in prepared.attached] == [
        ("client", "acme", "chat")
    ]
    assert assembly.fit.ok
    assert "Acme Corporation" in assembly.tail_text
    again, _ = engine.prepare(turn(ACME))
    assert again.turn == prepared.turn + 1


def test_run_answers_with_the_model_and_runs_its_tools(engine: Engine) -> None:
    scripted = ScriptedModel(
        [
            ModelStep(
                calls=(ToolCall(id="c1", name="context_open", arguments={"name": "client"}),)
            ),
            ModelStep(text="It renews on 30 September."),
        ]
    )
    outcome = engine.run(
        turn(ACME, input="renewal?"), OpenAIChatModel(client=scripted.openai_client())
    )
    assert outcome.reply == "It renews on 30 September."
    assert "Acme Corporation" in scripted.requests[1].body["messages"][-1]["content"]


def test_a_send_carries_its_origin_and_a_reply_brings_it_back(engine: Engine) -> None:
    beat = RunRef(kind="heartbeat", id="evening-film")
    with pytest.raises(Refused, match="could only come back keyed"):
        engine.send(OWNER, "Tonight: Whiplash", run=beat, at=NOW)
    origin = engine.send(
        OWNER, "Tonight: Whiplash", run=beat, about_entity="tt2582802", message_id="m1", at=NOW
    )
    assert origin.feature == "coach"
    prepared, _ = engine.prepare(turn(OWNER, dm=True, reply_to=("m1",), input="8/10"))
    assert [(a.link.context, a.link.entity, a.link.kind) for a in prepared.attached] == [
        ("rating", "tt2582802", "reply")
    ]


def test_a_message_naming_no_ticket_links_the_one_named_before_it(engine: Engine) -> None:
    desk = Conversation(bot="desk", chat=FORUM, thread="90")
    engine.send(desk, "Thanks — T-481 is with the billing team now.", message_id="d1", at=NOW)
    engine.send(desk, "Anything else?", message_id="d2", at=NOW)
    prepared, _ = engine.prepare(turn(desk, input="any news?"))
    assert [(a.link.context, a.link.entity, a.link.kind) for a in prepared.attached] == [
        ("ticket", "T-481", "code")
    ]
    # The message replied to counts before the room's lines; the message itself before both.
    replied, _ = engine.prepare(turn(desk, input="and this one?", reply_to=("d1",)))
    assert ("ticket", "T-481") in [(a.link.context, a.link.entity) for a in replied.attached]
    named, _ = engine.prepare(turn(desk, input="no, T-479 please"))
    assert ("ticket", "T-479", "code") in [
        (a.link.context, a.link.entity, a.link.kind) for a in named.attached
    ]


def test_a_kept_link_reads_as_kept_with_the_turn_that_made_it(engine: Engine) -> None:
    beat = RunRef(kind="heartbeat", id="evening-film")
    engine.send(
        OWNER, "Tonight: Whiplash", run=beat, about_entity="tt2582802", message_id="m1", at=NOW
    )
    first, _ = engine.prepare(turn(OWNER, dm=True, reply_to=("m1",), input="8/10"))
    later, _ = engine.prepare(turn(OWNER, dm=True, input="and the soundtrack?"))
    (rating,) = [a.link for a in later.attached if a.link.context == "rating"]
    assert (rating.kind, rating.shown) == ("reply", "kept")
    assert str(rating.kept) == f"kept from turn {first.turn} (2 left)"
    (shown,) = [a for a in later.to_json()["attached"] if a["context"] == "rating"]
    assert (shown["link"], shown["kept"]) == (
        "kept",
        {"link": "reply", "from_turn": first.turn, "turns_left": 2},
    )
    assert later.id is not None
    explained = engine.explain(later.id).to_json()
    (row,) = [r for r in explained["contexts"] if r["context"] == "rating"]
    assert (row["link"], row["kept"]["from_turn"]) == ("kept", first.turn)
    # The turn as listed (`keel turns --json`, /v1/turns, /context) and as /context says it.
    found = engine.context(OWNER.chat, bot=OWNER.bot)
    assert found is not None
    (listed,) = [c for c in found.to_json()["contexts"] if c["context"] == "rating"]
    assert (listed["link"], listed["kept"]) == (shown["link"], shown["kept"])
    assert f"attached (reply link, kept from turn {first.turn} (2 left), " in context_text(found)


def test_bind_and_unbind_are_the_tools_as_the_chats_role_calls_them(engine: Engine) -> None:
    said = engine.bind(context="ticket", entity="T-481", chat=FORUM, thread="77", bot="desk")
    assert said == f"bound ticket in {FORUM} thread 77"
    prepared, _ = engine.prepare(turn(Conversation(bot="desk", chat=FORUM, thread="77")))
    assert [(a.link.context, a.link.entity) for a in prepared.attached] == [("ticket", "T-481")]
    with pytest.raises(Refused, match="cannot call context_bind — add context:bind"):
        engine.bind(context="client", entity="globex", chat=ACME.chat, bot="nova")
    assert engine.unbind(context="ticket", chat=FORUM, thread="77", bot="desk") == (
        f"unbound ticket in {FORUM} thread 77"
    )
    with pytest.raises(Refused, match="no binding of 'ticket' made by context_bind here"):
        engine.unbind(context="ticket", chat=FORUM, thread="77", bot="desk")


def test_a_binding_for_every_bot_acts_as_the_chats_ruled_bot_without_a_role(
    engine: Engine,
) -> None:
    # No --bot and no --role: the forum's rule (bot desk, role support) decides.
    said = engine.bind(context="ticket", entity="T-481", chat=FORUM, thread="77")
    assert said == f"bound ticket in {FORUM} thread 77"
    prepared, _ = engine.prepare(turn(Conversation(bot="desk", chat=FORUM, thread="77")))
    assert [(a.link.context, a.link.entity) for a in prepared.attached] == [("ticket", "T-481")]
    assert engine.unbind(context="ticket", chat=FORUM, thread="77") == (
        f"unbound ticket in {FORUM} thread 77"
    )
    # A chat no group rule names: the bots' default rules decide, the first whose role
    # admits the context (desk's support admits the ticket; no default role the client).
    elsewhere = "tg:chat:-1009"
    said = engine.bind(context="ticket", entity="T-481", chat=elsewhere, thread="1")
    assert said == f"bound ticket in {elsewhere} thread 1"
    assert engine.unbind(context="ticket", chat=elsewhere, thread="1") == (
        f"unbound ticket in {elsewhere} thread 1"
    )
    with pytest.raises(Refused, match="role 'support' does not list 'client'"):
        engine.bind(context="client", entity="acme", chat=elsewhere)


def test_open_reads_a_context_as_the_agent_would_and_holds_the_pin(engine: Engine) -> None:
    text = engine.open(turn(ACME), "client")
    assert 'entity="acme"' in text
    with pytest.raises(Refused, match="bound to client 'acme'"):
        engine.open(turn(ACME), "client", "globex")


def test_doctor_checks_the_brain_and_its_views(engine: Engine) -> None:
    report = engine.doctor()
    assert not report.failed
    assert not [f for f in report.findings if f.check == "view.unchecked"]


def test_doctor_without_a_database_says_it_did_not_look(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    url = "postgresql+psycopg://nobody@127.0.0.1:1/none"
    with Engine(brain, url, watch=False) as engine:
        report = engine.doctor()
    (note,) = [f for f in report.findings if f.check == "view.unchecked"]
    assert "cannot reach the database" in note.message


def test_an_edited_context_reaches_the_next_turn(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    manifest = brain / "constitution" / "MANIFEST.yaml"
    manifest.write_text(manifest.read_text().replace("context: 2", "context: 0"))
    policy = brain / "features" / "returns" / "policy.context.md"
    with Engine(brain, watch=False) as engine:
        assert "Shipping back is free" not in engine.open(turn(OWNER, role="support"), "policy")
        policy.write_text(policy.read_text() + "\nShipping back is free this week.\n")
        assert "Shipping back is free" in engine.open(turn(OWNER, role="support"), "policy")


def test_a_turn_that_cannot_fit_records_nothing(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    manifest = brain / "constitution" / "MANIFEST.yaml"
    text = manifest.read_text().replace("window: 200000", "window: 8100")
    manifest.write_text(text.replace("input_allocation: 150000", "input_allocation: 100"))
    with Engine(brain, watch=False) as engine:
        with pytest.raises(FitOverflow):
            engine.prepare(turn(ACME))
        with engine.store.transaction() as tx:
            assert tx.current_turn(ACME) == 0


def test_a_path_that_is_not_a_brain_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such directory"):
        Engine(tmp_path / "nowhere")


# -- the journal and the reports ---------------------------------------------------------

SHOPPER = Conversation(bot="desk", chat="tg:user:42")
TICKETS = tuple(ReachEntry(context="ticket", entity=f"T-{n}") for n in range(479, 484))


def test_a_dry_run_assembles_the_turn_and_records_nothing(engine: Engine) -> None:
    dry, assembly = engine.prepare(turn(ACME, input="renewal?"), dry_run=True)
    assert (dry.id, dry.dry_run, dry.turn) == (None, True, 1)
    assert assembly.fit.ok
    assert "Acme Corporation" in assembly.tail_text
    assert engine.turns() == ()
    assert engine.history(ACME.chat) == ()
    real, again = engine.prepare(turn(ACME, input="renewal?"))
    assert (real.turn, real.id) == (1, engine.turns()[0].id)
    assert again.fit == assembly.fit
    journal = engine.journal(real.id or 0)
    assert [(s.id, s.used) for s in journal.sections] == [
        (s.id, s.used_tokens) for s in again.sections
    ]
    with pytest.raises(UsageError, match=r"no turn 12345 in the journal"):
        engine.journal(12345)


def test_report_context_and_explain_read_the_recorded_turns(engine: Engine) -> None:
    first, _ = engine.prepare(turn(SHOPPER, attach=TICKETS, input="orders"))
    engine.prepare(turn(SHOPPER, input="and?"))
    report = engine.report("support", since="1d", now=NOW)
    ticket = {c.context: c for c in report.contexts}["ticket"]
    # Code links stick: the second turn carries the same five tickets.
    assert (report.turns, ticket.attached, ticket.stubbed) == (2, 2, 2)
    with pytest.raises(UsageError, match=r"no role 'suport' in this brain — did you mean"):
        engine.report("suport")
    view = engine.context(SHOPPER.chat)
    assert view is not None
    assert view.journal.turn == 2
    assert view.window is not None
    assert view.journal.fit is not None
    assert view.window.used == view.journal.fit.estimate
    assert [(k.link.entity, k.turns_left) for k in view.kept] == [
        (f"T-{n}", 2) for n in range(479, 484)
    ]
    assert engine.context("tg:nowhere") is None
    explained = engine.explain(first.id or 0)
    stubbed = [r for r in explained.rows if r.status == "stubbed"]
    assert [(r.entity, r.knob) for r in stubbed] == [("T-483", "contexts.maxActive")]
    dry = engine.explain(turn(ACME, open=(ReachEntry(context="client", entity="globex"),)))
    assert dry.dry_run
    assert dry.id is None
    assert len(engine.turns()) == 2


def test_what_if_re_fits_and_re_assembles_without_recording(engine: Engine) -> None:
    engine.prepare(turn(SHOPPER, attach=TICKETS, input="orders"))
    same = engine.what_if([], since="1d", now=NOW)
    (shift,) = same.turns
    assert shift.after == shift.journal.decisions
    assert not shift.fit_replayed
    wider = engine.what_if(["role.support.contexts_budget.maxActive=5"], since="1d", now=NOW)
    (shift,) = wider.turns
    assert shift.changed == ("ticket@T-483",)
    assert shift.fit_replayed
    assert shift.fit_after is not None
    assert shift.journal.fit is not None
    assert shift.fit_after.estimate > shift.journal.fit.estimate
    tight = engine.what_if(
        ["model.window=9000", "role.support.model.window=9000"], since="1d", now=NOW
    )
    (shift,) = tight.turns
    assert shift.fit_after is not None
    assert not shift.fit_after.ok
    assert len(engine.turns()) == 1
    # A misspelt role is no role, not a window without turns.
    with pytest.raises(UsageError, match="no role 'suport' in this brain — did you mean"):
        engine.what_if([], since="1d", now=NOW, role="suport")


def test_bindings_list_access_yaml_and_stored_ones(engine: Engine) -> None:
    engine.bind(context="ticket", entity="T-481", chat=FORUM, thread="77", bot="desk")
    assert [(b.context, b.entity, b.source) for b in engine.bindings(FORUM)] == [
        ("ticket", "T-481", "tool")
    ]
    assert [(b.chat, b.source) for b in engine.bindings()][-1] == (FORUM, "tool")
    assert [(b.entity, b.source) for b in engine.bindings(ACME.chat)] == [("acme", "access")]


def test_doctor_names_a_context_stubbed_in_the_last_week(engine: Engine) -> None:
    assert not [f for f in engine.doctor(now=NOW).findings if f.check == "context.stubbed"]
    engine.prepare(turn(SHOPPER, attach=TICKETS))
    (finding,) = [f for f in engine.doctor(now=NOW).findings if f.check == "context.stubbed"]
    assert finding.subject == "ticket"
    assert "raise contexts.maxActive (now 4 for role 'support'" in finding.message
    later = NOW + timedelta(days=8)
    assert not [f for f in engine.doctor(now=later).findings if f.check == "context.stubbed"]
