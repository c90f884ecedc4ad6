"""The prompt hook: Claude Code (and any agent with its hook protocol) asks, Keel adds context.

The agent runs `keel agent-hook BRAIN ...` as a command hook and pipes one JSON object to
its stdin: `session_id`, `transcript_path`, `cwd`, `hook_event_name`, and per event
`prompt` (UserPromptSubmit) or `source` (SessionStart). What Keel prints on stdout, with
exit status 0, is added to the agent's context:

    {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "..."}}

The events Keel answers, in its room (`keel.mcp.room`), with the agent's session id as the
CLI-agent session:

- `UserPromptSubmit`: one turn for the prompt, recorded like any turn; the answer is the
  session's delta (`keel.tools.context_turn.turn_text`) — instructions once, views again
  when they change, a withdrawal line when a context leaves. Nothing new: no output.
- `SessionStart` with source `compact`: the agent just replaced its conversation with a
  summary, so nothing it was sent can be relied on. A turn with `compacted` set answers at
  once with every attached context whole — an agent compacting by itself mid-task goes
  on working without waiting for the next prompt.
- `SessionStart` with source `clear`, and `PreCompact`: the session forgets what it was
  sent, so the next prompt's turn sends everything. `startup` and `resume` need nothing.

An agent with only the hook has no `context_open`: that is a tool of Keel's MCP server
(`keel mcp`). So the hook says where it lives: once per session (again after a compaction
or a clear, or when the catalog changes) a `<context-catalog>` block lists the contexts
the role may open and names the tool, and a stub line says the same. What the session was
sent of the catalog is kept beside its contexts, in the session's companion state
(`<session id>#catalog`), written in the turn's own transaction.

Brain code that failed in the turn (it raised, hung or answered the wrong shape) costs
only its own context, as in any turn; the hook prints each of the turn's warnings as one
line on stderr and still exits 0, so the agent shows them without blocking anything.

Failing must never cost the person their prompt: for UserPromptSubmit, exit status 2
blocks the prompt and erases it. Every failure of the hook — malformed input, an event it
does not answer, a refusal, a database that cannot be reached — is one line on stderr and
exit status 1, which the agent treats as a non-blocking error, with nothing on stdout.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from keel.budget.fit import Stub
from keel.budget.fit import stub_line as budget_stub_line
from keel.errors import UsageError
from keel.link.values import TurnRequest
from keel.mcp.room import Room
from keel.payload.sessions import SentContext, SessionState, digest
from keel.store import Tx
from keel.tools.context_turn import Joined, turn_text
from keel.turn.prepare import prepare_and_assemble
from keel.turn.prepared import PreparedTurn, Session

if TYPE_CHECKING:
    from keel.runtime.engine import Engine

PROMPT = "UserPromptSubmit"
START = "SessionStart"
PRE_COMPACT = "PreCompact"
EVENTS = (PROMPT, START, PRE_COMPACT)
SOURCES = ("startup", "resume", "clear", "compact")  # SessionStart's, as Claude Code sends
# Where an agent finds `context_open`: the hook alone cannot open anything.
TOOL_HOME = "a tool of Keel's MCP server (keel mcp)"
CATALOG_HEAD = (
    f"Contexts you can open when the task needs one: call context_open — {TOOL_HOME} — with "
    "the name (and the entity, for a keyed one). Without that server they cannot be opened "
    "in this session."
)


class HookInput(BaseModel):
    """The fields of a hook's input that Keel reads.

    Unknown fields are ignored, not refused: the agent sends more than Keel needs
    (`transcript_path`, `cwd`, `permission_mode`, `model`, ...) and adds fields in new
    versions, and a hook that broke on each would fail every prompt.
    """

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)

    session_id: str = Field(min_length=1)
    hook_event_name: str
    prompt: str | None = None
    source: str | None = None


def read_input(text: str | bytes) -> HookInput:
    """The hook's stdin (text, or bytes in UTF-8) as a `HookInput`; `UsageError` in one
    line saying what is wrong."""
    try:
        data: Any = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"the hook's input is not JSON ({exc}) — {_HOW}") from None
    if not isinstance(data, dict):
        seen = _JSON_KINDS.get(type(data), "value")
        raise UsageError(f"the hook's input is a JSON {seen}, not an object — {_HOW}")
    try:
        payload = HookInput.model_validate(data)
    except ValidationError as exc:
        raise UsageError(f"the hook's input {_problems(exc)} — {_HOW}") from None
    if payload.hook_event_name not in EVENTS:
        raise UsageError(
            f"the hook's event is {payload.hook_event_name!r}, which keel agent-hook does not "
            f"answer — install it on {PROMPT} and {START} (or {PRE_COMPACT})"
        )
    if payload.hook_event_name == PROMPT and payload.prompt is None:
        raise UsageError(f"a {PROMPT} input has no 'prompt' — {_HOW}")
    if payload.hook_event_name == START and payload.source not in SOURCES:
        raise UsageError(
            f"a {START} input's 'source' is {payload.source!r}, which keel agent-hook does "
            f"not know — it answers {', '.join(SOURCES)}"
        )
    return payload


@dataclass(frozen=True, slots=True, kw_only=True)
class HookAnswer:
    """What one hook call prints: the context to add, and the turn's warnings."""

    text: str = ""  # '' when there is nothing to add
    warnings: tuple[str, ...] = ()  # brain code that failed, a context that did not load


def answer(engine: Engine, room: Room, payload: HookInput) -> HookAnswer:
    """The context to add for this hook call, and what went wrong on the way."""
    event, source, session = payload.hook_event_name, payload.source, payload.session_id
    room = room.in_session(session)
    if event == PROMPT:
        return _turn(engine, room.request(text=payload.prompt or ""), Session(id=session))
    if event == START and source == "compact":
        return _turn(engine, room.request(), Session(id=session, compacted=True))
    if event == PRE_COMPACT or (event == START and source == "clear"):
        forget_session(engine, session)
    return HookAnswer()


def forget_session(engine: Engine, session: str) -> None:
    """Drop what a CLI-agent session was sent: its next turn sends everything whole."""
    with engine.store.transaction() as tx:
        tx.save_session(session, SessionState())
        tx.save_session(_catalog_session(session), SessionState())


def _turn(engine: Engine, request: TurnRequest, session: Session) -> HookAnswer:
    """One recorded turn, and the catalog when the session has not been sent it."""
    brain = engine.brain  # one snapshot for the whole call, though the files may change
    with engine.store.transaction() as tx:
        prepared, _ = prepare_and_assemble(
            brain,
            Joined(tx),
            request,
            engine.counter,
            engine.tools.tools_for,
            session=session,
            code=engine.code_for(brain),
        )
        catalog = _catalog(tx, prepared, session)
    can_open = brain.roles[prepared.role].can("context:read")
    text = turn_text(prepared, stub_line=lambda stub: stub_line(stub, can_open=can_open))
    return HookAnswer(text="\n\n".join(t for t in (text, catalog) if t), warnings=prepared.log)


def _catalog(tx: Tx, prepared: PreparedTurn, session: Session) -> str:
    """The catalog block if this session was not sent it as it is now, else ''."""
    if not prepared.catalog:
        return ""
    lines = [f"- {ident}: {description}" for ident, description in prepared.catalog]
    text = "\n".join(["<context-catalog>", CATALOG_HEAD, *lines, "</context-catalog>"])
    sent = SentContext(context="catalog", entity=None, instructions=digest(text))
    companion = _catalog_session(session.id)
    if not session.compacted and tx.session_state(companion).contexts == (sent,):
        return ""
    tx.save_session(companion, SessionState(contexts=(sent,)))
    return text


def _catalog_session(session: str) -> str:
    return f"{session}#catalog"


def stub_line(stub: Stub, *, can_open: bool) -> str:
    """A stub as the hook sends it: where `context_open` is, when the stub offers it."""
    if not can_open:
        return stub.text  # the role may not open it: nothing to call
    return budget_stub_line(stub.link, stub.knob, can_open=True, where=TOOL_HOME)


def output(event: str, text: str) -> str:
    """The JSON line the agent reads: `text` as the event's additional context."""
    body = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
    return json.dumps(body, ensure_ascii=False)


_HOW = "run it as the agent's command hook, which pipes one JSON object to stdin"
_JSON_KINDS: dict[type, str] = {
    list: "array",
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


def _problems(exc: ValidationError) -> str:
    said = []
    for error in exc.errors():
        field = ".".join(str(p) for p in error["loc"]) or "input"
        said.append(f"'{field}': {error['msg'].lower()}")
    return "has " + "; ".join(said)
