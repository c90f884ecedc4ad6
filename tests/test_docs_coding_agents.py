"""docs/coding-agents.md runs as written, on the page's shop brain (`tests.mcp.brains`'
DEV_BRAIN, whose `dev` role is the page's block word for word):

- the hook session: the page's `$ echo ... | keel agent-hook shop` prints the page's JSON,
  `keel bind` its line, and the next prompts (after the bind, after the unbind) add the
  two blocks the page shows as text;
- its failures: the two commands print the page's line and exit 1, and brain code that
  raises is the page's one warning line on stderr while the hook still answers;
- its settings files: `.claude/settings.json` installs a hook command that Claude Code
  would run and `.mcp.json` the server the page names, each read as JSON;
- `claude mcp add` (Claude Code's CLI, not run here) registers the command `.mcp.json`
  holds: that command parses as a `keel` command line, and started as a client starts it,
  it serves the `dev` room's tools over stdio; the HTTP form's URL is where `--http` serves;
- "One rule once": the same always-on rule for Cursor and Windsurf imports as one context,
  and the report prints the page's lines.

Commands run from the folder that holds `shop/`, in their own processes (no warm server,
so the brain is read as a cold hook reads it); nothing printed varies."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import sys
from pathlib import Path

from mcp import Client, ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.types import TextContent
from typer.core import TyperGroup
from typer.main import get_command

from keel.cli import app
from keel.link.values import Conversation
from keel.mcp.room import Room
from keel.mcp.server import build_server
from keel.mcp.transports import HTTP_PATH
from keel.runtime.engine import Engine
from keel.tools import CODING_TOOLS
from tests.mcp.brains import DEV_BRAIN
from tests.mcp.launch import child_env, keel_command
from tests.runtime.driver import copy_reference
from tests.test_docs_tutorial import FENCE, commands, shell

DOC = Path(__file__).parents[1] / "docs" / "coding-agents.md"
PAGE = DOC.read_text(encoding="utf-8")


def blocks(lang: str) -> list[str]:
    return [text for found, _, text in FENCE.findall(PAGE) if found == lang]


def block_with(lang: str, start: str) -> str:
    found = [text for text in blocks(lang) if text.startswith(start)]
    assert len(found) == 1, f"one {lang or 'plain'} block opens with {start!r}"
    return found[0]


def shop(folder: Path) -> Path:
    brain = folder / "shop"
    for rel, text in DEV_BRAIN.items():
        target = brain / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(str(text), encoding="utf-8")
    return brain


def environment() -> dict[str, str]:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "KEEL_HOOK_SERVER": "off",
    }
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        env.pop(name, None)
    return env


def prompt(folder: Path, text: str) -> str:
    """What the next prompt of session s1 adds, as the page prints it (the text alone)."""
    event = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": text}
    done = shell(
        f"echo {shlex.quote(json.dumps(event))} | keel agent-hook shop", folder, environment()
    )
    assert done.returncode == 0, done.stderr
    added: str = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    return added


def test_the_page_role_is_the_shop_brain_role() -> None:
    role = block_with("yaml", "# features/shop/dev.agent.md\n").split("\n", 1)[1]
    assert role == DEV_BRAIN["features/shop/dev.agent.md"]


def test_a_hook_session_prints_what_the_page_shows(tmp_path: Path) -> None:
    shop(tmp_path)
    env = environment()
    first, bound = commands(block_with("", '$ echo \'{"session_id": "s1"'))
    for command in (first, bound):
        done = shell(command.line, tmp_path, env)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == command.expected.splitlines(), command.line
    after_bind = block_with("", '<context name="ticket" entity="T-1">')
    assert prompt(tmp_path, "Make the button blue.") == after_bind.rstrip("\n")
    unbind = re.search(r"\(`(keel unbind shop [^`]*)`\)", PAGE)
    assert unbind
    done = shell(unbind[1], tmp_path, env)
    assert done.returncode == 0, done.stderr
    withdrawn = block_with("", '<context-withdrawn name="ticket"')
    assert prompt(tmp_path, "Done?") == withdrawn.rstrip("\n")


def test_a_failing_hook_prints_one_line_and_exits_1(tmp_path: Path) -> None:
    shop(tmp_path)
    ran = commands(block_with("", "$ echo 'prompt: hi' | keel agent-hook shop"))
    assert len(ran) == 2
    for command in ran:
        done = shell(command.line, tmp_path, environment())
        assert done.returncode == 0  # the page's `; echo "exit $?"` ends each line
        assert (done.stderr + done.stdout).splitlines() == command.expected.splitlines()


def test_brain_code_that_raises_is_the_page_warning(tmp_path: Path) -> None:
    (shown,) = [b for b in blocks("") if b.startswith("keel agent-hook: warning:")]
    path = re.search(r"warning: (\S+\.py):(\d+):", shown)
    assert path
    brain = shop(tmp_path)
    role = brain / "features/shop/dev.agent.md"
    role.write_text(role.read_text().replace("[style, ticket]", "[style, ticket, lint]"), "utf-8")
    (brain / "features/shop/lint.context.md").write_text(
        "---\nwhen: [chat]\n---\nLint before you commit.\n", encoding="utf-8"
    )
    # The page's line 4 raises.
    (brain / path[1]).write_text(
        "from keel.code import define_context\n\ndef match(turn, ctx):\n"
        "    raise RuntimeError('boom')\n\ncontext = define_context(match=match)\n",
        encoding="utf-8",
    )
    event = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": "hi"}
    done = shell(
        f"echo {shlex.quote(json.dumps(event))} | keel agent-hook shop", tmp_path, environment()
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == shown.splitlines()
    assert "Keep functions small" in done.stdout


def test_the_settings_files_install_the_page_commands() -> None:
    settings = json.loads(block_with("json", '{\n  "hooks"'))
    for event in ("UserPromptSubmit", "SessionStart"):
        (entry,) = settings["hooks"][event]
        (hook,) = entry["hooks"]
        assert hook["command"] == 'keel agent-hook "$CLAUDE_PROJECT_DIR/brain" --role dev'
    assert settings["hooks"]["SessionStart"][0]["matcher"] == "compact|clear"
    servers = [json.loads(b) for b in blocks("json") if b.startswith('{\n  "mcpServers"')]
    assert servers
    for server in servers:
        assert server["mcpServers"]["keel"] == {
            "command": "keel",
            "args": ["mcp", "brain", "--role", "dev"],
        }


# The page's MCP transcript: `NAME(ARGS)`, then what the server answers (after a `→`, how it
# failed), then the answer's text, up to a blank line.
CALL = re.compile(r"^(\w+)\((.*?)\)(?:\s+→ (isError|error -?\d+))?$")


def transcript() -> tuple[list[str], list[tuple[str, str, str | None, str]]]:
    block = block_with("", "tools: ")
    head, *entries = block.rstrip("\n").split("\n\n")
    calls = []
    for entry in entries:
        first, answer = entry.split("\n", 1)
        call = CALL.match(first)
        assert call, first
        calls.append((call[1], call[2], call[3], answer))
    return head.removeprefix("tools: ").split(", "), calls


def test_the_acme_room_transcript_is_what_the_server_answers(tmp_path: Path) -> None:
    listed, calls = transcript()
    assert calls, "the page's calls were found"
    brain = copy_reference(tmp_path / "brain")
    engine = Engine(brain, f"sqlite:///{tmp_path / 'k.db'}", tools=CODING_TOOLS, watch=False)
    engine.apply_state()
    room = Room(conversation=Conversation(bot="nova", chat="tg:chat:-1002000000101"))

    async def session() -> tuple[list[str], list[tuple[str | None, str]]]:
        answered: list[tuple[str | None, str]] = []
        async with Client(build_server(engine, room), mode="legacy") as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            for name, args, _, _ in calls:
                if name == "read_resource":
                    try:
                        await client.read_resource(json.loads(args))
                    except MCPError as refused:
                        answered.append((f"error {refused.error.code}", str(refused)))
                    continue
                result = await client.call_tool(name, json.loads(args))
                (content,) = result.content
                assert isinstance(content, TextContent)
                answered.append(("isError" if result.is_error else None, content.text))
        return names, answered

    try:
        names, answered = asyncio.run(session())
    finally:
        engine.close()
    assert names == listed
    assert answered == [(failed, answer) for _, _, failed, answer in calls]


# The worked example's repository. The page shows two of its rules whole (they are taken
# from the page); the others are written here, with the texts its turns print where it
# prints them, and with lengths that give the `chars:` its report shows.
ACME_WEB = {
    "CLAUDE.md": (
        "# acme-web\n\nA Next.js storefront and its API. Use pnpm, never npm. Run `pnpm test` "
        "before you commit,\nand keep commits small with messages in the imperative.\n"
    ),
    "frontend/AGENTS.md": (
        "# Frontend\n\nUse the design tokens in src/theme.ts; never hard-code a colour or a "
        "font size.\n"
    ),
    ".cursor/rules/api-design.mdc": (
        "---\ndescription: Designing or changing an HTTP endpoint — status codes, errors, "
        "pagination.\n---\nReturn 404 for a missing resource and 422 for a bad body, with a "
        "message that names the field. Page lists with a cursor, never an offset, and say in "
        "the response how to ask for the next page.\n"
    ),
    ".claude/skills/release/CHECKLIST.md": (
        "# Release checklist\n\n1. Update CHANGELOG.md with every change since the last tag.\n"
        "2. Run pnpm test and pnpm build; both must pass.\n3. Bump the version in "
        "package.json.\n4. Ask for a review of the release notes.\n"
    ),
    ".claude/skills/release/scripts/tag.sh": '#!/bin/sh\ngit tag "v$1" && git push --tags\n',
    ".github/instructions/tests.instructions.md": (
        '---\napplyTo: "**/*.test.ts"\n---\nWrite tests with Vitest. One `describe` per '
        "module; name each test for the behaviour it\nchecks. Mock the network, never the "
        "module under test.\n"
    ),
    ".windsurf/rules/security.md": (
        "---\ntrigger: model_decision\ndescription: Handling secrets, tokens or user data.\n"
        "---\nNever log a token or a password. Read secrets from the environment.\n"
    ),
    "frontend/src/Cart.tsx": "export const Cart = () => null;\n",
    "frontend/src/cart.ts": "export const total = 0;\n",
    "frontend/src/cart.test.ts": 'test("total", () => {});\n',
}
# A rule line the terminal fills: its length is the terminal's, not the page's.
RULE = re.compile(r"─{3,}$")


def elided(expected: list[str], actual: list[str]) -> bool:
    """The page's lines are the output's, each `…` line standing for any lines."""
    if not expected:
        return not actual
    if expected[0] == "…":
        return any(elided(expected[1:], actual[n:]) for n in range(len(actual) + 1))
    return bool(actual) and expected[0] == actual[0] and elided(expected[1:], actual[1:])


def lines_of(text: str) -> list[str]:
    return [RULE.sub("───", line.rstrip()) for line in text.rstrip("\n").splitlines()]


def test_the_worked_import_prints_what_the_page_shows(tmp_path: Path) -> None:
    source = tmp_path / "acme-web"
    page_rules = {
        ".cursor/rules/typescript.mdc": block_with("", "---\ndescription: TypeScript"),
        ".claude/skills/release/SKILL.md": block_with("", "---\nname: release"),
    }
    for rel, text in {**ACME_WEB, **page_rules}.items():
        (source / rel).parent.mkdir(parents=True, exist_ok=True)
        (source / rel).write_text(text, encoding="utf-8")
    env = {**environment(), "COLUMNS": "1000"}  # a terminal as wide as the page's lines
    story = PAGE.split("### A worked example", 1)[1].split("### What maps to what", 1)[0]
    consoles = re.findall(r"^```\n(\$ .*?)^```$", story, re.DOTALL | re.MULTILINE)
    ran = 0
    for console in consoles:
        if "refused (1)" in console and "--exclude" not in console.split("\n", 1)[0]:
            # The page's reader deleted the marker line of the context first.
            made = tmp_path / "brain/features/acme-web/claude-md.context.md"
            kept = [line for line in made.read_text().splitlines() if "# imported from" not in line]
            made.write_text("\n".join(kept) + "\n", encoding="utf-8")
        status = 0
        for command in commands(console):
            if command.line == "echo $?":  # the page's shell: the last command's status
                assert command.expected == str(status)
                continue
            done = shell(command.line, tmp_path, env)
            status = done.returncode
            refused = "refused (1)" in command.expected
            assert done.returncode == (3 if refused else 0), done.stdout + done.stderr
            assert elided(lines_of(command.expected), lines_of(done.stdout)), (
                f"the page's output drifted for:\n$ {command.line}\n--- printed\n{done.stdout}"
            )
            ran += 1
    assert ran >= 12, "the worked example's commands were found"


def keel_line(args: list[str]) -> dict[str, object]:
    """The parameters `keel ARGS` parses to, without running it: a line the CLI refuses
    (an unknown option, a missing argument) raises its usage error here."""
    group = get_command(app)
    assert isinstance(group, TyperGroup)
    with group.make_context("keel", list(args)) as context:
        name, command, rest = group.resolve_command(context, list(args))
        assert name is not None
        assert command is not None
        return dict(command.make_context(name, rest, parent=context).params)


def test_claude_mcp_add_registers_the_keel_command_of_mcp_json(tmp_path: Path) -> None:
    added = re.findall(r"^claude mcp add .* -- (keel .*)$", PAGE, re.MULTILINE)
    assert len(added) == 1, "one `claude mcp add ... -- keel ...` line"
    argv = shlex.split(added[0])
    servers = [json.loads(b) for b in blocks("json") if b.startswith('{\n  "mcpServers"')]
    keel = servers[0]["mcpServers"]["keel"]
    assert argv == [keel["command"], *keel["args"]], "the line and .mcp.json register one command"
    params = keel_line(argv[1:])
    assert (str(params["brain"]), params["role"], params["http"]) == ("brain", "dev", None)

    # Started from the project's folder, as a client starts what `.mcp.json` names.
    shop(tmp_path).rename(tmp_path / "brain")
    server = StdioServerParameters(
        command=keel_command()[0],
        args=[*keel_command()[1:], *argv[1:]],
        env=child_env(),
        cwd=tmp_path,
    )

    async def tools() -> list[str]:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return [tool.name for tool in (await session.list_tools()).tools]

    listed = asyncio.run(asyncio.wait_for(tools(), 120))
    assert {"context_turn", "context_open", "context_bind"} <= set(listed), listed


def test_the_http_form_points_the_client_where_keel_mcp_serves() -> None:
    served = re.search(r"start `(keel mcp brain --role dev\s+--http (\d+))`", PAGE)
    assert served
    assert keel_line(shlex.split(served[1])[1:])["http"] == int(served[2])
    url = re.search(r"`claude mcp add --transport http\s+keel (\S+)`", PAGE)
    assert url
    assert url[1] == f"http://127.0.0.1:{served[2]}{HTTP_PATH}"


def test_one_rule_for_two_tools_imports_once_as_the_page_shows(tmp_path: Path) -> None:
    section = PAGE.split("### One rule once", 1)[1].split("\n### ", 1)[0]
    (shown,) = re.findall(r"^```\n(source files:.*?)^```$", section, re.DOTALL | re.MULTILINE)
    text = "Indent with tabs. Keep lines under 100 characters.\n"
    files = {
        ".cursor/rules/style.mdc": f"---\nalwaysApply: true\n---\n{text}",
        ".windsurf/rules/style.md": f"---\ntrigger: always_on\n---\n{text}",
    }
    for rel, body in files.items():
        (tmp_path / "repo" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "repo" / rel).write_text(body, encoding="utf-8")
    env = {**environment(), "COLUMNS": "1000"}
    assert shell("keel init brain", tmp_path, env).returncode == 0
    done = shell("keel import repo brain", tmp_path, env)
    assert done.returncode == 0, done.stdout + done.stderr
    printed, expected = lines_of(done.stdout), lines_of(shown)
    starts = [n for n, line in enumerate(printed) if line == expected[0]]
    assert starts, done.stdout
    assert printed[starts[0] : starts[0] + len(expected)] == expected, done.stdout
    also = re.search(r"\(`(# also stands for .*?)`\)", " ".join(section.split()))
    assert also
    made = (tmp_path / "brain/features/repo/cursor-style.context.md").read_text(encoding="utf-8")
    assert also[1] in made.splitlines()
    json_done = shell("keel import repo brain --json", tmp_path, env)
    (rule,) = json.loads(json_done.stdout)["rules"]
    assert (rule["context"], rule["also"]) == ("cursor-style", [".windsurf/rules/style.md"])


def test_the_mcp_synopsis_names_every_option_of_keel_mcp() -> None:
    (synopsis,) = [b for b in blocks("") if b.startswith("keel mcp BRAIN ")]
    shown = re.findall(r"\[(--[a-z-]+)", synopsis)
    group = get_command(app)
    assert isinstance(group, TyperGroup)
    command = group.commands["mcp"]
    real = [o for p in command.params for o in p.opts if o.startswith("--") and o != "--help"]
    assert shown == real
