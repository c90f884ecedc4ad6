"""The loader: every reason a file is skipped, and that a bad file skips only itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from keel.brain import Brain, load_brain
from keel.errors import UsageError
from tests.conftest import WriteBrain

GOOD_CONTEXT = "---\ndescription: Tickets.\nwhen: [run, ask]\n---\nBe kind.\n"
ROLE = "---\ncontexts: [ticket]\ncapabilities: [context:read]\n---\nYou are support.\n"


def skips_of(brain: Brain) -> list[tuple[str, int | None, str]]:
    return [(s.path, s.line, s.reason) for s in brain.skips]


def only_skip(brain: Brain) -> tuple[str, int | None, str]:
    found = skips_of(brain)
    assert len(found) == 1, found
    return found[0]


def test_a_good_brain_loads_whole(write_brain: WriteBrain) -> None:
    root = write_brain(
        {
            "features/support/ticket.context.md": (
                "---\ndescription: A ticket.\nentity: ticket id\nwhen: [chat, ask]\n"
                "data:\n  - support_sla_today\n  - { view: support_ticket_card, by: ticket_id }\n"
                "chars: 3000\nkeep: 2\n---\nQuote the SLA from the card.\n"
            ),
            "features/support/support.agent.md": ROLE,
            "features/support/open.hook.md": "---\nevent: ticket.opened\nagent: support\n---\nGo.\n",
        }
    )
    brain = load_brain(root)
    assert brain.skips == ()
    ticket = brain.contexts["ticket"]
    assert ticket.feature == "support"
    assert ticket.when == {"chat", "ask"}
    assert ticket.entity == "ticket id"
    assert [(v.view, v.by) for v in ticket.data] == [
        ("support_sla_today", None),
        ("support_ticket_card", "ticket_id"),
    ]
    assert (ticket.chars, ticket.keep) == (3000, 2)
    assert ticket.instructions == "Quote the SLA from the card."
    assert brain.roles["support"].contexts == ("ticket",)
    assert brain.entity("hook", "open") is not None


@pytest.mark.parametrize(
    ("content", "line", "reason"),
    [
        pytest.param(b"", None, "the file is empty", id="empty"),
        pytest.param(b"  \n\n", None, "the file is empty", id="blank"),
        pytest.param(b"---\x00\x01binary", None, "the file is binary", id="binary"),
        pytest.param(b"---\nwhen: [run]\n---\ncaf\xe9\n", 4, "the file is not UTF-8", id="latin1"),
        pytest.param("Just text.\n", 1, "no frontmatter", id="no-frontmatter"),
        pytest.param("---\nwhen: [run]\nBody\n", 1, "never closed", id="unclosed"),
        pytest.param("---\nwhen: [run\n---\nx\n", 3, "broken YAML", id="broken-yaml"),
        pytest.param("---\n- run\n---\nx\n", 2, "must be a mapping", id="not-a-mapping"),
        pytest.param("---\nwhen: [run]\nwhen: [ask]\n---\nx\n", 3, "broken YAML", id="dup-key"),
        pytest.param(
            "---\nwhne: [run]\n---\nx\n",
            2,
            "unknown key 'whne' — did you mean 'when'?",
            id="unknown-key",
        ),
        pytest.param(
            "---\nwhen: [run, reploy]\n---\nx\n",
            2,
            "unknown when word 'reploy' — did you mean 'reply'?",
            id="unknown-when",
        ),
        pytest.param(
            "---\nwhen:\n  - run\n  - code\n---\nx\n",
            4,
            "unknown when word 'code'",
            id="code-is-not-a-when-word",
        ),
        pytest.param("---\nwhen: []\n---\nx\n", 2, "'when: []' is refused", id="empty-when"),
        pytest.param("---\ndescription: x\n---\nx\n", None, "missing key 'when'", id="no-when"),
        pytest.param(
            "---\nwhen: [run]\nchars: lots\n---\nx\n",
            3,
            "'chars' input should be a valid integer",
            id="wrong-type",
        ),
        pytest.param(
            "---\nwhen: [run]\nchars: -5\n---\nx\n",
            3,
            "'chars' is -5, below the minimum of 1 (docs/limits.md) — use a larger value",
            id="negative-chars",
        ),
        pytest.param(
            "---\nwhen: run\n---\nx\n",
            2,
            "'when' input should be a valid list",
            id="when-not-list",
        ),
        pytest.param(
            "---\nwhen: [run]\ndata: [instructions]\n---\nx\n",
            3,
            "may not be named 'instructions'",
            id="view-named-instructions",
        ),
        pytest.param(
            "---\nwhen: [run]\ndata:\n  - {view: a, bye: b}\n---\nx\n",
            4,
            "unknown key 'bye' under 'data.0' — did you mean 'by'?",
            id="unknown-nested-key",
        ),
        pytest.param(
            '---\nwhen: [run]\ndata: ["drop table"]\n---\nx\n',
            3,
            "not a valid name",
            id="bad-view-name",
        ),
    ],
)
def test_a_bad_context_file_is_skipped_with_its_reason(
    write_brain: WriteBrain, content: str | bytes, line: int | None, reason: str
) -> None:
    root = write_brain(
        {
            "features/support/bad.context.md": content,
            "features/support/good.context.md": GOOD_CONTEXT,
        }
    )
    brain = load_brain(root)
    path, got_line, got_reason = only_skip(brain)
    assert path == "features/support/bad.context.md"
    assert got_line == line
    assert reason in got_reason
    assert set(brain.contexts) == {"good"}, "one bad file never stops the rest"


def test_several_problems_in_one_file_are_all_reported(write_brain: WriteBrain) -> None:
    root = write_brain(
        {
            "features/f/x.context.md": "---\nwhen: [runn]\nchars: big\nkep: 2\n---\nx\n",
        }
    )
    found = skips_of(load_brain(root))
    assert [(line, reason.split(" —")[0]) for _, line, reason in found] == [
        (2, "unknown when word 'runn'"),
        (
            3,
            "'chars' input should be a valid integer, unable to parse string as an integer "
            "(got 'big')",
        ),
        (4, "unknown key 'kep'"),
    ]


@pytest.mark.parametrize(
    ("path", "content", "reason"),
    [
        pytest.param(
            "features/support/support.agent.md",
            "---\ncontexts: [ticket]\ncontexts_budget: {chars: 10, maxActve: 3}\n---\nx\n",
            "unknown key 'maxActve' under 'contexts_budget' — did you mean 'maxActive'?",
            id="role-nested-key",
        ),
        pytest.param(
            "features/support/support.agent.md",
            "---\nagent: browser\n---\nx\n",
            "'agent' cannot be 'browser'",
            id="role-agent-kind",
        ),
        pytest.param(
            "features/b/chase.heartbeat.md",
            "---\nschedule: every day\nagent: r\n---\nx\n",
            "'every day' has 2 field(s); a schedule has five",
            id="heartbeat-cron",
        ),
        pytest.param(
            "features/b/chase.heartbeat.md",
            "---\nagent: r\n---\nx\n",
            "missing key 'schedule'",
            id="heartbeat-no-schedule",
        ),
        pytest.param(
            "features/b/opened.hook.md",
            "---\nevent: x\nreach: [{context: a, entiy: b}]\n---\n",
            "unknown key 'entiy' under 'reach.0' — did you mean 'entity'?",
            id="hook-reach-key",
        ),
        pytest.param(
            "features/b/FEATURE.md",
            "---\nenabled: maybe\n---\n",
            "'enabled' input should be a valid boolean",
            id="feature-enabled",
        ),
        pytest.param(
            "features/b/deep/FEATURE.md",
            "---\nenabled: true\n---\n",
            "FEATURE.md belongs at the feature root",
            id="feature-nested",
        ),
        pytest.param(
            "features/loose.context.md",
            GOOD_CONTEXT,
            "must sit inside a feature",
            id="outside-feature",
        ),
        pytest.param(
            "features/b/bad id!.context.md",
            GOOD_CONTEXT,
            "is not a usable id",
            id="bad-id",
        ),
        pytest.param(
            "constitution/MANIFEST.yaml",
            "contexts:\n  chars: 100\n  maxActiv: 2\n",
            "unknown key 'maxActiv' under 'contexts' — did you mean 'maxActive'?",
            id="manifest-key",
        ),
        pytest.param(
            "constitution/MANIFEST.yaml",
            "contexts: [1, 2\n",
            "broken YAML",
            id="manifest-yaml",
        ),
        pytest.param(
            "constitution/access.yaml",
            "bots:\n  nova:\n    dm: {role: r, contexts: {client: acme}}\n",
            "a bot-default or DM rule is a template",
            id="access-dm-contexts",
        ),
        pytest.param(
            "constitution/access.yaml",
            "bots:\n  nova:\n    chats:\n      g1: {rol: r}\n",
            "unknown key 'rol' under 'bots.nova.chats.g1' — did you mean 'role'?",
            id="access-group-key",
        ),
        pytest.param("state/001.sql", b"create table \xff;", "not UTF-8", id="sql-encoding"),
    ],
)
def test_every_kind_of_file_is_checked_strictly(
    write_brain: WriteBrain, path: str, content: str | bytes, reason: str
) -> None:
    root = write_brain({path: content, "features/support/good.context.md": GOOD_CONTEXT})
    brain = load_brain(root)
    got_path, _, got_reason = only_skip(brain)
    assert got_path == path
    assert reason in got_reason
    assert "good" in brain.contexts


def test_a_duplicate_id_loads_neither_and_each_names_the_other(write_brain: WriteBrain) -> None:
    root = write_brain(
        {
            "features/support/ticket.context.md": GOOD_CONTEXT,
            "features/billing/deep/ticket.context.md": GOOD_CONTEXT,
            "features/billing/other.context.md": GOOD_CONTEXT,
        }
    )
    brain = load_brain(root)
    assert set(brain.contexts) == {"other"}
    found = {path: reason for path, _, reason in skips_of(brain)}
    assert (
        "features/billing/deep/ticket.context.md has the same file name"
        in found["features/support/ticket.context.md"]
    )
    assert (
        "features/support/ticket.context.md has the same file name"
        in found["features/billing/deep/ticket.context.md"]
    )


def test_ids_are_unique_per_kind_not_across_kinds(write_brain: WriteBrain) -> None:
    root = write_brain(
        {
            "features/support/support.context.md": GOOD_CONTEXT,
            "features/support/support.agent.md": ROLE,
            "features/support/support.hook.md": "---\nevent: e\n---\n",
            "features/support/support.heartbeat.md": "---\nschedule: '0 9 * * *'\n---\n",
        }
    )
    brain = load_brain(root)
    assert brain.skips == ()
    assert {"hook:support", "heartbeat:support"} <= set(brain.entities)


def test_a_switched_off_feature_takes_its_contexts_entities_and_code(
    write_brain: WriteBrain,
) -> None:
    root = write_brain(
        {
            "features/coach/FEATURE.md": "---\nenabled: false\n---\nThe coach.\n",
            "features/coach/film.context.md": GOOD_CONTEXT,
            "features/coach/film.context.py": "context = None\n",
            "features/coach/evening.heartbeat.md": "---\nschedule: '0 19 * * *'\nagent: coach\n---\n",
            "features/coach/coach.agent.md": ROLE,
            "features/support/ticket.context.md": GOOD_CONTEXT,
        }
    )
    brain = load_brain(root)
    assert set(brain.contexts) == {"ticket"}
    assert brain.entities == {}
    assert dict(brain.switched_off) == {"film": "coach", "heartbeat:evening": "coach"}
    assert brain.orphan_code == (), "code of a switched-off feature is not an orphan"
    assert "coach" in brain.roles, "roles are not switched off with a feature"
    assert brain.features["coach"].enabled is False


def test_code_pairs_with_its_spec_and_orphans_are_listed(write_brain: WriteBrain) -> None:
    root = write_brain(
        {
            "features/support/ticket.context.md": GOOD_CONTEXT,
            "features/support/ticket.context.py": "context = None\n",
            "features/support/lost.context.py": "context = None\n",
            "features/support/opened.hook.md": "---\nevent: e\n---\n",
            "features/support/opened.hook.py": "hook = None\n",
        }
    )
    brain = load_brain(root)
    assert brain.contexts["ticket"].code_path == "features/support/ticket.context.py"
    hook = brain.entity("hook", "opened")
    assert hook is not None
    assert hook.code_path == "features/support/opened.hook.py"
    assert brain.orphan_code == ("features/support/lost.context.py",)


def test_layout_reach_is_the_entity_directory_and_above(write_brain: WriteBrain) -> None:
    run = "---\nwhen: [run]\n---\nx\n"
    root = write_brain(
        {
            "features/largo/largo.context.md": run,
            "features/largo/asked.context.md": "---\ndescription: d\nwhen: [ask]\n---\nx\n",
            "features/largo/morning/checkin/checkin.context.md": run,
            "features/largo/morning/checkin/checkin.heartbeat.md": "---\nschedule: '0 8 * * *'\n---\n",
            "features/largo/evening/film/film.context.md": "---\nwhen: [reply]\nentity: id\n---\nx\n",
            "features/largo/evening/film/film-of-day.heartbeat.md": (
                "---\nschedule: '0 20 * * *'\n---\n"
            ),
            "features/largo/evening/quiet.hook.md": "---\nevent: e\nreach: []\n---\n",
            "features/other/other.context.md": run,
        }
    )
    brain = load_brain(root)

    def reach(key: str) -> list[str]:
        entity = brain.entities[key]
        return [r.context for r in brain.reach_of(entity)]

    assert reach("heartbeat:checkin") == ["checkin", "largo"]
    assert reach("heartbeat:film-of-day") == ["film", "largo"]
    assert reach("hook:quiet") == []


def test_a_brain_without_constitution_gets_defaults(write_brain: WriteBrain) -> None:
    brain = load_brain(write_brain({"features/a/a.context.md": GOOD_CONTEXT}))
    assert brain.manifest.state_rows == 20
    assert brain.manifest.state_read_timeout_ms == 2000
    assert brain.manifest.retention_days == 365
    assert brain.access.rules == ()


def test_access_rules_are_read_per_bot_and_scope(write_brain: WriteBrain) -> None:
    root = write_brain(
        {
            "constitution/access.yaml": (
                "bots:\n  nova:\n    default: {role: concierge}\n    chats:\n"
                "      'tg:chat:-100':\n        role: client-desk\n        title: Acme\n"
                "        contexts: {client: acme, policy: }\n"
                "  desk:\n    dm: {role: support}\n"
            ),
        }
    )
    access = load_brain(root).access
    group = access.rule_for("nova", "tg:chat:-100")
    assert group is not None
    assert group.is_group
    assert dict(group.contexts) == {"client": "acme", "policy": None}
    fallback = access.rule_for("nova", "tg:chat:-999")
    assert fallback is not None
    assert fallback.role == "concierge"
    dm = access.rule_for("desk", "tg:user:5", dm=True)
    assert dm is not None
    assert dm.role == "support"
    assert access.rule_for("desk", "tg:chat:-100") is None
    assert [r.bot for r in access.group_rules("tg:chat:-100")] == ["nova"]


def test_a_missing_root_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such directory"):
        load_brain(tmp_path / "nowhere")


def test_files_keel_does_not_read_are_ignored(write_brain: WriteBrain) -> None:
    root = write_brain(
        {
            "features/a/README.md": "# notes, not a brain file\n",
            "features/a/helpers.py": "x = 1\n",
            "features/a/.keel/junk.context.md": "",
            "features/a/a.context.md": GOOD_CONTEXT,
            "notes/x.context.md": "",
        }
    )
    brain = load_brain(root)
    assert brain.skips == ()
    assert set(brain.contexts) == {"a"}


def test_a_file_that_cannot_be_read_is_skipped_with_the_reason(write_brain: WriteBrain) -> None:
    root = write_brain({"features/a/a.context.md": GOOD_CONTEXT})
    (root / "features/a/gone.context.md").symlink_to(root / "features/a/nowhere.md")
    brain = load_brain(root)
    path, line, reason = only_skip(brain)
    assert line is None
    assert path == "features/a/gone.context.md"
    assert reason.startswith("cannot read: No such file or directory")
    assert set(brain.contexts) == {"a"}


@pytest.mark.parametrize(
    ("path", "advice"),
    [
        pytest.param("state/001.sql", "write the SQL it should apply", id="sql"),
        pytest.param("features/a/b.context.md", "write frontmatter between '---'", id="md"),
    ],
)
def test_an_empty_file_is_told_what_its_kind_of_file_holds(
    write_brain: WriteBrain, path: str, advice: str
) -> None:
    brain = load_brain(write_brain({"features/a/a.context.md": GOOD_CONTEXT, path: " \n"}))
    skipped, _, reason = only_skip(brain)
    assert skipped == path
    assert reason.startswith("the file is empty — ")
    assert advice in reason


SCENARIO = (
    "---\nagent: support\nbot: desk\nchat: tg:chat:-1\nreach: [ticket]\nhooks:\n"
    "  - event: ticket.reopened\n"
    "  - { event: ticket.closed, id: closing, prompt: Say goodbye., chat: tg:chat:-2 }\n"
    "---\nHandle the ticket.\n"
)


def test_a_scenarios_inline_hooks_are_hooks_with_its_reach(write_brain: WriteBrain) -> None:
    root = write_brain(
        {
            "features/support/ticket.context.md": GOOD_CONTEXT,
            "features/support/support.agent.md": ROLE,
            "features/support/handle.scenario.md": SCENARIO,
        }
    )
    brain = load_brain(root)
    assert brain.skips == ()
    reopened = brain.entity("hook", "handle-ticket-reopened")
    closing = brain.entity("hook", "closing")
    assert reopened is not None
    assert closing is not None
    assert (reopened.event, reopened.prompt, reopened.chat) == (
        "ticket.reopened",
        "Handle the ticket.",
        "tg:chat:-1",
    )
    assert (closing.event, closing.prompt, closing.chat, closing.bot) == (
        "ticket.closed",
        "Say goodbye.",
        "tg:chat:-2",
        "desk",
    )
    assert brain.reach_of(closing) == brain.reach_of(brain.entities["scenario:handle"])
    assert (closing.agent, closing.scenario, closing.path) == (
        "support",
        "handle",
        "features/support/handle.scenario.md",
    )


def test_an_inline_hook_that_takes_a_hooks_id_is_skipped_alone(write_brain: WriteBrain) -> None:
    root = write_brain(
        {
            "features/support/ticket.context.md": GOOD_CONTEXT,
            "features/support/support.agent.md": ROLE,
            "features/support/handle.scenario.md": SCENARIO,
            "features/support/closing.hook.md": "---\nevent: x\nagent: support\n---\nGo.\n",
        }
    )
    brain = load_brain(root)
    path, _, reason = only_skip(brain)
    assert path == "features/support/handle.scenario.md"
    assert "inline hook 'closing'" in reason
    assert "features/support/closing.hook.md" in reason
    assert brain.entity("hook", "handle-ticket-reopened") is not None
    assert brain.entity("scenario", "handle") is not None


def test_an_inline_hook_with_no_event_fails_its_scenario_file(write_brain: WriteBrain) -> None:
    root = write_brain(
        {
            "features/support/support.agent.md": ROLE,
            "features/support/handle.scenario.md": (
                "---\nagent: support\nhooks:\n  - prompt: Go.\n---\nHandle.\n"
            ),
        }
    )
    path, line, reason = only_skip(load_brain(root))
    assert path == "features/support/handle.scenario.md"
    assert "event" in reason
    assert line is not None


# -- the quick paths: each gives what the slow one gives ------------------------------------

CONTEXT_FRONTS = {
    "plain": "description: Due. Chase, politely.\nentity: invoice id\nwhen: [chat, ask]\n"
    "data:\n  - billing_overdue\n  - { view: billing_card, by: invoice_id }\nchars: 1500\n",
    "everything": "when: [run, always]\nkeep: 0\ncodeTimeoutMs: 600000\ndata: []\n",
    "null-description": "description:\nwhen: [reply]\n",
    "chars-zero": "when: [chat]\nchars: 0\n",
    "chars-yes": "when: [chat]\nchars: true\n",
    "chars-text": "when: [chat]\nchars: '12'\n",
    "no-when": "description: x\n",
    "when-empty": "when: []\n",
    "when-unknown": "when: [chat, sometimes]\n",
    "instructions-view": "when: [chat]\ndata: [instructions]\n",
    "instructions-entry": "when: [chat]\ndata:\n  - { view: instructions }\n",
    "bad-view": "when: [chat]\ndata: [billing-card]\n",
    "long-view": "when: [chat]\ndata: [" + "v" * 64 + "]\n",
    "bad-by": "when: [chat]\ndata:\n  - { view: v, by: 2x }\n",
    "unknown-entry-key": "when: [chat]\ndata:\n  - { view: v, on: id }\n",
    "unknown-key": "when: [chat]\nwhn: [chat]\n",
    "empty-entity": "when: [chat]\nentity: ''\n",
    "data-null": "when: [chat]\ndata:\n",
}


def contexts_both_ways(
    write_brain: WriteBrain, monkeypatch: pytest.MonkeyPatch
) -> tuple[Brain, Brain]:
    from keel.brain import files

    root = write_brain(
        {
            f"features/billing/{name}.context.md": f"---\n{front}---\nBody of {name}.\n"
            for name, front in CONTEXT_FRONTS.items()
        }
    )
    quick = load_brain(root)
    with monkeypatch.context() as patch:
        patch.setattr(files, "_plain_context", lambda _front: None)  # the model checks all
        checked = load_brain(root)
    return quick, checked


def test_a_plainly_valid_context_is_built_as_its_model_would_build_it(
    write_brain: WriteBrain, monkeypatch: pytest.MonkeyPatch
) -> None:
    quick, checked = contexts_both_ways(write_brain, monkeypatch)
    assert quick.contexts == checked.contexts
    # `chars: '12'` is the model's to take (it reads the text as a number).
    assert set(quick.contexts) == {"plain", "everything", "null-description", "chars-text"}
    assert skips_of(quick) == skips_of(checked)
    assert len(quick.skips) == len(CONTEXT_FRONTS) - 4  # every other one, with its line


def test_the_reference_brain_loads_the_same_by_either_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from keel.brain import document, files

    examples = Path(__file__).resolve().parents[2] / "examples" / "brain"
    quick = load_brain(examples)
    monkeypatch.setattr(files, "_plain_context", lambda _front: None)
    monkeypatch.setattr(document, "plain_load", declined)  # libyaml's nodes, as before
    slow = load_brain(examples)
    assert quick.contexts == slow.contexts
    assert quick.roles == slow.roles
    assert skips_of(quick) == skips_of(slow)


def declined(_text: str) -> object:
    from keel.brain.quickyaml import Unsure

    raise Unsure


SPLITS = [
    "---\n---\n",
    "---\na: b\n---\nbody\n",
    "---\na: b\n---",
    "---\na: b\n---\n\n  body  \n\n",
    "---\na: b\n--- \nbody\n",
    "---\na: b\r\n---\nbody\n",
    "---\na: b\u2028c: d\n---\nbody\n",
    "---\na: b\n---\nbody\u2028with a break\n---\nmore\n",
    "---\na: b\nc: '---'\n---\nbody\n",
]


@pytest.mark.parametrize("text", SPLITS)
def test_a_file_is_cut_at_its_fences_as_its_lines_say(text: str) -> None:
    from keel.brain.document import split

    lines = text.splitlines(keepends=True)
    index = next(i for i in range(1, len(lines)) if lines[i].rstrip() == "---")
    front_text = "".join(lines[1:index])
    doc = split("f.md", text)
    assert (doc.front_text, doc.body) == (front_text, "".join(lines[index + 1 :]).strip())
