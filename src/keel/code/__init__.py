"""Brain code: `*.context.py` match/render, engage policies, hook gates and pipelines.

Brain files use the `define_*` functions. Keel runs that code through a `CodeRunner` —
worker processes, each call bounded by its timeout — and checks every answer before it
links, renders or decides anything.

Each name is imported on first use: a worker process imports this package before any brain
code, and must not pay for the runner, the database layer or the answer checks.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from keel.code.define import (
        ContextCode,
        EngagePolicy,
        HookGate,
        Pipeline,
        define_context,
        define_engage,
        define_gate,
        define_pipeline,
    )
    from keel.code.gates import fire_gate
    from keel.code.modules import load_context_code, load_gate, load_module
    from keel.code.runner import CodeRunner
    from keel.code.values import (
        EngageAnswer,
        EngageCall,
        Failure,
        GateCall,
        GateResult,
        Inspection,
        MatchAnswer,
        MatchCall,
        RenderAnswer,
        RenderCall,
        RunView,
        Section,
        TurnView,
    )

_HOME = {
    "CodeRunner": "keel.code.runner",
    "ContextCode": "keel.code.define",
    "EngageAnswer": "keel.code.values",
    "EngageCall": "keel.code.values",
    "EngagePolicy": "keel.code.define",
    "Failure": "keel.code.values",
    "GateCall": "keel.code.values",
    "GateResult": "keel.code.values",
    "HookGate": "keel.code.define",
    "Inspection": "keel.code.values",
    "MatchAnswer": "keel.code.values",
    "MatchCall": "keel.code.values",
    "Pipeline": "keel.code.define",
    "RenderAnswer": "keel.code.values",
    "RenderCall": "keel.code.values",
    "RunView": "keel.code.values",
    "Section": "keel.code.values",
    "TurnView": "keel.code.values",
    "define_context": "keel.code.define",
    "define_engage": "keel.code.define",
    "define_gate": "keel.code.define",
    "define_pipeline": "keel.code.define",
    "fire_gate": "keel.code.gates",
    "load_context_code": "keel.code.modules",
    "load_gate": "keel.code.modules",
    "load_module": "keel.code.modules",
}

__all__ = [
    "CodeRunner",
    "ContextCode",
    "EngageAnswer",
    "EngageCall",
    "EngagePolicy",
    "Failure",
    "GateCall",
    "GateResult",
    "HookGate",
    "Inspection",
    "MatchAnswer",
    "MatchCall",
    "Pipeline",
    "RenderAnswer",
    "RenderCall",
    "RunView",
    "Section",
    "TurnView",
    "define_context",
    "define_engage",
    "define_gate",
    "define_pipeline",
    "fire_gate",
    "load_context_code",
    "load_gate",
    "load_module",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'keel.code' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # the next access is a plain attribute read
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
