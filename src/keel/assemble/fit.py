"""The fit check: before every model request, the input must fit what the model declares.

Two conditions: the estimate plus the output reserve fits the window, and the estimate
alone fits the input allocation. The first request of a turn is checked as assembled; each
later one again, with the turn's transcript (model steps, tool results) added, since tool
results can grow a turn past its window. A request that does not fit is refused with a
`FitOverflow` naming the largest sections and the knob to turn.
"""

from __future__ import annotations

import json

from keel.assemble.values import (
    Assembly,
    Fit,
    ModelStep,
    ToolResult,
    Transcript,
)
from keel.brain.knobs import ModelLimits
from keel.errors import FitOverflow
from keel.tokens import TokenCounter

ChatMessage = tuple[str, str]

KNOBS = {
    "history": "sections.history",
    "render": "sections.render.<view> (or state.rows)",
    "context": "contexts.turnChars or contexts.maxActive",
    "tool": "the role's capabilities (fewer tools)",
    "skill": "the role's skills:",
    "prompt": "the role body",
    # A smaller window makes an overflow worse: only the tools' output can be turned down.
    "transcript": "the tools' output (fewer rows, shorter results)",
}


def check_fit(estimate: int, limits: ModelLimits) -> Fit:
    """The verdict for an estimate against the model's declared limits."""
    ok = estimate + limits.output_reserve <= limits.window and estimate <= limits.input_allocation
    return Fit(
        ok=ok,
        estimate=estimate,
        window=limits.window,
        output_reserve=limits.output_reserve,
        input_allocation=limits.input_allocation,
    )


def payload_messages(assembly: Assembly) -> list[ChatMessage]:
    """The chat messages a request carries, as (role, text), in order (tools apart)."""
    messages: list[ChatMessage] = []
    if assembly.system_text:
        messages.append(("system", assembly.system_text))
    if assembly.state_text:
        messages.append(("system", assembly.state_text))
    messages += [(m.role, m.text) for m in assembly.history]
    messages.append(("user", assembly.tail_text))
    return messages


def transcript_messages(transcript: Transcript) -> list[ChatMessage]:
    """The turn's own work as chat messages: model steps and tool results."""
    found: list[ChatMessage] = []
    for item in transcript.items:
        if isinstance(item, ModelStep):
            calls = [{"name": c.name, "arguments": dict(c.arguments)} for c in item.calls]
            text = item.text + (json.dumps(calls, sort_keys=True) if calls else "")
            found.append(("assistant", text))
        elif isinstance(item, ToolResult):
            found.append(("tool", item.content))
    return found


def overflow_message(assembly: Assembly, fit: Fit, transcript_tokens: int = 0) -> str:
    """What did not fit, the largest parts by size, and the knob to turn."""
    sizes = [(s.id, s.used_tokens) for s in assembly.sections]
    if transcript_tokens:
        sizes.append(("transcript", transcript_tokens))
    sizes.sort(key=lambda item: -item[1])
    largest = ", ".join(f"{name} {tokens:,}" for name, tokens in sizes[:6])
    if fit.estimate > fit.input_allocation:
        problem = (
            f"the input is {fit.estimate:,} tokens, over the input allocation of "
            f"{fit.input_allocation:,}"
        )
    else:
        problem = (
            f"the input of {fit.estimate:,} tokens plus the output reserve of "
            f"{fit.output_reserve:,} is over the window of {fit.window:,}"
        )
    top = sizes[0][0] if sizes else ""
    if transcript_tokens:
        # A later request: the turn's own tool results are what grew it past the limit.
        problem += (
            f", after this turn's model steps and tool results added {transcript_tokens:,} tokens"
        )
        top = "transcript"
    family = top if top in KNOBS else top.split(".", 1)[0]
    knob = KNOBS.get(family, f"sections.{top}")
    return (
        f"{problem} — largest: {largest}. Turn {knob} down, or raise model.input_allocation / "
        "model.window in the role's frontmatter or MANIFEST"
    )


def ensure_fits(assembly: Assembly) -> None:
    """Refuse an opening request that does not fit, before any model call."""
    if not assembly.fit.ok:
        raise FitOverflow(overflow_message(assembly, assembly.fit), details=assembly.fit.to_json())


def check_request(assembly: Assembly, transcript: Transcript, counter: TokenCounter) -> Fit:
    """Re-estimate a later request of the turn with its transcript; raise if it overflows."""
    opening = assembly.fit.estimate
    grown = counter.count_messages(payload_messages(assembly) + transcript_messages(transcript))
    tools = sum(s.used_tokens for s in assembly.place("tool"))
    estimate = grown + tools
    fit = check_fit(estimate, assembly.limits)
    if not fit.ok:
        raise FitOverflow(
            overflow_message(assembly, fit, transcript_tokens=estimate - opening),
            details=fit.to_json(),
        )
    return fit
