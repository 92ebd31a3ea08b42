"""The ``workerclass`` command: registers each command module on one Typer app."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="workerclass",
    help="Worker classes and Kairos pools for managed Kubernetes: admit, resolve, render and plan "
    "a folder of manifests (STATE) offline, or serve the admission webhook against a cluster.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _register() -> None:
    # Each command module adds itself to ``app``; importing them here keeps start-up explicit.
    from . import (
        commands_core,  # noqa: F401  check, admit, resolve
        commands_preflight,  # noqa: F401  preflight
        commands_render,  # noqa: F401  render, plan
        commands_restore,  # noqa: F401  restore
        commands_serve,  # noqa: F401  serve webhook, manifests
    )


def main() -> None:
    _register()
    app()


if __name__ == "__main__":  # pragma: no cover
    # Run as ``python -m workerclass.cli.main``: this file is then a second module object, and
    # the commands register on the canonical one, so hand over to it.
    from workerclass.cli.main import main as canonical_main

    canonical_main()
