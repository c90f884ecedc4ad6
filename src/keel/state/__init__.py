"""The database behind state views: connecting, applying `state/*.sql`, reading the schema."""

from keel.state.database import apply_sql, connect, default_url
from keel.state.schema import Schema, read_schema

__all__ = ["Schema", "apply_sql", "connect", "default_url", "read_schema"]
