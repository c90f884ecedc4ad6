"""`keel serve`: the HTTP API, the dashboard, and the seed a brain plays into a new database.

`keel.web.app.create_app(Service(engine, ...))` is the ASGI application; `keel.web.runs`
holds the `RunsBackend` protocol the runs routes and pages use; `keel.web.seed` plays a
brain's `seed.yaml` once. This package imports FastAPI, so `import keel` never loads it:
only the `keel serve` command and programs that serve do.
"""
