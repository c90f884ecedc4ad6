"""What the database holds: every table and view, with its column names.

Doctor checks a brain's view names and `by` columns against this; reading it once per check
run is enough, so it is a plain frozen value rather than a live inspector.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from sqlalchemy import Engine, inspect
from sqlalchemy.exc import SQLAlchemyError

from keel.errors import StoreError
from keel.state.database import shown


@dataclass(frozen=True, slots=True, kw_only=True)
class Schema:
    """Tables and views by name, each with its columns in order."""

    relations: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    views: frozenset[str] = frozenset()

    def has(self, name: str) -> bool:
        """Whether a table or view of this exact name exists."""
        return name in self.relations

    def columns(self, name: str) -> tuple[str, ...]:
        """The columns of a table or view; empty for a name the database lacks."""
        return self.relations.get(name, ())

    @property
    def names(self) -> tuple[str, ...]:
        """Every table and view name, sorted."""
        return tuple(sorted(self.relations))


def read_schema(engine: Engine) -> Schema:
    """Read every table and view (with its columns) of the engine's default schema."""
    where = shown(engine.url)
    try:
        inspector = inspect(engine)
        tables = inspector.get_table_names()
        views = inspector.get_view_names()
    except SQLAlchemyError as exc:
        raise StoreError(
            f"cannot read the tables and views of {where}: {_one_line(exc)} — check that "
            "the database is reachable and the user may read its catalog"
        ) from None
    relations: dict[str, tuple[str, ...]] = {}
    for name in (*tables, *views):
        try:
            relations[name] = tuple(c["name"] for c in inspector.get_columns(name))
        except SQLAlchemyError as exc:
            # SQLite accepts a view over a table that is not there and fails only on use.
            raise StoreError(
                f"cannot read the columns of '{name}' in {where}: {_one_line(exc)} — fix or "
                "drop that view (its query names something the database lacks)"
            ) from None
    return Schema(relations=MappingProxyType(relations), views=frozenset(views))


def _one_line(exc: SQLAlchemyError) -> str:
    orig = getattr(exc, "orig", None)
    return " ".join(str(orig if orig is not None else exc).split())
