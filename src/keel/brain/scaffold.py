"""The smallest working brain, as `keel init` writes it: one feature, role and context."""

from __future__ import annotations

import json

SCAFFOLD: dict[str, str] = {
    "constitution/MANIFEST.yaml": """\
# Brain-wide settings; every key is optional and shown here with its default.
name: {name}
contexts:
  chars: 3000        # a context's rendered size, unless its own file says otherwise
  maxActive: 3       # feature contexts one turn may carry
  turnChars: 12000   # characters all of a turn's contexts may use together
  keep: 3            # turns an inferred link (reply, code, ask) stays attached
state:
  rows: 20           # rows a context's view shows
  readTimeoutMs: 2000  # how long one read of a view may take before it is a stub
messageOrigins:
  retentionDays: 365 # replies to older messages link nothing (0 = keep forever)
contentProbe:
  context: 2         # seconds between checks for edited content files
""",
    "constitution/access.yaml": """\
# Which role answers in which chat, per bot. Only a group rule (under chats:) may bind
# contexts to the chat. `cli` is the bot `keel turn` speaks as unless told (--bot).
bots:
  cli:
    default: {{ role: helper }}
""",
    "features/hello/FEATURE.md": """\
---
description: A first feature; copy it to start your own.
---
Everything under features/hello/ belongs to this feature. Set `enabled: false` above to
switch off all of its contexts at once.
""",
    "features/hello/helper.agent.md": """\
---
description: The brain's first role.
contexts: [greeting]
capabilities: [context:read]
---
You are a helpful assistant. Keep answers short and friendly.
""",
    "features/hello/greeting.context.md": """\
---
description: How to greet people the first time they write.
when: [always]
chars: 1200
---
Greet a newcomer by name when you know it, and say in one line what you can help with.
""",
    ".gitignore": ".keel/\n",
}


def scaffold_files(name: str) -> dict[str, str]:
    """The files of a new brain called `name`, by brain-relative path."""
    quoted = json.dumps(name)  # a JSON string is a YAML string, whatever the name holds
    return {path: text.format(name=quoted) for path, text in SCAFFOLD.items()}
