"""`ctx.query` on PostgreSQL: a read-only savepoint, one query expression with a bound LIMIT,
and temporary views that keep a pinned room to its tenant's rows (see `keel.state.queries`).

Called inside a savepoint of the turn's transaction, which the caller rolls back: the
temporary table holding the key, the shadowing views and every `SET LOCAL` go with it.
PostgreSQL binds a view to the relations it read when it was made, so a view of the
database that reads a tenant table through its own name is not filtered by a shadow of
that table: a view with the tenant's column is shadowed itself, and one without it that
reads a tenant relation (directly or through other views, as `pg_depend` records) is
refused when the statement names it. A tenant relation named with its schema is refused
as well. PostgreSQL gives no authorizer, so these two checks read the statement's text:
they refuse a name that only appears in a string or a comment too, and cannot see a name
built at run time (by `query_to_xml`, a function of the database's own): the tenant
boundary on PostgreSQL is as good as the statement is plain. A role with row-level
security is the stronger one, for a database shared with code Keel does not run.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Mapping
from typing import Any

from keel.errors import Refused, StoreError
from keel.state.query_values import IDENT, MAX_ROWS, Params, Pin, Rows, folded, named, quoted

# Every relation with the tenant's column (any schema but the system's), and every view
# that reads one of them, directly or through other views: its schema, its name, whether
# it has the column, and whether its unqualified name finds it.
_REACH = """
WITH RECURSIVE pinned AS (
    SELECT c.oid FROM pg_catalog.pg_attribute AS a
    JOIN pg_catalog.pg_class AS c ON c.oid = a.attrelid
    JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
    WHERE a.attname = %s AND a.attnum > 0 AND NOT a.attisdropped
      AND c.relkind IN ('r', 'v', 'm', 'p', 'f')
      AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%%'
), reach(oid) AS (
    SELECT oid FROM pinned
    UNION
    SELECT r.ev_class FROM reach
    JOIN pg_catalog.pg_depend AS d ON d.refobjid = reach.oid
        AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
        AND d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass
    JOIN pg_catalog.pg_rewrite AS r ON r.oid = d.objid
    WHERE r.ev_class <> reach.oid
)
SELECT n.nspname, c.relname, c.oid IN (SELECT oid FROM pinned),
       pg_catalog.pg_table_is_visible(c.oid)
FROM reach JOIN pg_catalog.pg_class AS c ON c.oid = reach.oid
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
"""
# Whether an unqualified name finds the session's temporary objects first.
_TEMP_FIRST = """
SELECT n.nspname = (pg_catalog.current_schemas(true))[1] FROM pg_catalog.pg_namespace AS n
WHERE n.oid = pg_catalog.pg_my_temp_schema()
"""
_QUALIFIED = re.compile(rf"({IDENT})\s*\.\s*({IDENT})")
# psycopg's placeholders are %(name)s; brain code writes :name (as SQLAlchemy's text() does).
_NAMED = re.compile(r"(?<![:\w\\]):(\w+)(?!:)")
_LIMIT = "keel_query_limit"


def read(
    raw: Any,
    sql: str,
    params: Params,
    pin: Pin | None,
    deadline: float,
    _info: dict[str, Any],
) -> Rows:
    """Run the statement on the psycopg connection `raw`, read only and pinned (the
    catalog is read afresh each time: PostgreSQL has no cheap sign that it changed)."""
    import psycopg  # here: only PostgreSQL brains have it
    from psycopg.rows import tuple_row

    cursor = raw.cursor(row_factory=tuple_row)
    try:
        if pin is not None:
            _shadow(cursor, sql, pin)
        left_ms = int((deadline - time.monotonic()) * 1000)
        if left_ms <= 0:
            raise Refused("ctx.query came after the call's time was up")
        # Integers Keel computed: no text of brain code is in either.
        cursor.execute(f"SET LOCAL statement_timeout = {left_ms}")
        cursor.execute("SET LOCAL transaction_read_only = on")
        statement, values = _wrapped(sql, params)
        # Never a prepared statement: what its unqualified names find is decided afresh
        # each time, with this room's shadows or without any.
        cursor.execute(statement, values, prepare=False)
        columns = tuple(column.name for column in cursor.description or ())
        rows = cursor.fetchall() if cursor.description else []
    except psycopg.errors.QueryCanceled:
        raise StoreError("ctx.query ran past the call's time and was stopped") from None
    except psycopg.Error as exc:
        said = exc.diag.message_primary or str(exc)
        raise StoreError(f"the database refused the statement: {said}") from None
    finally:
        cursor.close()
    return columns, rows


def _wrapped(sql: str, params: Params) -> tuple[str, Any]:
    """The statement as a subquery with a bound LIMIT, and its parameters for psycopg.

    As a subquery it must be one query expression (SELECT, WITH ... SELECT, VALUES,
    TABLE); with a parameter always bound, psycopg sends it over the extended protocol,
    which takes one statement only. Line breaks keep a trailing `--` comment inside.
    """
    body = re.sub(r"[\s;]+$", "", sql)
    if isinstance(params, Mapping):
        body = _NAMED.sub(r"%(\1)s", body.replace("%", "%%"))
        named = {**params, _LIMIT: MAX_ROWS + 1}
        return f"SELECT * FROM (\n{body}\n) AS keel_query LIMIT %({_LIMIT})s", named
    if params is None:
        body = body.replace("%", "%%")  # no placeholders: a % is the statement's own
    return f"SELECT * FROM (\n{body}\n) AS keel_query LIMIT %s", [*(params or ()), MAX_ROWS + 1]


def _shadow(cursor: Any, sql: str, pin: Pin) -> None:
    """Shadow every visible relation with the tenant's column; refuse what no shadow covers."""
    cursor.execute(_REACH, (pin.column,))
    found: list[tuple[str, str, bool, bool]] = cursor.fetchall()
    _refuse_uncovered(sql, found, pin.column)
    if pin.key is None:
        keep = "false"  # pinned to no tenant: no tenant's rows belong here
    else:
        holder = f"pg_temp.{quoted(f'keel_pin_{secrets.token_hex(8)}')}"
        cursor.execute(f"CREATE TEMP TABLE {holder} (key text)")
        cursor.execute(f"INSERT INTO {holder} (key) VALUES (%s)", (pin.key,))
        keep = f"{quoted(pin.column)}::text = (SELECT key FROM {holder})"
    # Only a name in the statement's text finds a shadow (a U&"..." name is spelled in
    # escapes: then every one gets a shadow).
    words = named(sql)
    every = "u&" in sql.casefold()
    shadowed = [
        (schema, name)
        for schema, name, has, visible in found
        if has and visible and (every or name.casefold() in words)
    ]
    for schema, name in shadowed:
        source = f"{quoted(schema)}.{quoted(name)}"
        cursor.execute(f"CREATE TEMP VIEW {quoted(name)} AS SELECT * FROM {source} WHERE {keep}")
    if shadowed:
        cursor.execute(_TEMP_FIRST)
        first = cursor.fetchone()
        if not (first and first[0]):
            raise Refused(
                "ctx.query cannot be kept to this room's tenant: the database's search_path "
                "names pg_temp after other schemas — leave pg_temp out of it (PostgreSQL "
                "then searches it first)"
            )


def _refuse_uncovered(sql: str, found: list[tuple[str, str, bool, bool]], column: str) -> None:
    words = named(sql)
    pairs = {(folded(m.group(1)), folded(m.group(2))) for m in _QUALIFIED.finditer(sql)}
    for schema, name, has, _visible in found:
        if has and (schema.casefold(), name.casefold()) in pairs:
            raise Refused(
                f"ctx.query reads {schema}.{name} by its schema's name, which Keel cannot "
                f"keep to this room's tenant ({column}) — write {name} alone: Keel shows it "
                "with this tenant's rows only"
            )
        if not has and name.casefold() in words:
            raise Refused(
                f"ctx.query reads the view {name}, which has no {column} column but reads "
                f"rows that have one, so Keel cannot keep it to this room's tenant — read "
                f"the tables it reads, or add {column} to {name}"
            )
