"""The command line: one module per command, output formatting kept apart."""
