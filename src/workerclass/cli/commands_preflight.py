"""``preflight``: is the installed webhook safe to rely on before class-defaulting creates are exposed?

The door over :mod:`workerclass.ops.preflight`: it reads the installation from STATE folders, or
live from the API server (``--live``, ``--kubeconfig FILE``, ``--context NAME``: through
:mod:`workerclass.adapters.live`), prints the checks (a table and a one-line verdict, or the JSON
of API.md section 4, the same for both readings) and maps the verdict to an exit code (0 safe,
1 not, 2 when STATE or the cluster cannot be read, or STATE and a live reading are both given).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..ops.preflight import Preflight, preflight
from .app import QuietOption, app, set_quiet
from .commands_core import OutputOption, load_state
from .output import EXIT_DENIED, EXIT_OK, Format, Styled, fail, print_json, stdout, summary, table

_STYLE = {"ok": "green", "warn": "yellow", "fail": "red"}

OptionalStateArgument = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="STATE...",
        help="Folders and files of manifests (or - for stdin) holding the install, best exported from the "
        "cluster; leave out with --live, --kubeconfig or --context.",
        show_default=False,
    ),
]
LiveOption = Annotated[
    bool,
    typer.Option(
        "--live",
        help="Read the install from the API server: in-cluster, then KUBECONFIG, then ~/.kube/config.",
    ),
]
KubeconfigOption = Annotated[
    Path | None,
    typer.Option("--kubeconfig", metavar="FILE", help="Read the install from this kubeconfig's API server (--live)."),
]
ContextOption = Annotated[
    str | None,
    typer.Option(
        "--context", metavar="NAME", help="The kubeconfig context to read (--live); default: current-context."
    ),
]


def _print_table(result: Preflight) -> None:
    out = table("CHECK", "VERDICT", "OBJECT", "FIELD", "MESSAGE")
    for check in result.checks:
        out.add_row(
            check.check,
            Styled(check.verdict, _STYLE[check.verdict]),
            check.object or "",
            check.field or "",
            check.message,
        )
    console = stdout()
    console.table(out)
    failed = sum(1 for check in result.checks if check.verdict == "fail")
    warned = sum(1 for check in result.checks if check.verdict == "warn")
    warnings = f"{warned} warning{'' if warned == 1 else 's'}"
    if result.safe:
        summary(console, f"safe: no check failed ({warnings})", "green")
    else:
        summary(console, f"not safe: {failed} check{'' if failed == 1 else 's'} failed ({warnings})", "red")


def _live(kubeconfig: Path | None, context: str | None) -> Preflight:
    """The verdict over the install read from the API server; exit 2 (one line) when it cannot be read."""
    from ..adapters.live import LiveError, kube_client, load_kubeconfig, read_install

    try:
        target = load_kubeconfig(kubeconfig, context)
        client = kube_client(target)
    except LiveError as error:
        fail(str(error))
    try:
        install = read_install(client)
    except LiveError as error:
        fail(f"{target.label}: {error}")
    finally:
        client.close()
    return install.preflight()


@app.command("preflight")
def preflight_command(
    state_path: OptionalStateArgument = None,
    live: LiveOption = False,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    output: OutputOption = Format.table,
    quiet: QuietOption = False,
) -> None:
    """Verify the installed webhook's matching, failure policy and readiness, from STATE or the cluster.

    STATE holds the install (webhook configurations, Service, Deployment with its status,
    PodDisruptionBudget), best exported from the live cluster. --live reads them from the API
    server instead (in-cluster, then KUBECONFIG, then ~/.kube/config); --kubeconfig FILE and
    --context NAME say which, and imply --live. Read live, every webhook configuration is listed,
    then the Services, Deployments and PodDisruptionBudgets in the namespaces the webhooks call
    (and the Namespaces and pools when a webhook has a namespaceSelector); a list the identity may
    not read fails the check that needed it, naming the resource and the HTTP status.

    Exit 0 when safe (warnings allowed), 1 when any check fails, 2 when STATE or the cluster
    cannot be read (a missing kubeconfig, 401, an unreachable server), or STATE and a live
    reading are both given.
    """
    set_quiet(quiet)
    reading_live = live or kubeconfig is not None or context is not None
    if reading_live and state_path:
        fail("give STATE or a live reading (--live, --kubeconfig, --context), not both")
    if not reading_live and not state_path:
        fail("missing STATE: give folders or files of manifests, or --live (or --kubeconfig FILE) to read the cluster")
    result = _live(kubeconfig, context) if reading_live else preflight(load_state(state_path or []))
    if output is Format.json:
        print_json(result.as_dict())
    else:
        _print_table(result)
    raise typer.Exit(EXIT_OK if result.safe else EXIT_DENIED)
