"""``preflight``: is the installed webhook safe to rely on before class-defaulting creates are exposed?

The door over :mod:`workerclass.ops.preflight`: it reads the installation from STATE folders, or
live from the API server (``--live``, ``--kubeconfig FILE``, ``--context NAME``: through
:mod:`workerclass.adapters.live`), prints the checks (a table and a one-line verdict, or the JSON
of API.md section 4, the same for both readings) and maps the verdict to an exit code (0 safe,
1 not, 2 when STATE or the cluster cannot be read, or STATE and a live reading are both given).
``--uninstall`` asks instead what removing the package would leave (:mod:`workerclass.ops.uninstall`),
in the same output shape; it prints and never applies.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .app import Command, QuietOption, app, set_quiet
from .commands_core import ChartOption, ExcludeOption, NamespaceOption, OutputOption, load_state
from .output import EXIT_DENIED, EXIT_OK, Format, Styled, fail, print_json, stdout, summary, table

if TYPE_CHECKING:  # the checks (x509 among them) are imported by the command, not by every command's start
    from ..ops.preflight import Preflight

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
UninstallOption = Annotated[
    bool,
    typer.Option(
        "--uninstall",
        help="Say what removing the workerclass package would leave (Kairos pools, finalizers, the "
        "controller's objects) instead; prints, never applies.",
    ),
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


def _live(kubeconfig: Path | None, context: str | None, *, removing: bool = False) -> Preflight:
    """The verdict over the install read from the API server (``removing``: what uninstalling would
    leave); exit 2 (one line) when it cannot be read."""
    from ..adapters.kubeconfig import LiveError, kube_client, load_kubeconfig
    from ..adapters.live import read_install, read_uninstall

    try:
        target = load_kubeconfig(kubeconfig, context)
        client = kube_client(target)
    except LiveError as error:
        fail(str(error))
    try:
        install = read_uninstall(client) if removing else read_install(client)
    except LiveError as error:
        fail(f"{target.label}: {error}")
    finally:
        client.close()
    if removing:
        from ..ops.uninstall import uninstall

        return uninstall(install.state(), install.objects, install.source)
    return install.preflight()


def _uninstall_state(paths: list[str], exclude: list[str] | None) -> Preflight:
    """What removing the package would leave, from STATE: its classes and pools, and the objects of
    the controller's kinds it holds (labelled or pinned)."""
    from ..adapters.folder import LoadError, read_paths
    from ..ops.uninstall import uninstall
    from ..ops.workers import WORKER_KINDS
    from ..state import State
    from .output import warn

    kinds = {kind.kind for kind in WORKER_KINDS}
    warnings: list[str] = []
    try:
        documents = read_paths(paths, warnings=warnings, exclude=exclude or ())
        state = State.from_documents(documents, warnings=warnings)
    except LoadError as error:
        fail(str(error))
    for line in state.warnings:
        warn(line)
    return uninstall(state, [doc.obj for doc in documents if doc.obj.get("kind") in kinds])


@app.command("preflight", cls=Command)
def preflight_command(
    state_path: OptionalStateArgument = None,
    live: LiveOption = False,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    removing: UninstallOption = False,
    output: OutputOption = Format.table,
    exclude: ExcludeOption = None,
    chart: ChartOption = None,
    namespace: NamespaceOption = None,
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

    --uninstall says instead what removing the workerclass package would leave, and prints only:
    classified Kairos pools an old chart would render as Talos (fail; Talos ones: restore first,
    warn), custom classes held by the retain-while-selected finalizer (fail), and the objects the
    controller applied (fail) or pinned (warn), counted per pool.

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
    if reading_live:
        result = _live(kubeconfig, context, removing=removing)
    elif removing:
        result = _uninstall_state(state_path or [], exclude)
    else:
        from ..ops.preflight import preflight

        result = preflight(
            load_state(state_path or [], exclude, whole=True, chart=chart, namespace=namespace, auxiliary=True)
        )
    if output is Format.json:
        print_json(result.as_dict())
    else:
        _print_table(result)
    raise typer.Exit(EXIT_OK if result.safe else EXIT_DENIED)
