"""The `keel` command's exit statuses; only the CLI's edge turns Keel's errors into them.

0 done, 1 a check failed (doctor) or the database failed, 2 a usage error, 3 a refusal,
4 a turn that does not fit. A module of its own so the entry point can answer `--help`
and `--version` without loading typer.
"""

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_REFUSED = 3
EXIT_OVERFLOW = 4
