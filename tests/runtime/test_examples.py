"""The worked examples of the feature-contexts design, run end to end through `keel`.

Each test drives the real command line against a copy of the reference brain, on SQLite
and on PostgreSQL, and reads what each turn carried from `keel turn --json`: the links,
and the rows every view showed.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from tests.runtime.driver import AT, Keel, view_stub

OWNER = "tg:user:1"
SHOPPER = "tg:user:42"
LEARNER = "tg:user:7"
LARGO_OWNER = "tg:user:9"
FAMILY = "tg:chat:-1001000000001"
ACME = "tg:chat:-1002000000101"
GLOBEX = "tg:chat:-1002000000102"
INITECH = "tg:chat:-1002000000103"
FORUM = "tg:chat:-1003000000001"
PROSPECT_CHAT = "tg:chat:5512001"
CLIENT_GROUPS = {ACME: "acme", GLOBEX: "globex", INITECH: "initech"}

FILM_BEAT = "heartbeat:evening-film"
INCEPTION = "tt1375666"
AMELIE = "tt0211915"
# The owner's direct messages with nova: the DM rule gives the coach role.
OWNER_DM = ("--bot", "nova", "--chat", OWNER, "--dm")
PRACTICES = ("knm", "listen", "write", "read")


def film_post(keel: Keel, message_id: str, film: str, *extra: str, at: str = AT) -> None:
    """The evening beat's post to the owner, keyed by the film it picked."""
    sent = keel.json(
        "send",
        "--bot",
        "nova",
        "--chat",
        OWNER,
        "--text",
        f"Tonight: {film}",
        "--run",
        FILM_BEAT,
        "--about-entity",
        film,
        "--message-id",
        message_id,
        *extra,
        at=at,
    )
    assert {"context": "rating", "entity": film} in sent["origin"]["reach"]


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


# A freelancer's invoice chase — run


def test_the_chase_rides_the_invoice_heartbeat_and_not_the_owners_chat(keel: Keel) -> None:
    beat = keel.turn("--bot", "nova", "--chat", OWNER, "--run", "heartbeat:invoice-chase")
    assert beat.role == "bookkeeper"
    assert beat.pairs == [("chase", None, "run")]
    assert sorted(beat.column("chase", "billing_overdue")) == ["2025-031", "2025-034", "2025-036"]

    for text in ("has Kettle paid yet?", "what is my day rate?"):
        chat = keel.turn("--bot", "nova", "--chat", OWNER, "--input", text)
        assert chat.role == "bookkeeper"
        assert chat.pairs == []
        assert not chat.mentions("chase")
        assert chat.catalog == ["rates"]


# An e-commerce return policy — ask


def test_the_return_policy_is_one_catalog_line_until_it_is_opened(keel: Keel) -> None:
    shop = ("--bot", "desk", "--chat", SHOPPER)
    plain = keel.turn(*shop, "--input", "where is my parcel?")
    assert plain.role == "support"
    assert plain.catalog == ["kb", "policy", "ticket"]
    line = next(c for c in plain.data["catalog"] if c["context"] == "policy")
    assert line["description"].startswith("Return and refund rules")
    assert plain.pairs == []
    assert not plain.mentions("policy")

    opened = keel.turn(*shop, "--open", "policy", "--input", "can I send back earrings?")
    assert opened.pairs == [("policy", None, "ask")]
    assert "Underwear, earrings and gift cards" in opened.block("policy")
    assert opened.catalog == plain.catalog


# A family group's shopping list — always


def test_the_family_group_carries_the_open_shopping_list_on_every_turn(keel: Keel) -> None:
    for text in ("we need milk", "what is on the list?"):
        turn = keel.turn("--bot", "nova", "--chat", FAMILY, "--input", text)
        assert turn.role == "family"
        assert turn.pairs == [("shopping", None, "always")]
        # Item 2 (bread) is ticked off; the view shows only the open ones.
        assert sorted(turn.column("shopping", "home_shopping_open")) == ["1", "3", "4", "5"]


# A coach persona's daily pick — run, then reply with the film's key


def test_the_film_beat_carries_pick_and_its_post_must_name_the_film(keel: Keel) -> None:
    beat = keel.turn(
        "--bot", "nova", "--chat", "run:evening-film", "--role", "coach", "--run", FILM_BEAT
    )
    assert beat.pairs == [("pick", None, "run")]
    assert not beat.mentions("rating")
    unpicked = ["tt0087843", "tt0119698", AMELIE, "tt2582802"]
    assert sorted(beat.column("pick", "coach_film_pick")) == sorted(unpicked)

    send = ("send", "--bot", "nova", "--chat", OWNER, "--text", "Tonight: Inception")
    reason = keel.refused(*send, "--run", FILM_BEAT, "--message-id", "film-0")
    assert '"rating" (keyed by film id)' in reason

    sent = keel.json(
        *send, "--run", FILM_BEAT, "--about-entity", INCEPTION, "--message-id", "film-1"
    )
    assert sent["message_id"] == "film-1"
    assert sent["origin"] == {
        "feature": "coach",
        "reach": [{"context": "pick", "entity": None}, {"context": "rating", "entity": INCEPTION}],
    }
    # The refused post recorded nothing: a reply to it links nothing.
    assert keel.turn(*OWNER_DM, "--reply-to", "film-0").pairs == []


def test_a_reply_to_the_film_post_carries_its_rating_for_keep_turns(keel: Keel) -> None:
    for text in ("good morning", "how is my week going?"):
        ordinary = keel.turn(*OWNER_DM, "--input", text)
        assert ordinary.role == "coach"
        assert ordinary.pairs == []
    film_post(keel, "film-1", INCEPTION)

    reply = keel.turn(*OWNER_DM, "--reply-to", "film-1", "--input", "8/10")
    assert reply.pairs == [("rating", INCEPTION, "reply")]
    assert reply.column("rating", "coach_film") == [INCEPTION]
    # keep is 3: the three turns after the reply still carry it, the fourth does not.
    for _ in range(3):  # carried as the reply link it was, and shown as kept
        follow = keel.turn(*OWNER_DM, "--input", "and tomorrow?")
        assert follow.pairs == [("rating", INCEPTION, "kept")]
        assert follow.column("rating", "coach_film") == [INCEPTION]
    assert keel.turn(*OWNER_DM, "--input", "thanks").pairs == []


def test_a_second_reply_to_the_coach_restarts_the_count(keel: Keel) -> None:
    film_post(keel, "film-1", INCEPTION)
    film_post(keel, "film-2", AMELIE)
    assert keel.turn(*OWNER_DM, "--reply-to", "film-1").pairs == [("rating", INCEPTION, "reply")]
    keel.turn(*OWNER_DM, "--input", "what else?")
    second = keel.turn(*OWNER_DM, "--reply-to", "film-2", "--input", "loved it")
    both = [("rating", AMELIE, "reply"), ("rating", INCEPTION, "reply")]
    assert sorted(second.pairs) == both
    # Without the restart, Inception's link would end one turn after this reply.
    kept = [("rating", AMELIE, "kept"), ("rating", INCEPTION, "kept")]
    for _ in range(3):
        assert sorted(keel.turn(*OWNER_DM).pairs) == kept
    assert keel.turn(*OWNER_DM).pairs == []


# A language coach with four daily practices — one feature, four parts


def test_the_skip_hook_reaches_only_the_practice_its_gate_names(keel: Keel) -> None:
    learner = ("--bot", "tutor", "--chat", LEARNER, "--dm")
    skipped = keel.turn(*learner, "--run", "hook:skip", "--reach", "listen")
    assert skipped.role == "dutch-coach"
    assert skipped.pairs == [("listen", None, "run")]
    assert skipped.column("listen", "dutch_listen_clips") == ["lis-008"]
    # At the feature root the hook's own layout reach is empty.
    assert keel.turn(*learner, "--run", "hook:skip").pairs == []


def test_each_practice_run_carries_its_own_context_only(keel: Keel) -> None:
    for practice in PRACTICES:
        run = keel.turn(
            "--bot", "tutor", "--chat", LEARNER, "--dm", "--run", f"scenario:{practice}-practice"
        )
        assert run.pairs == [(practice, None, "run")]


def test_a_reply_to_a_practice_card_brings_that_practice_back(keel: Keel) -> None:
    for practice in ("knm", "write"):
        keel.json(
            "send",
            "--bot",
            "tutor",
            "--chat",
            LEARNER,
            "--text",
            f"Today's {practice} task",
            "--run",
            f"scenario:{practice}-practice",
            "--card",
            "--message-id",
            f"card-{practice}",
        )
    answer = keel.turn("--bot", "tutor", "--chat", LEARNER, "--dm", "--reply-to", "card-write")
    assert answer.pairs == [("write", None, "reply")]
    assert answer.column("write", "dutch_write_prompts") == ["wri-005"]


# A support desk with a ticket per thread — chat with an entity key


def bind_ticket(keel: Keel, ticket: str = "T-481", thread: str = "77") -> None:
    bound = keel.json(
        "bind",
        "--context",
        "ticket",
        "--entity",
        ticket,
        "--chat",
        FORUM,
        "--thread",
        thread,
        "--role",
        "support",
    )
    assert bound == {
        "bound": {
            "context": "ticket",
            "entity": ticket,
            "chat": FORUM,
            "thread": thread,
            "bot": None,
        }
    }


def test_a_ticket_bound_to_its_topic_rides_every_turn_there(keel: Keel) -> None:
    bind_ticket(keel)
    turn = keel.turn("--bot", "desk", "--chat", FORUM, "--thread", "77", "--input", "any news?")
    assert turn.role == "support"
    assert turn.pairs == [("ticket", "T-481", "chat")]
    assert turn.column("ticket", "support_ticket_card") == ["T-481"]
    assert sorted(turn.column("ticket", "support_sla_today")) == ["high", "low", "normal", "urgent"]
    for other in ("T-479", "T-480", "T-482", "T-483"):
        assert other not in turn.block("ticket")

    elsewhere = keel.turn("--bot", "desk", "--chat", FORUM, "--thread", "78", "--input", "hello")
    assert elsewhere.pairs == []
    assert not elsewhere.mentions("ticket")


def test_a_message_naming_a_ticket_links_it_by_code_with_its_sla_line(keel: Keel) -> None:
    turn = keel.turn("--bot", "desk", "--chat", FORUM, "--input", "Any update on T-481?")
    assert turn.pairs == [("ticket", "T-481", "code")]
    block = turn.block("ticket")
    assert '<section name="sla">\nT-481 is urgent: first reply within 30 minutes' in block
    assert turn.data["engage"] is True, "the desk's chat policy takes a message naming a ticket"
    follow = keel.turn("--bot", "desk", "--chat", FORUM, "--input", "and the refund?")
    assert follow.pairs == [("ticket", "T-481", "code")], "a code link stays for keep turns"
    chatter = keel.turn("--bot", "desk", "--chat", FORUM, "--thread", "9", "--input", "nice day")
    assert chatter.pairs == []
    assert chatter.data["engage"] is None, "anything else is left to the chat rules"


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        pytest.param(
            ["--context", "tickt", "--entity", "T-481", "--role", "support"],
            r"no context 'tickt' .*did you mean 'ticket'\?",
            id="unknown-context",
        ),
        pytest.param(
            ["--context", "ticket", "--role", "support"],
            r"'ticket' is keyed by ticket id: name the entity",
            id="missing-key",
        ),
        pytest.param(
            ["--context", "kb", "--entity", "T-481", "--role", "support"],
            r"'kb' names no entity, so it takes no key \('T-481' given\)",
            id="key-on-unkeyed-context",
        ),
        pytest.param(
            ["--context", "client", "--entity", "acme", "--role", "client-desk"],
            r"role 'client-desk' cannot call context_bind — add context:bind",
            id="role-without-context-bind",
        ),
        pytest.param(
            ["--context", "ticket", "--entity", "T-481", "--role", "sdr"],
            r"role 'sdr' does not list 'ticket' in its `contexts:`",
            id="role-not-listing-it",
        ),
    ],
)
def test_bind_refuses_with_the_reason(keel: Keel, args: list[str], reason: str) -> None:
    said = keel.refused("bind", *args, "--chat", FORUM, "--thread", "77")
    assert re.search(reason, said), said
    assert keel.turn("--bot", "desk", "--chat", FORUM, "--thread", "77").pairs == []


def test_unbind_removes_a_tool_binding_and_refuses_an_access_yaml_one(keel: Keel) -> None:
    bind_ticket(keel)
    unbound = keel.json(
        "unbind", "--context", "ticket", "--chat", FORUM, "--thread", "77", "--role", "support"
    )
    assert unbound == {"unbound": {"context": "ticket", "chat": FORUM, "thread": "77", "bot": None}}
    assert keel.turn("--bot", "desk", "--chat", FORUM, "--thread", "77").pairs == []

    reason = keel.refused("unbind", "--context", "client", "--chat", ACME, "--role", "support")
    assert re.search(r"'client' is bound in chat .* by access\.yaml .* edit that rule", reason)
    assert keel.turn("--bot", "nova", "--chat", ACME).pairs == [("client", "acme", "chat")]


# B2B outreach, an agent per prospect chat — chat from a pipeline


def test_the_prospects_chat_bound_to_the_prospect_carries_their_card(keel: Keel) -> None:
    keel.json(
        "bind",
        "--context",
        "prospect",
        "--entity",
        "p_912",
        "--chat",
        PROSPECT_CHAT,
        "--role",
        "sdr",
    )
    chat = keel.turn(
        "--bot", "desk", "--chat", PROSPECT_CHAT, "--dm", "--input", "sounds interesting"
    )
    assert chat.role == "sdr"
    assert chat.pairs == [("prospect", "p_912", "chat")]
    assert chat.column("prospect", "outreach_prospect") == ["p_912"]


def test_the_drafting_step_carries_the_prospect_and_keys_what_it_sends(keel: Keel) -> None:
    run = ("--run", "scenario:first-touch", "--entity", "p_912")
    draft = keel.turn("--bot", "desk", "--chat", "run:first-touch", "--role", "sdr", *run)
    assert sorted(draft.pairs) == [("offer", None, "run"), ("prospect", "p_912", "run")]
    assert draft.column("prospect", "outreach_prospect") == ["p_912"]
    assert sorted(draft.column("offer", "outreach_offer_plans")) == ["pilot", "team"]

    send = ("send", "--bot", "desk", "--text", "Hi Dana — saw the Tilburg warehouse", *run)
    sent = keel.json(*send, "--chat", OWNER, "--message-id", "draft-1")
    assert sent["origin"]["feature"] == "outreach"
    assert sorted(sent["origin"]["reach"], key=lambda r: r["context"]) == [
        {"context": "offer", "entity": None},
        {"context": "prospect", "entity": "p_912"},
    ]
    # prospect holds reply (the reference brain adds it so the draft comes back keyed, as
    # the worked example tells); offer does not, so only the prospect comes back.
    reply = keel.turn("--bot", "desk", "--chat", OWNER, "--dm", "--reply-to", "draft-1")
    assert reply.role == "sdr"
    assert reply.pairs == [("prospect", "p_912", "reply")]
    assert reply.column("prospect", "outreach_prospect") == ["p_912"]
    assert reply.refused == []

    # In the prospect's chat, bound to p_912, the prospect's card comes by the chat link.
    keel.json(
        "bind",
        "--context",
        "prospect",
        "--entity",
        "p_912",
        "--chat",
        PROSPECT_CHAT,
        "--role",
        "sdr",
    )
    keel.json(*send, "--chat", PROSPECT_CHAT, "--message-id", "draft-2")
    answer = keel.turn("--bot", "desk", "--chat", PROSPECT_CHAT, "--dm", "--reply-to", "draft-2")
    assert answer.pairs == [("prospect", "p_912", "chat")]
    assert answer.column("prospect", "outreach_prospect") == ["p_912"]


# An agency with a group per client — isolation by entity key


def test_each_client_group_carries_only_its_own_clients_card(keel: Keel) -> None:
    for chat, slug in CLIENT_GROUPS.items():
        turn = keel.turn("--bot", "nova", "--chat", chat, "--input", "what is open for us?")
        assert turn.role == "client-desk"
        assert turn.pairs == [("client", slug, "chat")]
        assert turn.column("client", "agency_client_card") == [slug]
        assert turn.catalog == ["client"]


def test_the_acme_group_refuses_globex_and_opens_acme(keel: Keel) -> None:
    turn = keel.turn(
        "--bot",
        "nova",
        "--chat",
        ACME,
        "--open",
        "client=globex",
        "--open",
        "leave",
        "--open",
        "cashflow",
    )
    assert turn.pairs == [("client", "acme", "chat")]
    refused = [(r["context"], r["entity"], r["link"]) for r in turn.refused]
    assert refused == [
        ("client", "globex", "ask"),
        ("leave", None, "ask"),
        ("cashflow", None, "ask"),
    ]
    assert "bound to client 'acme'" in turn.refused[0]["reason"]
    assert all("globex" not in text.lower() for text in turn.texts)

    opened = keel.turn("--bot", "nova", "--chat", ACME, "--open", "client")
    assert opened.pairs == [("client", "acme", "chat")]
    assert opened.refused == []
    assert opened.column("client", "agency_client_card") == ["acme"]


def test_another_bots_turn_in_the_acme_group_is_pinned_to_acme(keel: Keel) -> None:
    plain = keel.turn("--bot", "desk", "--chat", ACME)
    assert plain.role == "support"
    # nova's rule binds the room; it attaches the client only for nova ...
    assert plain.pairs == []
    # ... but pins it for every bot.
    turn = keel.turn("--bot", "desk", "--chat", ACME, "--open", "client=globex", "--open", "client")
    assert turn.pairs == [("client", "acme", "ask")]
    assert [(r["context"], r["entity"]) for r in turn.refused] == [("client", "globex")]
    assert turn.column("client", "agency_client_card") == ["acme"]


def test_a_message_about_globex_cannot_go_into_the_acme_group(keel: Keel) -> None:
    # The room's pin holds for a send as for a link: no globex message exists in acme's
    # group for a reply there to bring globex back (tests/link covers a reply that would).
    reason = keel.refused(
        "send",
        "--bot",
        "nova",
        "--chat",
        ACME,
        "--text",
        "Globex brief",
        "--run",
        "scenario:first-touch",
        "--reach",
        "client=globex",
        "--message-id",
        "m-globex",
    )
    assert f"about client 'globex', but {ACME} is bound to client 'acme'" in reason
    turn = keel.turn(
        "--bot", "nova", "--chat", ACME, "--reply-to", "m-globex", "--input", "and this?"
    )
    assert turn.pairs == [("client", "acme", "chat")]
    assert all("globex" not in text.lower() for text in turn.texts)


# Largo's layout — depth


def test_the_checkin_beat_carries_checkin_and_largo_but_not_film(keel: Keel) -> None:
    largo = ("--bot", "largo", "--chat", LARGO_OWNER, "--dm")
    checkin = keel.turn(*largo, "--run", "heartbeat:morning-checkin")
    assert checkin.role == "largo"
    assert sorted(checkin.pairs) == [("checkin", None, "run"), ("largo", None, "run")]
    assert not checkin.mentions("film")

    film = keel.turn(*largo, "--run", "heartbeat:film-of-day")
    assert sorted(film.pairs) == [("film", None, "run"), ("largo", None, "run")]
    assert not film.mentions("checkin")
    # The beat chooses the film inside its turn: the keyed view has no key yet.
    assert "no entity key" in view_stub(film.block("film"), "largo_film")


# Replies: retention, messages no run sent, several replies in one turn


@pytest.mark.parametrize(
    ("age", "card", "links"),
    [
        pytest.param(timedelta(days=365), False, True, id="a-post-365-days-old-links"),
        pytest.param(
            timedelta(days=365, minutes=1), False, False, id="an-older-post-links-nothing"
        ),
        pytest.param(timedelta(days=3650), True, True, id="a-pending-card-links-at-any-age"),
    ],
)
def test_a_reply_links_within_retention_or_to_a_pending_card(
    keel: Keel, age: timedelta, card: bool, links: bool
) -> None:
    now = datetime.fromisoformat(AT).astimezone(UTC)
    film_post(keel, "old", INCEPTION, *(["--card"] if card else []), at=iso(now - age))
    reply = keel.turn(*OWNER_DM, "--reply-to", "old")
    assert reply.pairs == ([("rating", INCEPTION, "reply")] if links else [])


def test_a_reply_to_a_message_no_run_sent_links_nothing(keel: Keel) -> None:
    sent = keel.json(
        "send", "--bot", "nova", "--chat", OWNER, "--text", "Done.", "--message-id", "plain-1"
    )
    assert sent["origin"] == {"feature": None, "reach": []}
    reply = keel.turn(*OWNER_DM, "--reply-to", "plain-1")
    assert reply.pairs == []
    assert reply.refused == []


def test_a_turn_replying_to_several_messages_carries_every_link(keel: Keel) -> None:
    film_post(keel, "film-1", INCEPTION)
    film_post(keel, "film-2", AMELIE)
    keel.json(
        "send", "--bot", "nova", "--chat", OWNER, "--text", "Noted.", "--message-id", "plain-1"
    )
    merged = keel.turn(
        *OWNER_DM, "--reply-to", "film-1", "--reply-to", "film-2", "--reply-to", "plain-1"
    )
    assert sorted(merged.pairs) == [("rating", AMELIE, "reply"), ("rating", INCEPTION, "reply")]
    assert merged.column("rating", "coach_film", INCEPTION) == [INCEPTION]
    assert merged.column("rating", "coach_film", AMELIE) == [AMELIE]
