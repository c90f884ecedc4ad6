"""A hook's outcome notice: when the hook's frontmatter says `notice: true`, the run's end
is posted in one line where the hook speaks — done (with a pipeline's result) or failed and
why — carrying the run's origin like any post of the run.

It is written in the `finish` step's own transaction, so a run ends with its notice or
without either, and a replay that finds the run finished writes neither again.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from keel.errors import Refused
from keel.runs.context import RunContext
from keel.store import Tx
from keel.tools.send import origin_of, record_send

LONGEST = 300  # characters of the one line; a longer result or reason is cut, and says so


def outcome_notice(
    tx: Tx, context: RunContext, seq: int, *, error: str | None, result: Any = None
) -> None:
    """Record the notice of a hook's run that asks for one (nothing for any other run)."""
    plan = context.plan
    if plan is None or plan.ref.kind != "hook":
        return
    spec = context.brain.entity("hook", plan.ref.id)
    if spec is None or not spec.notice:
        return
    text = notice_text(plan.ref.id, error, result)
    # The run's reach, so a reply to the notice comes back about the run's contexts; where
    # that reach cannot travel without a key the run lacks, the notice still names its run.
    for reach in (plan.reach, ()):
        try:
            origin = origin_of(
                context.brain,
                conversation=plan.conversation,
                message_id=context.message_id(seq),
                sent_at=datetime.now(UTC),
                run=plan.ref,
                reach=reach,
            )
            record_send(tx, context.brain, origin, text)
        except Refused:
            continue
        return


def notice_text(hook: str, error: str | None, result: Any = None) -> str:
    """`<hook>: done`, `<hook>: done — <result>` or `<hook>: failed — <reason>`, one line."""
    if error is not None:
        said = f"{hook}: failed — {error}"
    elif result is None:
        said = f"{hook}: done"
    else:
        shown = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
        said = f"{hook}: done — {shown}"
    line = " ".join(said.split())
    return line if len(line) <= LONGEST else line[: LONGEST - 1] + "…"
