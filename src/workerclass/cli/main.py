"""The ``workerclass`` command: registers each command module on the one Typer app and runs it.

Exit codes every command shares: 0 ok, 1 denied (or not safe, not restorable), 2 unreadable
input or a usage error, 130 interrupted (Ctrl-C), 141 stdout closed early (``| head``), as
shells report SIGINT and SIGPIPE; under ``plan --detailed-exitcode`` 2 means replaced or deleted
machines and nothing else (errors exit 1 there, as terraform's do).

The app and the shared options live in :mod:`.app`; the command modules add themselves to it when
imported (:func:`_register`), and this module is the entry point (``workerclass.cli.main:main``).
"""

from __future__ import annotations

import sys
from typing import Any

from .app import app, silence_stdout
from .output import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED

__all__ = ["app", "main"]


def _register() -> None:
    # Each command module adds itself to ``app``; importing them here keeps start-up explicit.
    from . import (
        commands_chart_gate,  # noqa: F401  chart-gate
        commands_check,  # noqa: F401  check
        commands_core,  # noqa: F401  admit, resolve
        commands_manifests,  # noqa: F401  manifests
        commands_preflight,  # noqa: F401  preflight
        commands_render,  # noqa: F401  render, plan
        commands_restore,  # noqa: F401  restore
        commands_serve,  # noqa: F401  serve webhook, serve controller
    )


def main() -> None:
    _register()
    code: Any = 0
    try:
        app()
    except SystemExit as exit_:
        code = exit_.code
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
        code = EXIT_BROKEN_PIPE
    except KeyboardInterrupt:  # pragma: no cover - a Ctrl-C during the last flush
        code = EXIT_INTERRUPTED
    raise SystemExit(code)


if __name__ == "__main__":  # pragma: no cover
    # ``python -m workerclass.cli.main``: this file is then a module of its own, but the app and the
    # commands are the canonical modules' (imported relatively above), so running it here is the same.
    main()
