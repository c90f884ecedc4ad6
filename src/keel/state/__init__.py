"""The database behind state views.

`keel.state.rows.ViewRows` is a plain value the pure stages read. The rest needs SQLAlchemy
and is imported by the edges that do I/O: `database` (connecting; a new SQLite file made
whole by `sqlite_file`), `files` (which `state/*.sql` files a database applied, applying the
rest), `scripts` (the files as statements), `views` (reading views) and `schema`.
"""

from keel.state.rows import ViewRows

__all__ = ["ViewRows"]
