"""`keel agent-hook`, fed hook inputs in Claude Code's shapes (files under payloads/).

The payloads carry every field Claude Code sends for each event, so a field Keel does not
read is seen too. The session: start, two prompts (a ticket bound between them), a
compaction, the ticket unbound, a last prompt.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

import keel.cli.hook_cmd  # noqa: F401  (registers the command)
from keel.brain.snapshot_cache import CACHE_FILE
from keel.budget.fit import Stub
from keel.cli import app
from keel.link.values import Conversation, Link
from keel.mcp.hook import stub_line
from keel.runtime.engine import Engine
from tests.mcp.brains import DEV_BRAIN, SENT_BEFORE, STYLE, TICKET, WITHDRAWN_T1
from tests.mcp.conftest import Engines
from tests.mcp.launch import child_env, keel_command

PAYLOADS = Path(__file__).parent / "payloads"
runner = CliRunner()


SESSION_ID = "5f3c8d3e-2a41-4f0e-9c55-0b7f1d2e6a90"  # the recorded payloads' session_id


def payload(name: str) -> str:
    return (PAYLOADS / f"{name}.json").read_text(encoding="utf-8")


def hook(brain: Path, stdin: str, *args: str) -> Result:
    return runner.invoke(app, ["agent-hook", str(brain), *args], input=stdin)


def added(result: Result, event: str) -> str:
    """The context a hook call adds, checked to be the one JSON line the agent reads."""
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    (line,) = result.stdout.splitlines()
    body: dict[str, Any] = json.loads(line)
    assert list(body) == ["hookSpecificOutput"]
    assert body["hookSpecificOutput"]["hookEventName"] == event
    context: str = body["hookSpecificOutput"]["additionalContext"]
    return context


def quiet(result: Result) -> None:
    assert result.exit_code == 0, result.stderr
    assert (result.stdout, result.stderr) == ("", "")


@pytest.fixture
def dev(dev_brain: Path, engines: Engines) -> Engine:
    return engines(dev_brain)


def test_a_recorded_session_with_a_compaction(dev: Engine, database_url: str) -> None:
    brain, db = dev.source.root, ("--db", database_url)
    quiet(hook(brain, payload("session_start_startup"), *db))
    first = added(hook(brain, payload("prompt_checkout"), *db), "UserPromptSubmit")
    dev.bind(context="ticket", entity="T-1", chat="cli")
    second = added(hook(brain, payload("prompt_colour"), *db), "UserPromptSubmit")
    compacted = added(hook(brain, payload("session_start_compact"), *db), "SessionStart")
    dev.unbind(context="ticket", chat="cli")
    last = added(hook(brain, payload("prompt_done"), *db), "UserPromptSubmit")

    assert STYLE in first
    assert TICKET not in first
    assert STYLE not in second, "the style stands as it was sent"
    assert TICKET in second
    assert "T-1 | Checkout button is grey | open" in second
    assert STYLE in compacted, "everything again after a compaction"
    assert TICKET in compacted
    assert SENT_BEFORE not in compacted
    assert last.startswith(WITHDRAWN_T1)
    assert STYLE not in last
    assert TICKET not in last

    session = Conversation(bot="cli", chat="cli", thread=f"session:{SESSION_ID}")
    with dev.store.transaction() as tx:
        history = tx.history(session, before_turn=99, limit=9)
    assert [m.text for m in history] == [
        "Why is the checkout button grey on mobile?",
        "Make it the brand green and add a test.",
        "Ticket closed. Tidy up the CSS next.",
    ]


def test_two_sessions_keep_their_own_links(dev: Engine, database_url: str) -> None:
    brain, db = dev.source.root, ("--db", database_url)
    other = payload("prompt_checkout").replace(SESSION_ID, "another-session")
    added(hook(brain, payload("prompt_checkout"), *db), "UserPromptSubmit")
    dev.bind(context="ticket", entity="T-1", chat="cli", thread=f"session:{SESSION_ID}")
    mine = added(hook(brain, payload("prompt_colour"), *db), "UserPromptSubmit")
    theirs = added(hook(brain, other, *db), "UserPromptSubmit")
    assert TICKET in mine
    assert TICKET not in theirs  # another session of the same agent, in its own thread


@pytest.mark.parametrize(
    "forgetting",
    [pytest.param("pre_compact", id="PreCompact"), pytest.param("session_start_clear", id="clear")],
)
def test_an_event_that_loses_the_conversation_makes_the_next_prompt_send_everything(
    dev: Engine, database_url: str, forgetting: str
) -> None:
    brain, db = dev.source.root, ("--db", database_url)
    added(hook(brain, payload("prompt_checkout"), *db), "UserPromptSubmit")
    quiet(hook(brain, payload("prompt_colour"), *db))  # nothing new: nothing printed
    quiet(hook(brain, payload(forgetting), *db))
    after = added(hook(brain, payload("prompt_done"), *db), "UserPromptSubmit")
    assert STYLE in after


def test_a_resumed_session_keeps_what_it_was_sent(dev: Engine, database_url: str) -> None:
    brain, db = dev.source.root, ("--db", database_url)
    added(hook(brain, payload("prompt_checkout"), *db), "UserPromptSubmit")
    quiet(hook(brain, payload("session_start_resume"), *db))
    quiet(hook(brain, payload("prompt_colour"), *db))  # it holds the style as it is now


SESSION = '"session_id": "s1", "transcript_path": "t.jsonl", "cwd": "."'


@pytest.mark.parametrize(
    ("stdin", "said"),
    [
        pytest.param("", "the hook's input is not JSON (Expecting value", id="empty"),
        pytest.param("prompt: hi", "the hook's input is not JSON", id="not-json"),
        pytest.param("[1, 2]", "the hook's input is a JSON array, not an object", id="an-array"),
        pytest.param("null", "the hook's input is a JSON null, not an object", id="null"),
        pytest.param(
            '{"hook_event_name": "UserPromptSubmit", "prompt": "hi"}',
            "the hook's input has 'session_id': field required",
            id="no-session",
        ),
        pytest.param(
            '{"session_id": 7, "hook_event_name": "UserPromptSubmit", "prompt": "hi"}',
            "the hook's input has 'session_id': input should be a valid string",
            id="session-not-a-string",
        ),
        pytest.param(
            "{" + SESSION + ', "hook_event_name": "UserPromptSubmit"}',
            "a UserPromptSubmit input has no 'prompt'",
            id="no-prompt",
        ),
        pytest.param(
            "{" + SESSION + ', "hook_event_name": "PreToolUse", "tool_name": "Bash"}',
            "the hook's event is 'PreToolUse', which keel agent-hook does not answer — install "
            "it on UserPromptSubmit and SessionStart",
            id="an-event-keel-does-not-answer",
        ),
        pytest.param(
            "{" + SESSION + ', "hook_event_name": "SessionStart", "source": "bogus"}',
            "a SessionStart input's 'source' is 'bogus', which keel agent-hook does not know "
            "— it answers startup, resume, clear, compact",
            id="an-unknown-start",
        ),
    ],
)
def test_malformed_input_is_one_line_on_stderr_and_never_blocks(
    dev_brain: Path, stdin: str, said: str
) -> None:
    result = hook(dev_brain, stdin)
    assert result.exit_code == 1, "exit 2 would block the prompt and erase it"
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"keel agent-hook: {said}")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        pytest.param(
            ["--bot", "nobody"], "no role given and access.yaml has no rule", id="no-role"
        ),
        pytest.param(["--role", "devv"], "no role 'devv' in this brain", id="unknown-role"),
    ],
)
def test_a_refused_turn_never_blocks(
    dev: Engine, database_url: str, args: list[str], said: str
) -> None:
    result = hook(dev.source.root, payload("prompt_checkout"), "--db", database_url, *args)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.startswith(f"keel agent-hook: {said}")


@pytest.mark.parametrize(
    "args",
    [
        pytest.param([], id="no-brain"),
        pytest.param(["brain", "--sesion", "x"], id="unknown-option"),
    ],
)
def test_a_mistyped_command_line_never_blocks(args: list[str]) -> None:
    result = runner.invoke(app, ["agent-hook", *args], input=payload("prompt_checkout"))
    assert (result.exit_code, result.stdout) == (1, "")
    (line,) = result.stderr.splitlines()
    assert line.startswith("keel agent-hook: ")
    assert line.endswith(" — see keel agent-hook --help")


def test_a_mistyped_option_is_named_in_its_one_line() -> None:
    result = runner.invoke(
        app, ["agent-hook", "brain", "--sesion", "x"], input=payload("prompt_checkout")
    )
    assert result.stderr == (
        "keel agent-hook: No such option: --sesion — see keel agent-hook --help\n"
    )


def test_not_a_brain_never_blocks(tmp_path: Path) -> None:
    result = hook(tmp_path / "nowhere", payload("prompt_checkout"))
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.startswith("keel agent-hook: ")


def test_the_hook_as_claude_code_runs_it(dev: Engine, database_url: str) -> None:
    command = keel_command("agent-hook", str(dev.source.root), "--db", database_url)
    done = subprocess.run(
        command,
        input=payload("prompt_checkout"),
        capture_output=True,
        text=True,
        # No warm server left behind: tests/cli/test_hook_client.py runs the hook with one.
        env={**child_env(), "KEEL_HOOK_SERVER": "off"},
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    body = json.loads(done.stdout)
    assert STYLE in body["hookSpecificOutput"]["additionalContext"]


CATALOG = "<context-catalog>"
TICKET_LINE = "- ticket: The ticket being worked on, with its status."


def test_the_catalog_and_where_to_open_it_come_once_per_session(
    dev: Engine, database_url: str
) -> None:
    brain, db = dev.source.root, ("--db", database_url)
    first = added(hook(brain, payload("prompt_checkout"), *db), "UserPromptSubmit")
    quiet(hook(brain, payload("prompt_colour"), *db))  # nothing new, the catalog included
    compacted = added(hook(brain, payload("session_start_compact"), *db), "SessionStart")
    dev.bind(context="ticket", entity="T-1", chat="cli")
    after = added(hook(brain, payload("prompt_done"), *db), "UserPromptSubmit")
    quiet(hook(brain, payload("session_start_clear"), *db))
    cleared = added(hook(brain, payload("prompt_checkout"), *db), "UserPromptSubmit")

    catalog = first.split("\n\n")[-1]
    assert catalog.startswith(CATALOG)
    assert "context_open — a tool of Keel's MCP server (keel mcp)" in catalog
    assert TICKET_LINE in catalog
    assert catalog.endswith("</context-catalog>")
    assert TICKET in after
    assert CATALOG not in after
    assert catalog in compacted, "the agent lost it in the compaction"
    assert catalog in cleared, "and in the clear"
    assert sum(text.count(CATALOG) for text in (first, after)) == 1


def test_a_new_session_gets_the_catalog_again(dev: Engine, database_url: str) -> None:
    brain, db = dev.source.root, ("--db", database_url)
    added(hook(brain, payload("prompt_checkout"), *db), "UserPromptSubmit")
    other = payload("prompt_colour").replace("5f3c8d3e", "00000000")
    assert CATALOG in added(hook(brain, other, *db), "UserPromptSubmit")


def test_a_role_with_nothing_to_open_gets_no_catalog(dev: Engine, database_url: str) -> None:
    first = added(
        hook(dev.source.root, payload("prompt_checkout"), "--db", database_url, "--role", "dev"),
        "UserPromptSubmit",
    )
    assert CATALOG in first
    quiet_role = hook(
        dev.source.root, payload("prompt_colour"), "--db", database_url, "--role", "auditor"
    )
    assert quiet_role.exit_code == 0
    assert CATALOG not in quiet_role.stdout


def test_a_stub_says_where_context_open_is(
    write_brain: Callable[[dict[str, str | bytes]], Path], engines: Engines, database_url: str
) -> None:
    role = DEV_BRAIN["features/shop/dev.agent.md"]
    assert isinstance(role, str)
    narrow = role.replace("agent: cli\n", "agent: cli\ncontexts_budget: {maxActive: 1}\n")
    engine = engines(write_brain({**DEV_BRAIN, "features/shop/dev.agent.md": narrow}))
    engine.bind(context="ticket", entity="T-1", chat="cli")
    text = added(
        hook(engine.source.root, payload("prompt_checkout"), "--db", database_url),
        "UserPromptSubmit",
    )
    assert (
        '<context-stub name="style">left out for room; context_open("style") reads it — a tool '
        "of Keel's MCP server (keel mcp)</context-stub>"
    ) in text


def test_a_context_the_session_holds_is_never_withdrawn_and_stubbed_at_once(
    write_brain: Callable[[dict[str, str | bytes]], Path], engines: Engines, database_url: str
) -> None:
    role = DEV_BRAIN["features/shop/dev.agent.md"]
    assert isinstance(role, str)
    narrow = role.replace("agent: cli\n", "agent: cli\ncontexts_budget: {maxActive: 1}\n")
    engine = engines(write_brain({**DEV_BRAIN, "features/shop/dev.agent.md": narrow}))
    brain, db = engine.source.root, ("--db", database_url)
    first = added(hook(brain, payload("prompt_checkout"), *db), "UserPromptSubmit")
    engine.bind(context="ticket", entity="T-1", chat="cli")  # comes first: style is stubbed
    second = added(hook(brain, payload("prompt_colour"), *db), "UserPromptSubmit")
    compacted = added(hook(brain, payload("session_start_compact"), *db), "SessionStart")
    assert STYLE in first
    assert TICKET in second
    assert 'name="style"' not in second, "the agent holds the style: no withdrawal, no stub"
    assert '<context-stub name="style">' in compacted, "after a compaction it holds nothing"
    with engine.store.transaction() as tx:
        entries = tx.ledger(role="dev")
    stubbed = [e for e in entries if e.context == "style" and e.knob is not None]
    assert len(stubbed) == 2, "the ledger still says what the turns left out"


def test_stub_lines_without_anything_to_call_stay_as_the_budget_wrote_them() -> None:
    link = Link(context="style", entity=None, kind="always", feature="shop")
    too_large = Stub(link=link, knob="chars", text="<too large/>")
    for_room = Stub(link=link, knob="contexts.maxActive", text="<for room/>")
    assert stub_line(too_large, can_open=False) == "<too large/>"
    assert stub_line(for_room, can_open=False) == "<for room/>"
    assert "keel mcp" in stub_line(for_room, can_open=True)


def test_a_stub_too_large_to_attach_says_where_context_open_delivers_it_whole() -> None:
    link = Link(context="style", entity=None, kind="always", feature="shop")
    too_large = Stub(link=link, knob="chars", text="<too large/>")
    assert stub_line(too_large, can_open=True) == (
        '<context-stub name="style">left out: too large to attach; context_open("style") '
        "reads it whole — a tool of Keel's MCP server (keel mcp)</context-stub>"
    )


LINT_CONTEXT = "---\nwhen: [ask]\ndescription: Lint rules.\n---\nRun the linter.\n"


@pytest.mark.parametrize(
    ("code", "said"),
    [
        pytest.param(
            "def match(turn, ctx=None):\n    raise RuntimeError('boom')\n",
            "match raised RuntimeError: boom",
            id="raises",
        ),
        pytest.param(
            "def match(turn, ctx=None):\n    return 'yes'\n",
            "features/shop/lint.context.py",
            id="wrong-shape",
        ),
    ],
)
def test_brain_code_that_fails_is_one_warning_line_on_stderr(
    write_brain: Callable[[dict[str, str | bytes]], Path],
    engines: Engines,
    database_url: str,
    code: str,
    said: str,
) -> None:
    role = DEV_BRAIN["features/shop/dev.agent.md"]
    assert isinstance(role, str)
    files: dict[str, str | bytes] = {
        **DEV_BRAIN,
        "features/shop/dev.agent.md": role.replace("[style, ticket]", "[style, ticket, lint]"),
        "features/shop/lint.context.md": LINT_CONTEXT,
        "features/shop/lint.context.py": (
            f"from keel.code import define_context\n\n{code}\n"
            "context = define_context(match=match)\n"
        ),
    }
    engine = engines(write_brain(files))
    result = hook(engine.source.root, payload("prompt_checkout"), "--db", database_url)
    assert result.exit_code == 0
    (line,) = result.stderr.splitlines()
    assert line.startswith("keel agent-hook: warning: features/shop/lint.context.py")
    assert said in line
    assert STYLE in json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]


# -- the brain through its snapshot cache: every prompt is a new process ------------------

STYLE_FILE = "features/shop/style.context.md"


def test_an_edited_rule_reaches_the_next_prompt_and_a_deleted_one_leaves(
    dev: Engine, database_url: str
) -> None:
    brain, db = dev.source.root, ("--db", database_url)
    first = added(hook(brain, payload("prompt_checkout"), *db), "UserPromptSubmit")
    assert (brain / CACHE_FILE).is_file(), "the first prompt wrote the cache"
    (brain / STYLE_FILE).write_text(
        "---\nwhen: [always]\n---\nWrite the test first, then the code.\n", encoding="utf-8"
    )
    edited = added(hook(brain, payload("prompt_colour"), *db), "UserPromptSubmit")
    (brain / STYLE_FILE).unlink()
    deleted = added(hook(brain, payload("prompt_done"), *db), "UserPromptSubmit")

    assert STYLE in first
    assert "Write the test first, then the code." in edited
    assert STYLE not in edited
    assert '<context-withdrawn name="style"/>' in deleted
    assert "Write the test first" not in deleted


def test_the_hook_says_the_same_with_a_cold_cache_and_a_warm_one(
    write_brain: Callable[[dict[str, str | bytes]], Path], tmp_path: Path
) -> None:
    warm = write_brain(DEV_BRAIN)
    cold = shutil.copytree(warm, tmp_path / "cold")
    said: dict[Path, list[str]] = {warm: [], cold: []}
    events = ["prompt_checkout", "prompt_colour", "session_start_compact", "prompt_done"]
    for event in events:
        for brain in (cold, warm):
            if brain == cold:
                (brain / CACHE_FILE).unlink(missing_ok=True)
            result = hook(brain, payload(event))  # each brain's own database
            assert (result.exit_code, result.stderr) == (0, "")
            said[brain].append(result.stdout)
    assert said[warm] == said[cold]
    assert [bool(out) for out in said[warm]] == [True, False, True, False]  # colour: nothing new


def test_a_corrupt_cache_costs_the_prompt_nothing(dev: Engine, database_url: str) -> None:
    brain, db = dev.source.root, ("--db", database_url)
    (brain / CACHE_FILE).parent.mkdir(exist_ok=True)
    (brain / CACHE_FILE).write_bytes(b'{"format": 1, "files": {"features/shop/style.context.md"')
    assert STYLE in added(hook(brain, payload("prompt_checkout"), *db), "UserPromptSubmit")
    json.loads((brain / CACHE_FILE).read_text(encoding="ascii"))  # written anew


def test_the_hook_names_the_person_it_was_told_it_speaks_for(
    dev: Engine, database_url: str
) -> None:
    result = hook(
        dev.source.root, payload("prompt_checkout"), "--from", "gh:user:ada", "--db", database_url
    )
    assert result.exit_code == 0, result.stderr
    hook(dev.source.root, payload("prompt_checkout"), "--db", database_url)
    found = dev.turns(chat="cli")
    assert [j.request.sender for j in found] == [None, "gh:user:ada"]
