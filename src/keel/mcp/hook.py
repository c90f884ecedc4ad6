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

Failing must never cost the person their prompt: for UserPromptSubmit, exit status 2
blocks the prompt and erases it. Every failure of the hook — malformed input, an event it
does not answer, a refusal, a database that cannot be reached — is one line on stderr and
exit status 1, which the agent treats as a non-blocking error, with nothing on stdout.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from keel.errors import UsageError
from keel.mcp.room import Room
from keel.payload.sessions import SessionState
from keel.runtime.engine import Engine
from keel.tools.context_turn import turn_text
from keel.turn.prepared import Session

PROMPT = "UserPromptSubmit"
START = "SessionStart"
PRE_COMPACT = "PreCompact"
EVENTS = (PROMPT, START, PRE_COMPACT)


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


def read_input(text: str) -> HookInput:
    """The hook's stdin as a `HookInput`; `UsageError` in one line saying what is wrong."""
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
    return payload


def answer(engine: Engine, room: Room, payload: HookInput) -> str:
    """The context to add for this hook call; '' when there is none."""
    event, source, session = payload.hook_event_name, payload.source, payload.session_id
    if event == PROMPT:
        request = room.request(text=payload.prompt or "")
        prepared, _ = engine.prepare(request, session=Session(id=session))
        return turn_text(prepared)
    if event == START and source == "compact":
        prepared, _ = engine.prepare(room.request(), session=Session(id=session, compacted=True))
        return turn_text(prepared)
    if event == PRE_COMPACT or (event == START and source == "clear"):
        forget_session(engine, session)
    return ""


def forget_session(engine: Engine, session: str) -> None:
    """Drop what a CLI-agent session was sent: its next turn sends everything whole."""
    with engine.store.transaction() as tx:
        tx.save_session(session, SessionState())


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
