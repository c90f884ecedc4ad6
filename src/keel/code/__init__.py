"""Brain code: the Python half of contexts (`*.context.py`) and hooks (`*.hook.py`)."""

from keel.code.define import ContextCode, HookGate, define_context, define_gate
from keel.code.modules import load_context_code, load_gate, load_module

__all__ = [
    "ContextCode",
    "HookGate",
    "define_context",
    "define_gate",
    "load_context_code",
    "load_gate",
    "load_module",
]
