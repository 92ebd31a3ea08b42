"""The command line: one module per command, output formatting kept apart.

- :mod:`.app`: the Typer app, the root options (``--version``, ``--quiet``) and the exit-code
  mapping of a broken pipe and Ctrl-C; every command module registers on it.
- :mod:`.main`: the entry point (``workerclass.cli.main:main``): imports the command modules, runs.
- :mod:`.chart`: the ``--chart DIR|TGZ`` option every command that reads STATE takes.
- :mod:`.commands_core`: ``admit``, ``resolve`` (and the STATE helpers others reuse).
- :mod:`.commands_check`: ``check``.
- :mod:`.commands_chart_gate`: ``chart-gate`` (our gate onto exactly the chart it was derived for).
- :mod:`.commands_render`: ``render``, ``plan``.
- :mod:`.commands_restore`: ``restore``.
- :mod:`.commands_preflight`: ``preflight`` (from STATE, or live from the API server).
- :mod:`.commands_serve`: ``serve webhook``, ``serve controller``.
- :mod:`.commands_manifests`: ``manifests`` (the install bundle, or the package's Helm chart).
- :mod:`.output`: JSON, tables, colour and the exit codes.
"""
