"""Keel's own tables — turns, history, message origins, bindings, kept links, the ledger,
CLI-agent sessions."""

from keel.store.ledger import LedgerEntry
from keel.store.migrations import MIGRATIONS, Migration
from keel.store.store import Store
from keel.store.tx import Tx

__all__ = ["MIGRATIONS", "LedgerEntry", "Migration", "Store", "Tx"]
