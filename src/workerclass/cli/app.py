"""The Typer app every command registers on, with the options and helpers the commands share.

Its edge: the root command (``--version``, ``--quiet``), the click group that maps a broken pipe
and Ctrl-C to their exit codes, and :data:`QuietOption` / :func:`set_quiet` for the subcommands.
Command modules import this module; :mod:`.main` imports the command modules and runs the app,
so no command module imports another's registrar (no cycle).
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any

import typer
from typer import _click
from typer.core import TyperArgument, TyperCommand, TyperGroup

from ..chart.source import ChartTextMissing
from .output import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, EXIT_USAGE, SETTINGS, fail

__all__ = ["CONTEXT", "Command", "Group", "QuietOption", "app", "set_quiet", "silence_stdout", "version"]

CONTEXT = {"help_option_names": ["-h", "--help"]}


def silence_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so the interpreter's last flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # pragma: no cover - stdout without a file descriptor
        pass


class Group(TyperGroup):
    """Maps a broken pipe and Ctrl-C to their own exit codes instead of click's 1 ("Aborted!")."""

    def invoke(self, ctx: _click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            silence_stdout()
            raise typer.Exit(EXIT_BROKEN_PIPE) from None
        except KeyboardInterrupt:
            sys.stderr.write("\n")
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except ChartTextMissing as missing:  # an output that needs the chart's own text says how to give it
            fail(str(missing))


class Command(TyperCommand):
    """A command whose usage line names its arguments as people write them: ``STATE...`` (or
    ``[STATE...]`` when optional), not Typer's ``{STATE...}...``."""

    def collect_usage_pieces(self, ctx: _click.Context) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                name = param.metavar or (param.name or "").upper()
                if param.nargs != 1 and not name.endswith("..."):
                    name += "..."
                pieces.append(name if param.required else f"[{name}]")
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces


app = typer.Typer(
    name="workerclass",
    cls=Group,
    help="Worker classes and Kairos pools for managed Kubernetes: admit, resolve, render and plan "
    "a folder of manifests (STATE) offline, or serve the admission webhook and the controller against "
    "a cluster.\n\nExit codes: 0 ok, 1 denied, 2 unreadable input or usage error, 130 interrupted, "
    "141 output pipe closed (plan --detailed-exitcode: 2 machines replaced or deleted and nothing else, "
    "1 refused, denied or any error).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings=CONTEXT,
)


def version() -> str:
    from importlib import metadata

    try:
        return metadata.version("workerclass")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        from .. import __version__

        return __version__


def _print_version(value: bool) -> None:
    if value:
        sys.stdout.write(f"workerclass {version()}\n")
        raise typer.Exit(0)


@app.callback()
def _root(
    show_version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No warnings or summaries (results and errors still print).")
    ] = False,
) -> None:
    SETTINGS.quiet = quiet  # reset on every invocation (tests run many in one process)
    SETTINGS.error_exit = EXIT_USAGE
    SETTINGS.read_errors = 0
    SETTINGS.read_error_lines = []


QuietOption = Annotated[
    bool, typer.Option("--quiet", "-q", help="No warnings or summaries (results and errors still print).")
]


def set_quiet(quiet: bool) -> None:
    if quiet:
        SETTINGS.quiet = True
