"""Keel's error hierarchy.

Every error Keel raises on purpose derives from :class:`KeelError`, and its message says
what went wrong, where, the value seen and what to do about it::

    KeelError
    ├── ContentError      a brain file cannot be used (file, line)
    ├── LinkError         a link cannot be made as asked (an entity no reach can take)
    ├── Refused           a tool call or send refused, with its reason
    ├── FitOverflow       the assembled input does not fit the model's window
    ├── StoreError        the database cannot be reached or used
    └── UsageError        the caller asked for something impossible (bad flag, bad path)
"""

from __future__ import annotations


class KeelError(Exception):
    """The root of every error Keel raises on purpose."""


class ContentError(KeelError):
    """A brain file that cannot be loaded; names the file and, where known, the line."""

    def __init__(self, path: str, message: str, *, line: int | None = None) -> None:
        self.path = path
        self.line = line
        self.reason = message
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")


class LinkError(KeelError):
    """A link that cannot be made as asked."""


class Refused(KeelError):
    """A tool call or send that Keel refuses; the message is the reason shown to the agent."""


class FitOverflow(KeelError):
    """The assembled model input does not fit the declared window or input allocation.

    `details` holds the verdict (estimate, window, reserve, allocation) for machines.
    """

    def __init__(self, message: str, *, details: dict[str, object] | None = None) -> None:
        self.details = details or {}
        super().__init__(message)


class StoreError(KeelError):
    """The database cannot be reached or used."""


class StateRefused(StoreError):
    """The database refused a state file's SQL (`path`, at `line` when known)."""

    def __init__(self, message: str, *, path: str, line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line


class UsageError(KeelError):
    """The caller asked for something that cannot be done as asked."""
