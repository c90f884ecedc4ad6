"""`python -m keel`: the `keel` command, for when the script is not on the PATH."""

from keel.cli import main

main()
