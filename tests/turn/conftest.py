"""Turn tests that read the journal use a store that has its table."""

from __future__ import annotations

from tests.ledger.journaled import journal_store

__all__ = ["journal_store"]
