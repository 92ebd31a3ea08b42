"""``python -m workerclass``: the same command line as ``workerclass``."""

from workerclass.cli.main import main

main()
