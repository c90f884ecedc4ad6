"""Keel's own tables — turn numbers, message origins, chat bindings, kept links, the ledger."""

from keel.store.ledger import LedgerEntry
from keel.store.migrations import MIGRATIONS, Migration
from keel.store.store import Store
from keel.store.tx import Tx

__all__ = ["MIGRATIONS", "LedgerEntry", "Migration", "Store", "Tx"]
