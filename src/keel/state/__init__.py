"""The database behind state views.

`keel.state.rows.ViewRows` is a plain value the pure stages read; connecting, applying
`state/*.sql`, reading views and the schema live in `database`, `views` and `schema`, which
need SQLAlchemy and are imported by the edges that do I/O.
"""

from keel.state.rows import ViewRows

__all__ = ["ViewRows"]
