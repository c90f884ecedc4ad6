"""Brain code: the Python half of contexts (`*.context.py`) and hooks (`*.hook.py`)."""

from keel.code.define import ContextCode, HookGate, define_context, define_gate

__all__ = ["ContextCode", "HookGate", "define_context", "define_gate"]
