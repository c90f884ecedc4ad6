"""Brain code: `*.context.py` match/render, engage policies, hook gates and pipelines.

Brain files import their helpers from here: the `define_*` functions, and for pipelines
`TerminalError` (raise it to fail the run for good) and `CallFailed` (what a ctx call that
Keel could not carry out raises). Keel runs that code through a `CodeRunner` —
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
        CallFailed,
        ContextCode,
        EngagePolicy,
        HookGate,
        Pipeline,
        TerminalError,
        define_context,
        define_engage,
        define_gate,
        define_pipeline,
    )
    from keel.code.gates import fire_gate
    from keel.code.modules import load_context_code, load_gate, load_module
    from keel.code.pipelines import CtxCall, PipelineAnswer, PipelineCall
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
    "CallFailed": "keel.code.define",
    "CodeRunner": "keel.code.runner",
    "CtxCall": "keel.code.pipelines",
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
    "PipelineAnswer": "keel.code.pipelines",
    "PipelineCall": "keel.code.pipelines",
    "RenderAnswer": "keel.code.values",
    "RenderCall": "keel.code.values",
    "RunView": "keel.code.values",
    "Section": "keel.code.values",
    "TerminalError": "keel.code.define",
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
    "CallFailed",
    "CodeRunner",
    "ContextCode",
    "CtxCall",
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
    "PipelineAnswer",
    "PipelineCall",
    "RenderAnswer",
    "RenderCall",
    "RunView",
    "Section",
    "TerminalError",
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
