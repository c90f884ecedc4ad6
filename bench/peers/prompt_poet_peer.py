"""prompt-poet on the standard workload: a YAML/Jinja template, one part per cuttable unit.

prompt-poet cuts whole parts, highest `truncation_priority` first (0 = never), so each
view is a header part plus one part per row, and each history message is a part. The
workload's priorities (higher = kept longer) are turned around: 2000 - priority. Blocks
of equal priority are cut left to right, so the same row level goes view by view. It
counts the parts' content only (no chat framing) against `token_limit`, raises
`TruncationError` (and resets to the uncut prompt) when it cannot get under it, and has
no notice for what it leaves out.

A view's parts are joined back into one system message (header and rows, one per line)
after truncation, so the messages sent have the workload's canonical layout.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from common import Messages, arguments, load_workload, serve
from prompt_poet import Prompt, TruncationError

TEMPLATE = """\
- name: system
  role: system
  content: |
    {{ escape_special_characters(system) }}
- name: skills
  role: system
  content: |
    {{ escape_special_characters(skills) }}
- name: tools
  role: system
  content: |
    {{ escape_special_characters(tools) }}
{% for view in views %}
- name: "view.{{ view.index }}.header"
  role: system
  content: |
    {{ escape_special_characters(view.header) }}
{% for row in view.rows %}
- name: "view.{{ view.index }}.row.{{ loop.index0 }}"
  role: system
  truncation_priority: {{ row.cut }}
  content: |
    {{ escape_special_characters(row.text) }}
{% endfor %}
{% endfor %}
{% for message in history %}
- name: "history.{{ loop.index0 }}"
  role: {{ message.role }}
  truncation_priority: {{ message.cut }}
  content: |
    {{ escape_special_characters(message.text) }}
{% endfor %}
- name: request
  role: user
  content: |
    {{ escape_special_characters(user) }}
"""


def main() -> None:
    args = arguments()
    wl = load_workload(args.workload)
    w = wl.make()

    def cut(priority: int) -> int:
        return 0 if priority >= wl.P_FIXED else 2000 - priority

    folder = Path(tempfile.mkdtemp(prefix="keel-bench-poet-"))
    template = folder / "workload.yml.j2"
    template.write_text(TEMPLATE, encoding="utf-8")

    def once() -> tuple[Messages, int, str]:
        data = {
            "system": w.system,
            "skills": w.skills_text(),
            "tools": w.tools_text(),
            "views": [
                {
                    "index": v,
                    "header": w.view_header(name),
                    "rows": [
                        {"text": row, "cut": cut(wl.row_priority(r))} for r, row in enumerate(rows)
                    ],
                }
                for v, (name, rows) in enumerate(w.views)
            ],
            "history": [
                {"role": role, "text": text, "cut": cut(wl.history_priority(i))}
                for i, (role, text) in enumerate(w.history)
            ],
            "user": w.user,
        }
        prompt = Prompt(
            template_path=str(template),
            from_cache=True,
            template_data=data,
            tiktoken_encoding_name=wl.ENCODING,
            token_limit=wl.BUDGET,
            truncation_step=1,
        )
        prompt.tokenize()
        note = "truncated"
        try:
            prompt.truncate()
        except TruncationError:
            note = "TruncationError: reset to the uncut prompt"
        messages: Messages = []
        group = ""
        for part in prompt.parts:
            key = ".".join(part.name.split(".")[:2]) if part.name.startswith("view.") else ""
            if key and key == group:
                role, text = messages[-1]
                messages[-1] = (role, text + "\n" + part.content)
            else:
                messages.append((part.role, part.content))
            group = key
        return messages, len(prompt.tokens), note

    serve("prompt-poet", "prompt-poet", once)


if __name__ == "__main__":
    main()
