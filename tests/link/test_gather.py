"""Linking, pure: the reference brain's examples with the stores' contents given by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from keel.brain import Brain, ReachEntry, load_brain
from keel.errors import LinkError, UsageError
from keel.link import (
    Binding,
    Conversation,
    KeptLink,
    LinkResult,
    Origin,
    RunRef,
    Stored,
    TurnRequest,
    link_turn,
)
from tests.conftest import WriteBrain

NOW = datetime(2026, 11, 29, 19, 0, tzinfo=UTC)
ACME = "tg:chat:-1002000000101"
FORUM = "tg:chat:-1003000000001"
OWNER = Conversation(bot="nova", chat="tg:user:1")


@pytest.fixture(scope="module")
def brain() -> Brain:
    return load_brain(Path(__file__).parents[2] / "examples" / "brain")


def turn(
    brain: Brain, stored: Stored | None = None, conversation: Conversation = OWNER, **kw: object
) -> LinkResult:
    request = TurnRequest(conversation=conversation, now=NOW, **kw)  # type: ignore[arg-type]
    return link_turn(brain, request, stored or Stored(turn=1))


def pairs(result: LinkResult) -> list[tuple[str, str | None, str]]:
    return [(k.context, k.entity, k.kind) for k in result.links]


def test_the_film_beat_carries_its_pick_but_not_the_reply_context(brain: Brain) -> None:
    result = turn(brain, role="coach", run=RunRef(kind="heartbeat", id="evening-film"))
    assert pairs(result) == [("pick", None, "run")]
    assert result.refused == ()


def test_a_reply_to_the_film_post_brings_back_its_rating_keyed(brain: Brain) -> None:
    origin = Origin(
        bot="nova",
        chat=OWNER.chat,
        message_id="m1",
        sent_at=NOW - timedelta(hours=1),
        feature="coach",
        run="heartbeat:evening-film",
        reach=(ReachEntry(context="pick"), ReachEntry(context="rating", entity="f_204")),
    )
    result = turn(brain, Stored(turn=5, origins=(origin,)), role="coach", reply_to=("m1",))
    assert pairs(result) == [("rating", "f_204", "reply")]
    assert [(k.context, k.entity, k.until_turn) for k in result.keep] == [("rating", "f_204", 8)]
    assert result.restart_features == {"coach"}


def test_a_reply_older_than_retention_links_nothing_unless_a_pending_card(brain: Brain) -> None:
    old = NOW - timedelta(days=400)
    reach = (ReachEntry(context="rating", entity="f_1"),)
    post = Origin(
        bot="nova", chat=OWNER.chat, message_id="m", sent_at=old, feature="coach", reach=reach
    )
    card = Origin(
        bot="nova",
        chat=OWNER.chat,
        message_id="c",
        sent_at=old,
        feature="coach",
        reach=reach,
        pending_card=True,
    )
    assert pairs(turn(brain, Stored(turn=1, origins=(post,)), role="coach", reply_to=("m",))) == []
    assert pairs(turn(brain, Stored(turn=1, origins=(card,)), role="coach", reply_to=("c",))) == [
        ("rating", "f_1", "reply")
    ]


def test_a_reply_to_a_message_no_run_sent_links_nothing(brain: Brain) -> None:
    chrome = Origin(bot="nova", chat=OWNER.chat, message_id="m", sent_at=NOW)
    result = turn(brain, Stored(turn=1, origins=(chrome,)), role="coach", reply_to=("m",))
    assert pairs(result) == []
    assert "not sent by a feature run" in result.log[0]


def test_a_reply_to_a_message_keel_never_recorded_says_so(brain: Brain) -> None:
    result = turn(brain, Stored(turn=1), role="coach", reply_to=("m9",))
    assert pairs(result) == []
    assert result.log == ("reply to m9: not a message this bot sent here, links nothing",)


def test_a_reply_needs_the_role_to_admit_the_context(brain: Brain) -> None:
    origin = Origin(
        bot="nova",
        chat=OWNER.chat,
        message_id="m",
        sent_at=NOW,
        feature="coach",
        reach=(ReachEntry(context="rating", entity="f_1"),),
    )
    result = turn(brain, Stored(turn=1, origins=(origin,)), role="bookkeeper", reply_to=("m",))
    assert pairs(result) == []
    assert "does not list 'rating'" in result.refused[0].reason


def test_kept_links_stick_until_their_turn(brain: Brain) -> None:
    kept = KeptLink(context="rating", entity="f_1", kind="reply", feature="coach", until_turn=4)
    assert pairs(turn(brain, Stored(turn=4, kept=(kept,)), role="coach")) == [
        ("rating", "f_1", "reply")
    ]
    assert pairs(turn(brain, Stored(turn=5, kept=(kept,)), role="coach")) == []


def test_another_roles_kept_link_is_left_out_without_a_refusal(brain: Brain) -> None:
    # Role support's code linked ticket T-481 in this chat; the bookkeeper speaks next.
    kept = KeptLink(context="ticket", entity="T-481", kind="code", feature="support", until_turn=6)
    stored = Stored(turn=5, kept=(kept,))
    other = turn(brain, stored, role="bookkeeper")
    assert pairs(other) == []
    assert other.refused == ()
    assert pairs(turn(brain, stored, role="support")) == [("ticket", "T-481", "code")]


def test_another_roles_kept_open_is_left_out_unless_this_role_may_open_it(brain: Brain) -> None:
    # Role support opened the policy; the bookkeeper, who may not open it, speaks next.
    kept = KeptLink(context="policy", entity=None, kind="ask", feature="support", until_turn=6)
    stored = Stored(turn=5, kept=(kept,))
    other = turn(brain, stored, role="bookkeeper")
    assert pairs(other) == []
    assert other.refused == ()
    assert pairs(turn(brain, stored, role="support")) == [("policy", None, "ask")]


def test_a_kept_link_the_role_admits_still_meets_the_pin(brain: Brain) -> None:
    room = Conversation(bot="nova", chat=ACME)
    kept = KeptLink(context="client", entity="globex", kind="code", feature="agency", until_turn=9)
    stored = Stored(turn=5, kept=(kept,))
    pinned = turn(brain, stored, conversation=room)
    assert pinned.role == "client-desk"
    assert pairs(pinned) == [("client", "acme", "chat")]
    assert [(r.context, r.entity, r.kind) for r in pinned.refused] == [("client", "globex", "code")]
    assert "bound to client 'acme'" in pinned.refused[0].reason
    # A role that does not admit client is never carried globex's rows either.
    other = turn(brain, stored, conversation=room, role="support")
    assert ("client", "globex") not in {(k.context, k.entity) for k in other.links}
    assert other.refused == ()


def test_the_acme_group_carries_acme_and_refuses_globex(brain: Brain) -> None:
    room = Conversation(bot="nova", chat=ACME)
    result = turn(
        brain,
        conversation=room,
        open=(
            ReachEntry(context="client", entity="globex"),
            ReachEntry(context="client"),
        ),
    )
    assert result.role == "client-desk"
    assert pairs(result) == [("client", "acme", "chat")]
    assert [r.kind for r in result.refused] == ["ask"]
    assert "bound to client 'acme'" in result.refused[0].reason
    assert result.pins == {"client": "acme"}


def test_one_link_offered_twice_in_a_pinned_room_is_refused_once(brain: Brain) -> None:
    # An engage policy and a context's match both name the other client: one refusal.
    globex = ReachEntry(context="client", entity="globex")
    result = turn(brain, conversation=Conversation(bot="nova", chat=ACME), attach=(globex, globex))
    assert [(r.context, r.entity, r.kind) for r in result.refused] == [("client", "globex", "code")]


def test_another_bots_rule_pins_the_room_but_attaches_only_for_its_bot(brain: Brain) -> None:
    other_bot = Conversation(bot="desk", chat=ACME)
    result = turn(brain, conversation=other_bot, role="client-desk")
    assert pairs(result) == []
    assert result.pins == {"client": "acme"}
    assert result.log == (
        "'client' is pinned to 'acme' in this chat by bot 'nova' (an access.yaml rule): it "
        "attaches to that bot's turns only, and holds this bot's links there to 'acme'",
    )
    opened = turn(
        brain, conversation=other_bot, role="client-desk", open=(ReachEntry(context="client"),)
    )
    assert pairs(opened) == [("client", "acme", "ask")]


def test_a_tool_binding_links_the_thread_and_pins_it(brain: Brain) -> None:
    topic = Conversation(bot="desk", chat=FORUM, thread="77")
    bound = Binding(context="ticket", entity="T-481", chat=FORUM, thread="77")
    stored = Stored(turn=1, bindings=(bound,))
    result = turn(
        brain, stored, conversation=topic, attach=(ReachEntry(context="ticket", entity="T-999"),)
    )
    assert pairs(result) == [("ticket", "T-481", "chat")]
    assert "bound to ticket 'T-481'" in result.refused[0].reason
    other_topic = Conversation(bot="desk", chat=FORUM, thread="78")
    assert pairs(turn(brain, stored, conversation=other_topic)) == []


def test_another_bots_thread_binding_says_why_nothing_attached(brain: Brain) -> None:
    bound = Binding(context="ticket", entity="T-481", chat=FORUM, thread="77", bot="desk")
    nova = Conversation(bot="nova", chat=FORUM, thread="77")
    result = turn(brain, Stored(turn=1, bindings=(bound,)), conversation=nova, role="client-desk")
    assert pairs(result) == []
    assert result.log == (
        "'ticket' is pinned to 'T-481' in thread 77 by bot 'desk' (a context_bind call): it "
        "attaches to that bot's turns only, and holds this bot's links there to 'T-481'",
    )


def test_a_thread_binding_beats_a_whole_chat_binding(brain: Brain) -> None:
    topic = Conversation(bot="desk", chat=FORUM, thread="77")
    stored = Stored(
        turn=1,
        bindings=(
            Binding(context="ticket", entity="T-1", chat=FORUM),
            Binding(context="ticket", entity="T-2", chat=FORUM, thread="77"),
        ),
    )
    assert pairs(turn(brain, stored, conversation=topic)) == [("ticket", "T-2", "chat")]


def test_the_dutch_root_hook_takes_the_reach_its_gate_gives(brain: Brain) -> None:
    result = turn(
        brain,
        role="dutch-coach",
        run=RunRef(kind="hook", id="skip"),
        reach=(ReachEntry(context="listen"),),
    )
    assert pairs(result) == [("listen", None, "run")]
    bare = turn(brain, role="dutch-coach", run=RunRef(kind="hook", id="skip"))
    assert pairs(bare) == []


def test_an_entity_keys_the_reachs_one_keyed_context(brain: Brain) -> None:
    result = turn(brain, role="sdr", run=RunRef(kind="scenario", id="first-touch"), entity="p_912")
    assert ("prospect", "p_912", "run") in pairs(result)
    assert ("offer", None, "run") in pairs(result)


def test_an_entity_with_no_keyed_context_in_reach_fails_naming_them(brain: Brain) -> None:
    with pytest.raises(LinkError, match=r"exactly one keyed context .* found 0 \(none\)"):
        turn(
            brain, role="dutch-coach", run=RunRef(kind="scenario", id="listen-practice"), entity="x"
        )


def test_a_heartbeat_tick_carries_no_key(brain: Brain) -> None:
    with pytest.raises(LinkError, match="carry no key"):
        turn(brain, role="coach", run=RunRef(kind="heartbeat", id="evening-film"), entity="f_1")


def test_always_contexts_ride_every_turn_of_a_role_that_admits_them(brain: Brain) -> None:
    family = Conversation(bot="nova", chat="tg:chat:-1001000000001")
    assert pairs(turn(brain, conversation=family)) == [("shopping", None, "always")]
    assert pairs(turn(brain, role="coach")) == []


def test_code_entries_are_validated_and_the_turn_goes_on(brain: Brain) -> None:
    result = turn(
        brain,
        role="support",
        attach=(
            ReachEntry(context="ticket", entity="T-481"),
            ReachEntry(context="tickt", entity="T-1"),
            ReachEntry(context="kb", entity="T-1"),
            ReachEntry(context="ticket", entity="x" * 201),
        ),
    )
    assert pairs(result) == [("ticket", "T-481", "code")]
    reasons = [r.reason for r in result.refused]
    assert "did you mean 'ticket'?" in reasons[0]
    assert "takes no key" in reasons[1]
    assert "1 to 200 characters" in reasons[2]


def test_an_open_needs_context_read(brain: Brain) -> None:
    result = turn(brain, role="family", open=(ReachEntry(context="shopping"),))
    assert "cannot call context_open" in result.refused[0].reason


def test_an_open_outside_role_reach_and_bindings_is_refused(brain: Brain) -> None:
    result = turn(brain, role="support", open=(ReachEntry(context="client"),))
    assert pairs(result) == []
    assert "is not open to role 'support'" in result.refused[0].reason


def test_strongest_link_wins_per_pair(brain: Brain) -> None:
    topic = Conversation(bot="desk", chat=FORUM, thread="77")
    stored = Stored(turn=1, bindings=(Binding(context="ticket", entity="T-1", chat=FORUM),))
    result = turn(
        brain,
        stored,
        conversation=topic,
        attach=(ReachEntry(context="ticket"),),
        open=(ReachEntry(context="ticket"),),
    )
    assert pairs(result) == [("ticket", "T-1", "chat")]


def test_a_missing_role_and_no_rule_is_a_usage_error(brain: Brain) -> None:
    with pytest.raises(UsageError, match=r"name a role \(--role on the command line"):
        turn(brain, conversation=Conversation(bot="nobody", chat="x"))
    with pytest.raises(UsageError, match="did you mean 'coach'"):
        turn(brain, role="coahc")


def test_a_run_with_no_role_named_runs_as_its_entitys_agent(brain: Brain) -> None:
    result = turn(brain, run=RunRef(kind="heartbeat", id="evening-film"))
    assert result.role == "coach"
    assert pairs(result) == [("pick", None, "run")]


def test_a_tool_binding_for_one_bot_pins_the_room_for_every_bot(brain: Brain) -> None:
    room = "tg:chat:555"
    stored = Stored(
        turn=1, bindings=(Binding(context="client", entity="acme", chat=room, bot="nova"),)
    )
    desk = turn(
        brain,
        stored,
        conversation=Conversation(bot="desk", chat=room),
        role="client-desk",
        attach=(ReachEntry(context="client", entity="globex"),),
    )
    assert pairs(desk) == []
    assert "bound to client 'acme'" in desk.refused[0].reason
    nova = turn(brain, stored, conversation=Conversation(bot="nova", chat=room), role="client-desk")
    assert pairs(nova) == [("client", "acme", "chat")]


@pytest.mark.parametrize(
    ("run", "kw", "match"),
    [
        pytest.param("scenario:first-touch", {"entity": ""}, "1 to 200 characters", id="empty"),
        pytest.param("scenario:first-touch", {"entity": "p" * 201}, "got 201", id="long"),
        pytest.param(
            "heartbeat:evening-film",
            {"reach": (ReachEntry(context="rating", entity="f_9"),)},
            "ticks carry no key",
            id="keyed-heartbeat-reach",
        ),
    ],
)
def test_keys_given_to_a_run_are_checked(
    brain: Brain, run: str, kw: dict[str, object], match: str
) -> None:
    kind, _, ident = run.partition(":")
    with pytest.raises(LinkError, match=match):
        turn(brain, run=RunRef(kind=kind, id=ident), **kw)  # type: ignore[arg-type]


def test_a_role_whose_file_did_not_load_is_named_with_the_reason(
    write_brain: WriteBrain,
) -> None:
    root = write_brain(
        {
            "constitution/MANIFEST.yaml": "model: {name: m}\n",
            "features/desk/clerk.agent.md": "---\ncapabilities: [context:read\n---\nHi.\n",
        }
    )
    loaded = load_brain(root)
    with pytest.raises(UsageError, match=r"role 'clerk': its file .*clerk\.agent\.md did not"):
        link_turn(loaded, TurnRequest(conversation=OWNER, now=NOW, role="clerk"), Stored(turn=1))
    with pytest.raises(UsageError, match=r"no role 'clark' in this brain"):
        link_turn(loaded, TurnRequest(conversation=OWNER, now=NOW, role="clark"), Stored(turn=1))


def test_an_open_of_a_pair_a_stronger_link_carries_marks_that_link_asked(brain: Brain) -> None:
    acme = Conversation(bot="nova", chat=ACME)
    opened = turn(brain, conversation=acme, open=(ReachEntry(context="client"),))
    assert [(k.context, k.entity, k.kind, k.asked) for k in opened.links] == [
        ("client", "acme", "chat", True)
    ]
    plain = turn(brain, conversation=acme)
    assert [(k.kind, k.asked) for k in plain.links] == [("chat", False)]
    # Kept from an earlier open, the pair is still asked for on the next turns.
    kept = KeptLink(context="client", entity="acme", kind="ask", feature="agency", until_turn=3)
    later = turn(brain, Stored(turn=2, kept=(kept,)), conversation=acme)
    assert [(k.kind, k.asked) for k in later.links] == [("chat", True)]
