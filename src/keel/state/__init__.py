"""The database behind state views: connecting, applying `state/*.sql`, reading views.

Its modules need SQLAlchemy and are imported by the edges that do I/O: `database`
(connecting, a new SQLite file built whole), `files` (applying and recording state
files), `views` (reading a view for one turn) and `schema` (what the database holds). The
rows a view showed are a plain value the pure stages read, `keel.budget.rows.ViewRows`.
"""
