"""priomptipy on the standard workload: one priority scope per cuttable unit.

Layout: the workload's canonical 110 chat messages. Each view is one system message whose
rows sit in scopes of `row_priority(r)`; each history message is wrapped in a scope of
`history_priority(i)`; everything else has no scope, so it is never cut. priomptipy then
binary-searches the priority cutoff against `token_limit` with o200k_base. It has no
notice for what it leaves out.
"""

from __future__ import annotations

import asyncio

from common import Messages, arguments, load_workload, serve
from priomptipy import AssistantMessage, Scope, SystemMessage, UserMessage, render
from priomptipy.lib import prompt_to_openai_chat_messages


def main() -> None:
    args = arguments()
    wl = load_workload(args.workload)
    w = wl.make()
    loop = asyncio.new_event_loop()

    def build() -> list[object]:
        views = [
            SystemMessage(
                [
                    w.view_header(name),
                    *(
                        Scope(children=["\n" + row], absolute_priority=wl.row_priority(r))
                        for r, row in enumerate(rows)
                    ),
                ]
            )
            for name, rows in w.views
        ]
        history = [
            Scope(
                children=[UserMessage(text) if role == "user" else AssistantMessage(text)],
                absolute_priority=wl.history_priority(i),
            )
            for i, (role, text) in enumerate(w.history)
        ]
        return [
            SystemMessage(w.system),
            SystemMessage(w.skills_text()),
            SystemMessage(w.tools_text()),
            *views,
            *history,
            UserMessage(w.user),
        ]

    def once() -> tuple[Messages, int, str]:
        options = {"tokenizer": wl.ENCODING, "token_limit": wl.BUDGET}
        out = loop.run_until_complete(render(build(), options))
        sent = prompt_to_openai_chat_messages(out["prompt"])
        messages = [(m["role"], m["content"]) for m in sent]
        return messages, int(out["token_count"]), f"priority cutoff {out['priority_cutoff']:g}"

    serve("priomptipy", "priomptipy", once)


if __name__ == "__main__":
    main()
