"""access.yaml, read one rule at a time: a bad rule fails alone, a broken file refuses all.

What each failure refuses is `Access.refusal`'s answer for a (bot, chat, DM) turn: the
whole file failed → every turn; a group rule failed → every bot in that chat; a template
failed → the turns of its bot that it would have governed, with no fallback to a broader
rule (a failed `dm` does not fall back to `default`).
"""

from __future__ import annotations

import pytest

from keel.brain import Brain, load_brain
from keel.brain.constitution import Access
from tests.conftest import WriteBrain

ACCESS = "constitution/access.yaml"
VALID = """\
bots:
  nova:
    default: { role: concierge }
    dm: { role: coach }
    chats:
      "tg:chat:-1":
        role: desk
        contexts: { client: acme }
      "tg:chat:-2":
        role: desk
        contexts: { client: globex }
  desk:
    default: { role: support }
    chats:
      "tg:chat:-1": { role: support }
"""


def load(write_brain: WriteBrain, text: str | bytes) -> Brain:
    return load_brain(write_brain({ACCESS: text}))


def pins(access: Access) -> dict[str, dict[str, str | None]]:
    return {r.scope: dict(r.contexts) for r in access.rules if r.is_group and r.contexts}


def test_a_valid_file_reads_every_rule(write_brain: WriteBrain) -> None:
    brain = load(write_brain, VALID)
    access = brain.access
    assert brain.skips == ()
    assert access.failed == ()
    assert access.broken is None
    assert pins(access) == {"tg:chat:-1": {"client": "acme"}, "tg:chat:-2": {"client": "globex"}}
    assert access.refusal("nova", "tg:chat:-1") is None


def _break_globex(rule: str) -> str:
    return VALID.replace(
        '      "tg:chat:-2":\n        role: desk\n',
        f'      "tg:chat:-2":\n        role: desk\n{rule}',
    )


@pytest.mark.parametrize(
    ("text", "scope", "chat", "line", "reason"),
    [
        pytest.param(
            _break_globex("        colour: blue\n"),
            "chat",
            "tg:chat:-2",
            11,
            "unknown key 'colour' under 'bots.nova.chats.tg:chat:-2' — expected one of: "
            "contexts, role, title",
            id="unknown-key",
        ),
        pytest.param(
            _break_globex("        role: desk desk\n"),
            "chat",
            "tg:chat:-2",
            None,
            "",
            id="duplicate-key-is-yaml",
        ),
        pytest.param(
            VALID.replace(
                "default: { role: concierge }",
                "default: { role: concierge, contexts: { client: acme } }",
            ),
            "default",
            None,
            3,
            "'contexts:' under 'bots.nova.default' is refused: a bot-default or DM rule is a "
            "template for many chats",
            id="contexts-under-default",
        ),
        pytest.param(
            VALID.replace('"tg:chat:-2":', '"":'),
            "chat",
            "",
            9,
            "an empty chat id under 'bots.nova.chats' — write the chat's id",
            id="empty-chat-id",
        ),
        pytest.param(
            VALID.replace('"tg:chat:-2":', "-1002:"),
            "chat",
            "-1002",
            9,
            "the chat id -1002 is written as a number — chat ids are text; quote it",
            id="number-chat-id",
        ),
        pytest.param(
            VALID.replace('"tg:chat:-2":', '"' + "c" * 300 + '":'),
            "chat",
            "c" * 300,
            9,
            "a chat id of 300 characters, over the limit of 256",
            id="long-chat-id",
        ),
        pytest.param(
            VALID.replace('"tg:chat:-2":', "default:"),
            "chat",
            "default",
            9,
            "the chat id 'default' under 'bots.nova.chats' is the name of a template rule",
            id="chat-named-default",
        ),
        pytest.param(
            VALID.replace('"tg:chat:-2":', "dm:"),
            "chat",
            "dm",
            9,
            "the chat id 'dm' under 'bots.nova.chats' is the name of a template rule",
            id="chat-named-dm",
        ),
        pytest.param(
            VALID.replace(
                "contexts: { client: globex }", "contexts: { client: " + "k" * 201 + " }"
            ),
            "chat",
            "tg:chat:-2",
            11,
            "'bots.nova.chats.tg:chat:-2.contexts.client' string should have at most 200",
            id="long-entity-key",
        ),
        pytest.param(
            VALID.replace("dm: { role: coach }", "dm: coach"),
            "dm",
            None,
            4,
            "'bots.nova.dm' must be a mapping of keys to values",
            id="rule-not-a-mapping",
        ),
        pytest.param(
            VALID.replace("dm: { role: coach }", "dm: { role: 'the coach' }"),
            "dm",
            None,
            4,
            "'bots.nova.dm.role' is 'the coach', which is not a valid name",
            id="bad-role-name",
        ),
    ],
)
def test_a_bad_rule_fails_alone_and_every_other_rule_holds(
    write_brain: WriteBrain, text: str, scope: str, chat: str | None, line: int | None, reason: str
) -> None:
    brain = load(write_brain, text)
    access = brain.access
    if not reason:  # a duplicate key is broken YAML: the file as a whole
        assert access.broken is not None
        return
    assert access.broken is None
    [failure] = access.failed
    assert (failure.bot, failure.scope, failure.chat) == ("nova", scope, chat)
    assert failure.line == line
    assert reason in failure.reason
    assert [(s.path, s.line) for s in brain.skips] == [(ACCESS, line)]
    # Acme's room stays pinned and answered, whatever failed.
    assert pins(access)["tg:chat:-1"] == {"client": "acme"}
    assert access.refusal("nova", "tg:chat:-1") is None
    assert access.refusal("desk", "tg:chat:-1") is None
    if chat is not None:
        for bot in ("nova", "desk", "other"):
            assert access.refusal(bot, chat) is not None
            assert access.refusal(bot, chat, dm=True) is not None


def test_a_bot_whose_name_is_unusable_fails_each_of_its_rules(write_brain: WriteBrain) -> None:
    brain = load(
        write_brain,
        VALID + '  "desk bot":\n    default: { role: x }\n    chats:\n      "tg:chat:-7": {}\n',
    )
    access = brain.access
    assert access.broken is None
    assert [(f.bot, f.scope, f.chat) for f in access.failed] == [
        ("desk bot", "default", None),
        ("desk bot", "chat", "tg:chat:-7"),
    ]
    assert "the bot name 'desk bot' is not usable" in access.failed[0].reason
    assert access.refusal("nova", "tg:chat:-7") is not None
    assert pins(access)["tg:chat:-2"] == {"client": "globex"}


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        pytest.param("bots:\n  nova: [\n", 3, "broken YAML", id="yaml"),
        pytest.param(
            "- nova\n", 1, "access.yaml must be a mapping with `bots:` at its top", id="list"
        ),
        pytest.param(
            "bot:\n  nova: {}\n",
            1,
            "unknown key 'bot' at the top level — did you mean 'bots'?",
            id="top-key",
        ),
        pytest.param("bots: [nova]\n", 1, "'bots' must be a mapping of bot names", id="bots-list"),
        pytest.param(
            "bots:\n  nova: helper\n",
            2,
            "'bots.nova' must be a mapping of default, dm and chats",
            id="bot-entry",
        ),
        pytest.param(
            "bots:\n  nova:\n    chat:\n      'tg:chat:-1': {contexts: {client: acme}}\n",
            3,
            "unknown key 'chat' under 'bots.nova' — did you mean 'chats'?",
            id="bot-key",
        ),
        pytest.param(
            "bots:\n  nova:\n    chats: [a]\n",
            3,
            "'bots.nova.chats' must be a mapping",
            id="chats-list",
        ),
        pytest.param(
            "bots:\n  nova:\n    chats:\n      ? [a]\n      : {}\n",
            3,
            "the chat id ('a',) is not text",
            id="list-key",
        ),
        pytest.param("bots:\n  true: {}\n", 1, "the bot name True is not text", id="bool-bot"),
        pytest.param(b"", None, "the file is empty, so no rule can be read", id="empty"),
        pytest.param(b"\xff\xfe", 1, "not UTF-8", id="encoding"),
    ],
)
def test_what_no_one_rule_owns_fails_the_file_and_refuses_every_turn(
    write_brain: WriteBrain, text: str | bytes, line: int | None, reason: str
) -> None:
    brain = load(write_brain, text)
    access = brain.access
    assert access.broken is not None
    assert access.broken.line == line
    assert reason in access.broken.reason
    assert access.rules == ()
    for bot in ("nova", "desk"):
        for chat in ("tg:chat:-1", "tg:user:5", "default"):
            for dm in (False, True):
                refusal = access.refusal(bot, chat, dm=dm)
                assert refusal is not None
                assert refusal.startswith(f"{ACCESS}{'' if line is None else f':{line}'}: ")
                assert "no bot answers anywhere until the file is fixed" in refusal


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("# no rules yet\n", id="comments-only"),
        pytest.param("bots: {}\n", id="no-bots"),
        pytest.param("bots:\n  nova:\n", id="a-bot-with-no-rules"),
    ],
)
def test_a_file_that_says_no_rules_is_not_broken(write_brain: WriteBrain, text: str) -> None:
    access = load(write_brain, text).access
    assert (access.broken, access.failed, access.rules) == (None, (), ())
    assert access.refusal("nova", "tg:chat:-1") is None


# -- what a failed template refuses ----------------------------------------------------


def test_a_failed_default_refuses_its_bots_chats_without_a_rule_of_their_own(
    write_brain: WriteBrain,
) -> None:
    access = load(
        write_brain, VALID.replace("default: { role: concierge }", "default: { rol: x }")
    ).access
    assert [(f.bot, f.scope) for f in access.failed] == [("nova", "default")]
    refused = access.refusal("nova", "tg:chat:-9")
    assert refused is not None
    assert refused.startswith(
        f"{ACCESS}:3: the bot 'nova' default rule did not load (unknown key 'rol'"
    )
    assert access.refusal("nova", "tg:chat:-1") is None, "its group rule governs there"
    assert access.refusal("nova", "tg:user:5", dm=True) is None, "its DM rule governs DMs"
    assert access.refusal("desk", "tg:chat:-9") is None, "another bot's default holds"


def test_a_failed_dm_rule_refuses_dms_and_does_not_fall_back_to_the_default(
    write_brain: WriteBrain,
) -> None:
    access = load(
        write_brain, VALID.replace("dm: { role: coach }", "dm: { role: coach, x: 1 }")
    ).access
    refused = access.refusal("nova", "tg:user:5", dm=True)
    assert refused is not None
    assert "the bot 'nova' DM rule did not load" in refused
    assert access.rule_for("nova", "tg:user:5", dm=True) is not None, "the default is there..."
    assert access.refusal("nova", "tg:chat:-9") is None, "...and still answers other chats"
    assert access.refusal("desk", "tg:user:5", dm=True) is None, "desk has no DM rule: default"


@pytest.mark.parametrize(
    ("bot", "chat", "dm"),
    [
        ("nova", "tg:chat:-1", False),  # a group rule, with a pin
        ("desk", "tg:chat:-1", False),  # another bot's rule in the same group
        ("nova", "tg:user:5", True),  # a DM, under the dm rule
        ("nova", "tg:chat:-9", False),  # no rule of its own: the default
        ("other", "tg:chat:-2", False),  # a bot with no rules at all
    ],
)
def test_room_answers_every_question_of_a_bot_in_a_chat_at_once(
    write_brain: WriteBrain, bot: str, chat: str, dm: bool
) -> None:
    for text in (VALID, _break_globex("        x: 1\n")):
        access = load(write_brain, text).access
        room = access.room(bot, chat, dm=dm)
        assert room.refusal == access.refusal(bot, chat, dm=dm)
        assert room.closed == access.room_refusal(chat)
        assert room.rule == access.rule_for(bot, chat, dm=dm)
        assert room.group_rules == access.group_rules(chat)


def test_a_failed_group_rule_closes_the_room_for_every_bot(write_brain: WriteBrain) -> None:
    access = load(write_brain, _break_globex("        x: 1\n")).access
    for bot in ("nova", "desk"):
        room = access.room(bot, "tg:chat:-2")
        assert room.closed is not None
        assert room.refusal == room.closed
    assert access.room("nova", "tg:chat:-1").closed is None
