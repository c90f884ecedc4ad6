"""Access fails closed: a bad access.yaml rule refuses its room, never unpins it.

The reference brain's agency keeps one room per client, each pinned by its access.yaml
rule. Here that file is broken in one rule, or as a whole, and every way a turn can name
its role — none (the rule's), `--role`, a run, a DM, another bot — is tried: the rooms
whose rule loaded keep their pin, and a room whose rule did not, or every room when the
file did not load at all, is refused with the file, line and reason.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from keel.brain import Brain, ReachEntry, load_brain
from keel.errors import Refused
from keel.link import Conversation, LinkResult, RunRef, Stored, TurnRequest, link_turn
from keel.link.bindings import effective_bindings
from keel.link.gather import resolve_role
from keel.tools.binding import check_bind, check_unbind

REFERENCE = Path(__file__).resolve().parents[2] / "examples" / "brain"
ACCESS = "constitution/access.yaml"
NOW = datetime(2026, 11, 29, 19, 0, tzinfo=UTC)
ACME, GLOBEX, INITECH = "tg:chat:-1002000000101", "tg:chat:-1002000000102", "tg:chat:-1002000000103"
FAMILY = "tg:chat:-1001000000001"
GLOBEX_RULE = '      "tg:chat:-1002000000102":\n        role: client-desk\n'


def brain_with(tmp_path: Path, edit: str | None = None, text: str | None = None) -> Brain:
    root = tmp_path / "brain"
    shutil.copytree(REFERENCE, root, ignore=shutil.ignore_patterns(".keel"))
    path = root / ACCESS
    original = path.read_text(encoding="utf-8")
    if edit is not None:
        assert GLOBEX_RULE in original
        path.write_text(original.replace(GLOBEX_RULE, GLOBEX_RULE + edit), encoding="utf-8")
    if text is not None:
        path.write_text(text, encoding="utf-8")
    return load_brain(root)


def turn(brain: Brain, chat: str, bot: str = "nova", **kw: object) -> LinkResult:
    request = TurnRequest(conversation=Conversation(bot=bot, chat=chat), now=NOW, **kw)  # type: ignore[arg-type]
    return link_turn(brain, request, Stored(turn=1))


# Every way a turn can choose its role, and what it asks for: it all must be refused.
ANY_TURN: list[dict[str, object]] = [
    {},
    {"role": "client-desk"},
    {"role": "client-desk", "open": (ReachEntry(context="client", entity="acme"),)},
    {"role": "client-desk", "attach": (ReachEntry(context="client", entity="initech"),)},
    {"run": RunRef(kind="heartbeat", id="evening-film")},
    {"role": "coach", "dm": True},
]


@pytest.fixture
def one_bad_rule(tmp_path: Path) -> Brain:
    """Globex's rule gains an unknown key: that rule fails, and only that rule."""
    return brain_with(tmp_path, edit="        colour: blue\n")


def test_one_bad_access_rule_keeps_every_other_room_pinned(one_bad_rule: Brain) -> None:
    for room, client in ((ACME, "acme"), (INITECH, "initech")):
        for bot in ("nova", "desk"):
            result = turn(
                one_bad_rule,
                room,
                bot=bot,
                role="client-desk",
                open=(ReachEntry(context="client", entity="globex"),),
            )
            assert result.pins == {"client": client}
            # The desk's room is pinned by nova's rule, and the refusal says whose it is.
            by = "" if bot == "nova" else " by bot 'nova'"
            assert [r.reason for r in result.refused] == [
                f"this chat is bound to client '{client}'{by}; 'globex' belongs to another entity "
                f"and is refused here — ask without a key to read '{client}'"
            ]
    assert turn(one_bad_rule, ACME).role == "client-desk", "its rule still names the role"
    assert turn(one_bad_rule, FAMILY).role == "family"


@pytest.mark.parametrize("kw", ANY_TURN)
@pytest.mark.parametrize("bot", ["nova", "desk"])
def test_the_room_of_the_bad_rule_is_refused_whatever_the_turn_names(
    one_bad_rule: Brain, kw: dict[str, object], bot: str
) -> None:
    with pytest.raises(
        Refused,
        match=r"^constitution/access\.yaml:19: the rule of bot 'nova' chat "
        r"'tg:chat:-1002000000102' did not load \(unknown key 'colour' .*\); access rules fail "
        r"closed, so no bot answers in this chat until the rule is fixed",
    ):
        turn(one_bad_rule, GLOBEX, bot=bot, **kw)


def test_no_binding_is_made_for_the_room_of_the_bad_rule(one_bad_rule: Brain) -> None:
    with pytest.raises(Refused, match="no bot answers in this chat"):
        effective_bindings(one_bad_rule, Conversation(bot="nova", chat=GLOBEX), ())
    acme = effective_bindings(one_bad_rule, Conversation(bot="nova", chat=ACME), ())
    assert acme["client"].entity == "acme"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("bots:\n  nova: [\n", id="yaml-error"),
        pytest.param("bots:\n  nova:\n    chat: {}\n", id="unknown-bot-key"),
        pytest.param("", id="empty"),
    ],
)
@pytest.mark.parametrize("chat", [ACME, GLOBEX, FAMILY, "tg:user:1", "tg:chat:-5"])
def test_a_broken_access_yaml_refuses_every_turn(tmp_path: Path, text: str, chat: str) -> None:
    brain = brain_with(tmp_path, text=text)
    assert brain.access.broken is not None
    for kw in ANY_TURN:
        for bot in ("nova", "desk", "tutor"):
            with pytest.raises(
                Refused,
                match=r"^constitution/access\.yaml(:\d+)?: .*; access rules fail "
                r"closed, so no bot answers anywhere until the file is fixed",
            ):
                turn(brain, chat, bot=bot, **kw)
            request = TurnRequest(
                conversation=Conversation(bot=bot, chat=chat), now=NOW, role="coach"
            )
            with pytest.raises(Refused, match="no bot answers anywhere"):
                resolve_role(brain, request)


def test_a_chat_keyed_like_a_template_is_refused_and_the_template_stands(tmp_path: Path) -> None:
    text = (REFERENCE / ACCESS).read_text(encoding="utf-8")
    family = f'      "{FAMILY}":'
    assert family in text
    brain = brain_with(tmp_path, text=text.replace(family, '      "default":'))
    [failure] = brain.access.failed
    assert (failure.bot, failure.chat) == ("nova", "default")
    assert turn(brain, "tg:chat:-5").role == "bookkeeper", "the real default still answers"
    with pytest.raises(Refused, match=r"the chat id 'default' under 'bots\.nova\.chats' is the"):
        turn(brain, "default", role="family")


def test_the_bind_tool_takes_no_binding_into_the_room_of_the_bad_rule(one_bad_rule: Brain) -> None:
    desk = one_bad_rule.roles["support"]
    with pytest.raises(Refused, match="no bot answers in this chat"):
        check_bind(one_bad_rule, desk, context="ticket", entity="T-1", chat=GLOBEX)
    with pytest.raises(Refused, match="no bot answers in this chat"):
        check_unbind(one_bad_rule, context="ticket", chat=GLOBEX)
    assert check_bind(one_bad_rule, desk, context="ticket", entity="T-1", chat="tg:chat:9")
