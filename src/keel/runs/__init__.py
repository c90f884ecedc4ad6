"""Runs: heartbeats, hooks and scenarios as durable workflows on DBOS Transact."""
