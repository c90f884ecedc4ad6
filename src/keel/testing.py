"""Fakes for tests: the scripted model (`keel.runtime.scripted`), re-exported here so a test
names it where it always has. Production code imports it from `keel.runtime.scripted` (or
makes one with `keel.models.scripted`): nothing outside the tests imports this module."""

from keel.runtime.scripted import (
    RawToolCall,
    ScriptedModel,
    ScriptedRequest,
    ScriptedStep,
    anthropic_message,
    chat_completion,
    response,
)

__all__ = [
    "RawToolCall",
    "ScriptedModel",
    "ScriptedRequest",
    "ScriptedStep",
    "anthropic_message",
    "chat_completion",
    "response",
]
