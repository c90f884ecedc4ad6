"""The reference brain in `examples/brain/`: it loads whole, and each worked example holds.

Every example is checked through the `Brain` API (what later stages read), and the brain's
SQL is applied to a fresh SQLite file and to a fresh PostgreSQL schema, where every view a
context or role names must exist with the column its `by` filter uses.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest
from croniter import croniter

from keel.brain import Brain, EntitySpec, ReachEntry, ViewRef, load_brain
from keel.brain.document import parse_yaml
from keel.brain.knobs import approval_required, approval_timeout
from keel.brain.specs import WidgetSpec
from keel.code import load_context_code, load_gate

BRAIN_DIR = Path(__file__).resolve().parents[2] / "examples" / "brain"
POSTGRES_URL = os.environ.get("KEEL_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")

FEATURES = {
    "agency",
    "billing",
    "coach",
    "dutch",
    "finance",
    "home",
    "hr",
    "largo",
    "outreach",
    "returns",
    "support",
}
CONTEXTS = {
    "cashflow",
    "chase",
    "checkin",
    "client",
    "film",
    "kb",
    "knm",
    "largo",
    "leave",
    "listen",
    "offer",
    "pick",
    "policy",
    "prospect",
    "rates",
    "rating",
    "read",
    "routine",
    "shopping",
    "ticket",
    "write",
}
ROLES = {
    "bookkeeper",
    "client-desk",
    "coach",
    "controller",
    "dutch-coach",
    "family",
    "largo",
    "people-ops",
    "sdr",
    "support",
}
PRACTICES = ("knm", "listen", "write", "read")


@pytest.fixture(scope="module")
def brain() -> Brain:
    return load_brain(BRAIN_DIR)


def entity(brain: Brain, kind: str, ident: str) -> EntitySpec:
    found = brain.entity(kind, ident)
    assert found is not None, f"{kind} {ident} did not load"
    return found


def reach_ids(brain: Brain, kind: str, ident: str) -> set[str]:
    return {r.context for r in brain.reach_of(entity(brain, kind, ident))}


# -- the whole brain ----------------------------------------------------------------------


def test_loads_with_no_skips(brain: Brain) -> None:
    assert brain.skips == ()
    assert brain.orphan_code == ()
    assert dict(brain.switched_off) == {}
    assert set(brain.features) == FEATURES
    assert set(brain.contexts) == CONTEXTS
    assert set(brain.roles) == ROLES


def test_every_feature_is_declared_and_on(brain: Brain) -> None:
    for feature in brain.features.values():
        assert feature.path == f"features/{feature.id}/FEATURE.md"
        assert feature.enabled
        assert feature.description


def test_every_entity_runs_as_an_existing_role(brain: Brain) -> None:
    assert len(brain.entities) == 13  # with the knm practice's inline hook
    for spec in brain.entities.values():
        assert spec.agent in brain.roles, spec.path


def test_every_role_lists_contexts_that_exist_and_skills_that_exist(brain: Brain) -> None:
    used_skills: set[str] = set()
    for role in brain.roles.values():
        assert role.contexts is not None, f"{role.path} has no contexts: list"
        assert set(role.contexts) <= set(brain.contexts), role.path
        assert set(role.skills) <= set(brain.skills), role.path
        assert role.persona
        used_skills |= set(role.skills)
    assert used_skills == set(brain.skills)


def test_every_context_is_reached_and_run_contexts_by_a_run(brain: Brain) -> None:
    admitted = {c for role in brain.roles.values() for c in role.contexts or ()}
    reached = {r.context for e in brain.entities.values() for r in brain.reach_of(e)}
    bound = {c for rule in brain.access.rules for c in rule.contexts}
    assert set(brain.contexts) == admitted | reached | bound
    run_contexts = {c.id for c in brain.contexts.values() if "run" in c.when}
    assert run_contexts <= reached


def test_views_are_claimed_once_and_named_after_their_feature(brain: Brain) -> None:
    claimed: dict[str, str] = {}
    for context in brain.contexts.values():
        for ref in context.data:
            assert ref.view not in claimed, f"{ref.view}: {claimed.get(ref.view)} and {context.id}"
            claimed[ref.view] = context.id
            assert ref.view.startswith(f"{context.feature}_"), ref.view
    for role in brain.roles.values():
        for view in role.state:
            assert view not in claimed, f"{role.id} state view {view} is claimed by a context"
            assert view.startswith(f"{role.feature}_"), view


def test_keyed_views_sit_on_keyed_contexts_with_a_key_naming_link(brain: Brain) -> None:
    for context in brain.contexts.values():
        if any(ref.by for ref in context.data):
            assert context.entity, context.id
            assert context.when & {"chat", "reply", "ask"}, context.id


def test_roles_that_admit_an_ask_context_can_open_it(brain: Brain) -> None:
    for role in brain.roles.values():
        asks = [c for c in role.contexts or () if "ask" in brain.contexts[c].when]
        if asks:
            assert role.can("context:read"), role.id
            assert all(brain.contexts[c].description for c in asks)


def test_manifest_sets_every_knob(brain: Brain) -> None:
    m = brain.manifest
    assert m.path == "constitution/MANIFEST.yaml"
    assert (m.contexts.chars, m.contexts.max_active, m.contexts.turn_chars, m.contexts.keep) == (
        3000,
        3,
        12000,
        3,
    )
    assert m.contexts.code_timeout_ms == 2000
    assert (m.state_rows, m.retention_days, m.content_probe_seconds) == (20, 365, 2.0)
    assert m.model.window == 200000
    assert m.model.output_reserve == 8000
    assert m.model.input_allocation == 150000
    assert dict(m.sections)["history"] == 4000
    assert dict(m.approvals.decisions) == {"moderate": "none", "dangerous": "required"}
    assert m.approvals.timeout == timedelta(days=2)


def test_approvals_follow_manifest_then_the_role(brain: Brain) -> None:
    assert approval_required(brain, "coach", "", "dangerous")
    assert not approval_required(brain, "coach", "message:send", "moderate")
    support = brain.roles["support"]
    assert dict(support.approvals.decisions) == {"context:bind": "none"}
    assert not approval_required(brain, support, "context:bind", "moderate")
    assert approval_timeout(brain, support) == timedelta(hours=4)
    assert approval_timeout(brain, "sdr") == timedelta(days=2)


# Where each run speaks: (bot, chat). Each chat is one the seed plays turns in.
SPEAKS = {
    "heartbeat:invoice-chase": ("nova", "tg:chat:-1004000000001"),
    "heartbeat:evening-film": ("nova", "tg:user:1"),
    "heartbeat:morning-plan": ("nova", "tg:user:1"),
    "heartbeat:film-of-day": ("largo", "tg:user:1"),
    "heartbeat:morning-checkin": ("largo", "tg:user:1"),
    "hook:skip": ("tutor", "tg:user:2"),
    "hook:ticket-opened": ("desk", "tg:chat:-1003000000001"),
    "scenario:knm-practice": ("tutor", "tg:user:2"),
    "hook:knm-practice-knm-exam-booked": ("tutor", "tg:user:2"),
    "scenario:listen-practice": ("tutor", "tg:user:2"),
    "scenario:read-practice": ("tutor", "tg:user:2"),
    "scenario:write-practice": ("tutor", "tg:user:2"),
    "scenario:first-touch": ("desk", "tg:user:1"),
}


def test_every_run_names_the_bot_and_chat_it_speaks_in(brain: Brain) -> None:
    assert {k: (e.bot, e.chat) for k, e in brain.entities.items()} == SPEAKS
    assert all(e.thread is None for e in brain.entities.values()), "a topic comes with an event"
    seed = parse_yaml("seed.yaml", (BRAIN_DIR / "seed.yaml").read_text(encoding="utf-8"))
    played = {step[kind]["chat"] for step in seed["steps"] for kind in step}
    for key, (bot, chat) in SPEAKS.items():
        assert chat in played, key
        direct = chat.startswith("tg:user:")
        rule = brain.access.rule_for(bot, chat, dm=direct)
        assert rule is not None, key
        assert brain.access.refusal(bot, chat, dm=direct) is None, key


def test_every_heartbeat_schedule_is_five_cron_fields_that_fire(brain: Brain) -> None:
    beats = [e for e in brain.entities.values() if e.kind == "heartbeat"]
    assert len(beats) == 5
    for beat in beats:
        assert beat.schedule is not None
        assert len(beat.schedule.split()) == 5
        assert croniter.is_valid(beat.schedule), beat.path


def test_access_has_bots_with_templates_and_group_rules(brain: Brain) -> None:
    bots = {rule.bot for rule in brain.access.rules}
    assert {"nova", "desk"} <= bots
    for rule in brain.access.rules:
        assert rule.role in brain.roles, rule
        if not rule.is_group:
            assert dict(rule.contexts) == {}
        for context_id, key in rule.contexts.items():
            assert context_id in brain.contexts, rule
            assert (key is not None) == brain.contexts[context_id].keyed, rule
    dm = brain.access.rule_for("nova", "tg:chat:555", dm=True)
    assert dm is not None
    assert dm.scope == "dm"
    assert dm.role == "coach"


# -- 1. the invoice chase: run -----------------------------------------------------------


def test_billing_chase_rides_only_the_heartbeat(brain: Brain) -> None:
    chase = brain.contexts["chase"]
    assert chase.feature == "billing"
    assert chase.when == {"run"}
    assert chase.data == (ViewRef(view="billing_overdue"),)
    beat = entity(brain, "heartbeat", "invoice-chase")
    assert beat.feature == "billing"
    assert beat.schedule
    assert "chase" in reach_ids(brain, "heartbeat", "invoice-chase")
    owner = brain.roles[beat.agent or ""]
    assert not owner.admits("chase")
    chat_rule = brain.access.rule_for("nova", "tg:chat:555")
    assert chat_rule is not None
    assert chat_rule.role == owner.id


# -- 2. the return policy: ask -----------------------------------------------------------


def test_returns_policy_is_an_ask_context_in_the_support_catalog(brain: Brain) -> None:
    policy = brain.contexts["policy"]
    assert policy.feature == "returns"
    assert policy.when == {"ask"}
    assert policy.description
    assert policy.data == ()
    support = brain.roles["support"]
    assert support.admits("policy")
    assert support.can("context:read")


# -- 3. the shopping list: always --------------------------------------------------------


def test_shopping_list_is_always_carried_by_the_family_role(brain: Brain) -> None:
    shopping = brain.contexts["shopping"]
    assert shopping.when == {"always"}
    assert shopping.data == (ViewRef(view="home_shopping_open"),)
    assert brain.roles["family"].contexts == ("shopping",)
    family_groups = [r for r in brain.access.rules if r.is_group and r.role == "family"]
    assert len(family_groups) == 1


def test_shopping_list_is_a_widget_of_its_open_items(brain: Brain) -> None:
    assert brain.contexts["shopping"].widget == WidgetSpec(
        view="home_shopping_open", line=("item", "quantity"), title="Shopping list"
    )
    assert [c.id for c in brain.contexts.values() if c.widget is not None] == ["shopping"]


# -- 4. the coach's evening film: layout reach, then reply with the film's key ---------------


def test_coach_evening_beat_reaches_exactly_pick_and_rating(brain: Brain) -> None:
    beat = entity(brain, "heartbeat", "evening-film")
    assert beat.dir == ("evening", "film")
    assert beat.reach is None
    assert set(brain.reach_of(beat)) == {ReachEntry(context="pick"), ReachEntry(context="rating")}
    pick, rating = brain.contexts["pick"], brain.contexts["rating"]
    assert (pick.dir, rating.dir) == (("evening", "film"), ("evening", "film"))
    assert pick.when == {"run"}
    assert pick.data == (ViewRef(view="coach_film_pick"),)
    assert rating.entity == "film id"
    assert rating.when == {"reply"}
    assert rating.data == (ViewRef(view="coach_film", by="film_id"),)
    coach = brain.roles[beat.agent or ""]
    assert coach.id == "coach"
    assert coach.admits("rating")


def test_other_coach_beats_do_not_reach_the_film_contexts(brain: Brain) -> None:
    others = [e for e in brain.entities.values() if e.feature == "coach" and e.id != "evening-film"]
    assert [e.id for e in others] == ["morning-plan"]
    for other in others:
        assert other.dir == ("morning",)
        assert reach_ids(brain, other.kind, other.id) == {"routine"}


# -- 5. the Dutch coach: one feature, four parts, one gated hook ------------------------------


@pytest.mark.parametrize("practice", PRACTICES)
def test_each_dutch_practice_reaches_only_its_own_context(brain: Brain, practice: str) -> None:
    scenario = entity(brain, "scenario", f"{practice}-practice")
    assert scenario.dir == (practice,)
    assert scenario.agent == "dutch-coach"
    assert brain.reach_of(scenario) == (ReachEntry(context=practice),)
    context = brain.contexts[practice]
    assert context.dir == (practice,)
    assert {"run", "reply"} <= context.when
    assert brain.roles["dutch-coach"].admits(practice)


def test_dutch_skip_hook_sits_at_the_root_with_a_gate(brain: Brain) -> None:
    hook = entity(brain, "hook", "skip")
    assert hook.feature == "dutch"
    assert hook.dir == ()
    assert hook.event == "practice.skipped"
    assert hook.reach is None
    assert brain.layout_reach(hook) == ()
    assert hook.code_path == "features/dutch/skip.hook.py"


@pytest.mark.parametrize("practice", PRACTICES)
def test_dutch_skip_gate_reaches_the_skipped_practice(brain: Brain, practice: str) -> None:
    hook = entity(brain, "hook", "skip")
    assert hook.code_path is not None
    gate = load_gate(brain.root, hook.code_path)
    answer = gate.gate({"skill": practice}, None)
    assert answer == {"reach": [{"context": practice}]}
    assert answer["reach"][0]["context"] in brain.contexts


# -- 6. the support desk: chat with an entity key --------------------------------------------


def test_support_ticket_context(brain: Brain) -> None:
    ticket = brain.contexts["ticket"]
    assert ticket.entity == "ticket id"
    assert ticket.when == {"chat", "ask"}
    assert ticket.data == (
        ViewRef(view="support_sla_today"),
        ViewRef(view="support_ticket_card", by="ticket_id"),
    )
    assert ticket.chars == 3000
    assert ticket.description
    assert ticket.code_path == "features/support/ticket.context.py"
    kb = brain.contexts["kb"]
    assert kb.when == {"ask"}
    assert kb.description
    support = brain.roles["support"]
    assert support.contexts == ("ticket", "kb", "policy")
    assert support.capabilities == ("context:read", "context:bind", "chat:topic")
    hook = entity(brain, "hook", "ticket-opened")
    assert hook.feature == "support"
    assert hook.agent == "support"


def test_support_forum_binds_nothing_statically(brain: Brain) -> None:
    forums = [r for r in brain.access.rules if r.is_group and r.role == "support"]
    assert len(forums) == 1
    assert dict(forums[0].contexts) == {}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("Any news on T-481? It's urgent.", {"entity": "T-481"}, id="names-one"),
        pytest.param("T-12 and T-13", {"entity": "T-12"}, id="first-wins"),
        pytest.param("My parcel never came", None, id="names-none"),
        pytest.param("ticket T- with no number, or XT-481", None, id="not-an-id"),
    ],
)
def test_ticket_code_matches_a_ticket_id(brain: Brain, text: str, expected: Any) -> None:
    path = brain.contexts["ticket"].code_path
    assert path is not None
    code = load_context_code(brain.root, path)
    assert code.render is not None, "it also renders the ticket's SLA line"
    assert code.match is not None
    assert code.match(SimpleNamespace(input=text, message=text), None) == expected


def test_ticket_code_takes_the_ticket_named_last_before_a_message_naming_none(
    brain: Brain,
) -> None:
    path = brain.contexts["ticket"].code_path
    assert path is not None
    match = load_context_code(brain.root, path).match
    assert match is not None
    earlier = "[earlier in this chat]\nuser: It's about T-479.\nuser: no, T-481\n[this message]\n"
    turn = SimpleNamespace(input=earlier + "any news?", message="any news?")
    assert match(turn, None) == {"entity": "T-481"}
    run = SimpleNamespace(input="Chase T-7 today.", message="")  # a run's prompt
    assert match(run, None) == {"entity": "T-7"}


# -- 7. B2B outreach: chat bound from a run --------------------------------------------------


def test_outreach_prospect_and_offer(brain: Brain) -> None:
    prospect = brain.contexts["prospect"]
    assert prospect.when == {"chat", "run", "reply"}
    assert prospect.entity == "prospect id"
    assert prospect.data == (ViewRef(view="outreach_prospect", by="prospect_id"),)
    assert brain.contexts["offer"].feature == "outreach"
    sdr = brain.roles["sdr"]
    assert sdr.contexts == ("prospect", "offer")
    scenario = entity(brain, "scenario", "first-touch")
    assert scenario.feature == "outreach"
    assert scenario.agent == "sdr"
    assert reach_ids(brain, "scenario", "first-touch") == {"prospect", "offer"}


# -- 8. an agency with a group per client: isolation by key ---------------------------------


def test_agency_client_groups_are_bound_to_their_client(brain: Brain) -> None:
    client = brain.contexts["client"]
    assert client.when == {"chat", "reply", "ask"}
    assert client.entity == "client slug"
    assert client.data == (ViewRef(view="agency_client_card", by="client_slug"),)
    bindings = {
        rule.title: dict(rule.contexts) for rule in brain.access.rules if rule.role == "client-desk"
    }
    assert bindings == {
        "Acme": {"client": "acme"},
        "Globex": {"client": "globex"},
        "Initech": {"client": "initech"},
    }
    assert all(r.is_group for r in brain.access.rules if r.role == "client-desk")


def test_client_desk_never_admits_hr_or_finance(brain: Brain) -> None:
    desk = brain.roles["client-desk"]
    assert desk.contexts == ("client",)
    assert desk.can("context:read")
    back_office = {c.id for c in brain.contexts.values() if c.feature in ("hr", "finance")}
    assert back_office == {"leave", "cashflow"}
    assert not any(desk.admits(c) for c in back_office)
    assert brain.roles["people-ops"].admits("leave")
    assert brain.roles["controller"].admits("cashflow")


# -- 9. the largo layout ---------------------------------------------------------------------


def test_largo_layout(brain: Brain) -> None:
    assert brain.contexts["largo"].dir == ()
    assert brain.contexts["checkin"].dir == ("morning", "checkin")
    assert brain.contexts["film"].dir == ("evening", "film")
    checkin = entity(brain, "heartbeat", "morning-checkin")
    assert checkin.dir == ("morning", "checkin")
    assert brain.reach_of(checkin) == (ReachEntry(context="checkin"), ReachEntry(context="largo"))
    film = entity(brain, "heartbeat", "film-of-day")
    assert film.dir == ("evening", "film")
    assert brain.reach_of(film) == (ReachEntry(context="film"), ReachEntry(context="largo"))
    assert brain.roles["largo"].admits("film")


# -- the SQL on both databases -----------------------------------------------------------


def needed_views(brain: Brain) -> dict[str, set[str]]:
    """Every view a context or role names, with the columns a `by` filter needs."""
    views: dict[str, set[str]] = {}
    for context in brain.contexts.values():
        for ref in context.data:
            views.setdefault(ref.view, set()).update([ref.by] if ref.by else [])
    for role in brain.roles.values():
        for view in role.state:
            views.setdefault(view, set())
    return views


def test_needed_views_cover_the_keyed_ones(brain: Brain) -> None:
    views = needed_views(brain)
    assert len(views) == 26
    assert {v: c for v, c in views.items() if c} == {
        "coach_film": {"film_id"},
        "support_ticket_card": {"ticket_id"},
        "outreach_prospect": {"prospect_id"},
        "agency_client_card": {"client_slug"},
        "largo_film": {"film_id"},
    }


def test_sql_files_are_applied_in_name_order(brain: Brain) -> None:
    paths = [f.path for f in brain.state_sql]
    assert paths == sorted(paths)
    assert len(paths) == 8
    assert all(p.startswith("state/") and p.endswith(".sql") for p in paths)


def test_sql_applies_on_sqlite(brain: Brain, tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "state.db")
    try:
        for sql in brain.state_sql:
            db.executescript(sql.text)
        found = {
            name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'view'")
        }
        for view, by_columns in needed_views(brain).items():
            assert view in found, view
            columns = {row[1] for row in db.execute(f'PRAGMA table_info("{view}")')}
            assert by_columns <= columns, view
            (count,) = db.execute(f'SELECT count(*) FROM "{view}"').fetchone()
            assert count > 0, f"{view} shows no sample rows"
        (card,) = db.execute(
            "SELECT customer FROM support_ticket_card WHERE ticket_id = ?", ("T-481",)
        ).fetchone()
        assert card == "Maria Lopes"
    finally:
        db.close()


@pytest.fixture
def pg_schema() -> Iterator[tuple[psycopg.Connection[Any], str]]:
    schema = f"keel_example_{secrets.token_hex(6)}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        try:
            conn.execute(f'SET search_path TO "{schema}"')
            yield conn, schema
        finally:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.mark.postgres
def test_sql_applies_on_postgres(
    brain: Brain, pg_schema: tuple[psycopg.Connection[Any], str]
) -> None:
    conn, schema = pg_schema
    for sql in brain.state_sql:
        conn.execute(sql.text)
    found = {
        name
        for (name,) in conn.execute(
            "SELECT table_name FROM information_schema.views WHERE table_schema = %s", (schema,)
        ).fetchall()
    }
    for view, by_columns in needed_views(brain).items():
        assert view in found, view
        columns = {
            name
            for (name,) in conn.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = %s AND table_name = %s",
                (schema, view),
            ).fetchall()
        }
        assert by_columns <= columns, view
        (count,) = conn.execute(f'SELECT count(*) FROM "{view}"').fetchone() or (0,)
        assert count > 0, f"{view} shows no sample rows"
    (card,) = conn.execute(
        "SELECT client_name FROM agency_client_card WHERE client_slug = %s", ("globex",)
    ).fetchone() or (None,)
    assert card == "Globex"
