"""``admit`` and ``resolve``: the core decisions over STATE, offline, and what every STATE command
shares: the STATE argument and ``--exclude``, reading STATE (:func:`load_state`), object names."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ..adapters.folder import LoadError, in_namespace, parse_documents, read_documents
from ..adapters.folder import load_state as read_state
from ..admission import admit, stored_object, validate
from ..api.resources import RELEASE_PREFIX
from ..api.webhooks import ADMITTED_OPERATIONS
from ..render import RenderError, template_hash
from ..resolve import Effective, resolve_all
from ..state import PoolRecord, State, identify
from ..violations import Violation, under_values
from .app import Command, QuietOption, app, set_quiet
from .chart import ChartOption, load_chart
from .output import (
    EXIT_DENIED,
    EXIT_OK,
    SETTINGS,
    Format,
    Styled,
    collector_paused,
    error,
    fail,
    no_pool,
    outcome,
    print_denials,
    print_json,
    stdout,
    summary,
    table,
    warn,
)

StateArgument = Annotated[
    list[str],
    typer.Argument(
        metavar="STATE...",
        help="Folders and files of manifests (.yaml, .yml, .json in any case; any depth, multi-document), "
        "or - for stdin: the cluster as GitOps holds it.",
        show_default=False,
    ),
]
OutputOption = Annotated[Format, typer.Option("--output", "-o", help="table for people, json for scripts.")]
NamespaceOption = Annotated[
    str | None,
    typer.Option(
        "--namespace",
        "-n",
        metavar="NS",
        help="The namespace of STATE's namespaced documents that name none, as kubectl -n gives it "
        "(a document of another namespace is an error).",
        show_default=False,
    ),
]
ExcludeOption = Annotated[
    list[str] | None,
    typer.Option(
        "--exclude",
        metavar="GLOB",
        help="Do not read paths matching GLOB (by the path below a STATE folder, or by name: vendor, "
        "'*.enc.yaml', 'apps/*/secrets.yaml'); repeatable. Helm chart folders (Chart.yaml beside templates/) "
        "are skipped anyway.",
        show_default=False,
    ),
]


def state_label(paths: list[str]) -> str:
    return " ".join(paths)


def load_state(
    paths: list[str],
    exclude: list[str] | None = None,
    *,
    whole: bool = False,
    chart: str | None = None,
    namespace: str | None = None,
    auxiliary: bool = False,
) -> State:
    """The State of STATE paths, under ``chart`` (``--chart``, see :func:`load_chart`); its warnings
    (read ones, such as skipped documents, first), unless -q.

    What cannot be read (a file's invalid YAML, a duplicate identity) is said on stderr with file
    and line, one line each, and the rest is read: the command goes on and exits 2 at the end
    (:func:`~.output.outcome`). ``whole``: a command that needs all of STATE (``plan`` compares two,
    ``admit`` decides against it, ``preflight`` judges an install) stops there instead. A STATE
    without any object workerclass reads is an error, never a success over nothing: objects only
    ``preflight`` reads (a Namespace, a webhook configuration) count only where ``auxiliary``.
    ``namespace``: ``-n``, given to namespaced documents that name none.
    """
    source = load_chart(chart)
    errors: list[str] = []
    state = read_state(paths, errors=errors, exclude=exclude or (), namespace=namespace)
    for line in errors:
        error(line)
    if errors and whole:
        count = len(errors)
        fail(
            f"{state_label(paths)}: {count} part{'' if count == 1 else 's'} could not be read (above): nothing decided"
        )
    SETTINGS.read_errors += len(errors)
    SETTINGS.read_error_lines += errors
    for warning in state.warnings:
        warn(warning)
    if not state.records and not (auxiliary and state.auxiliary) and not state.cluster_instancetypes:
        fail(
            f"{state_label(paths)}: no object workerclass reads (no WorkerPlatform, WorkerClass, Kubernetes, "
            "KubernetesNodes, pool HelmRelease or ComputePlane): check the paths and --exclude"
        )
    return state.with_chart(source) if chart is not None else state


def object_name(kind: str, namespace: str, name: str) -> str:
    """``Kind ns/name`` (``Kind name`` when cluster-scoped)."""
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def _read_request(path: str, namespace: str | None = None) -> dict[str, Any]:
    warnings: list[str] = []
    try:
        if path == "-":
            documents = parse_documents(typer.get_text_stream("stdin").read(), "<stdin>", warnings=warnings)
        else:
            documents = read_documents(Path(path), warnings=warnings)
        if namespace:
            documents = in_namespace(documents, namespace)
    except LoadError as error:
        fail(str(error))
    if len(documents) != 1:
        found = f"{len(documents)}" + (f" ({warnings[0]})" if warnings and not documents else "")
        fail(f"{path}: expected exactly one object, found {found}")
    obj = documents[0].obj
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if not isinstance(kind, str) or not kind or not isinstance(api_version, str) or not api_version:
        fail(f"{path}: not a Kubernetes object (it needs apiVersion and kind)")
    return obj


#: "CREATE, UPDATE or DELETE": the operations the webhooks admit, as the refusal words them
_ADMITTED_TEXT = f"{', '.join(ADMITTED_OPERATIONS[:-1])} or {ADMITTED_OPERATIONS[-1]}"


@app.command("admit", cls=Command)
def admit_command(
    state_path: StateArgument,
    file: Annotated[
        str, typer.Option("--file", "-f", metavar="FILE", help="The object of the request (YAML or JSON; - for stdin).")
    ],
    operation: Annotated[
        str,
        typer.Option(
            "--operation",
            metavar="|".join(ADMITTED_OPERATIONS),
            help="For UPDATE and DELETE the old object is the one in STATE with the same identity.",
            case_sensitive=False,
        ),
    ] = "CREATE",
    output: OutputOption = Format.table,
    exclude: ExcludeOption = None,
    chart: ChartOption = None,
    namespace: NamespaceOption = None,
    quiet: QuietOption = False,
) -> None:
    """Admit one request against STATE, as the webhooks would (mutation, then validation).

    Denials print as CODE FIELD MESSAGE rows (-o json: the decision of docs/contract.md, section 4).
    Exit 0 allowed, 1 denied, 2 when STATE or FILE cannot be read, FILE is not one object, or an
    UPDATE/DELETE has no old object in STATE.
    """
    set_quiet(quiet)
    operation = operation.upper()
    if operation not in ADMITTED_OPERATIONS:
        fail(f"--operation must be {_ADMITTED_TEXT}, not {operation!r}")
    if file == "-" and "-" in state_path:
        fail("stdin (-) can be STATE or FILE, not both")
    state = load_state(state_path, exclude, whole=True, chart=chart, namespace=namespace)
    obj = _read_request(file, namespace)
    kind, namespace, name = identify(obj)
    old = None
    if operation != "CREATE":
        old = _stored_object(state, kind, namespace, name)
        if old is None:
            where = state_label(state_path)
            fail(f"{operation} needs the old object: no {object_name(kind or '?', namespace, name or '?')} in {where}")
    decision = validate(state, "DELETE", None, old) if operation == "DELETE" else admit(state, operation, obj, old)
    if output is Format.json:
        # the request named, never printed whole: its values may hold a secret
        print_json({"kind": kind, "namespace": namespace or None, "name": name, **decision.as_dict()})
    else:
        console = stdout()
        verdict = Styled("allowed", "green") if decision.allowed else Styled("denied", "red")
        console.line(f"{operation} {object_name(kind, namespace, name)}: ", verdict)
        if decision.denials:
            out = table("CODE", "FIELD", "MESSAGE")
            for violation in decision.denials:
                out.add_row(Styled(violation.code, "red"), violation.field, violation.message)
            console.table(out)
        for op in decision.patch:
            console.line(Styled("patch", "cyan"), f" {op['op']} {op['path']} = {op.get('value')}")
        for warning in decision.warnings:
            warn(warning)
    raise typer.Exit(EXIT_OK if decision.allowed else EXIT_DENIED)


def _stored_object(state: State, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    """The old object of an UPDATE or DELETE (the library's own lookup, API.md section 6)."""
    return stored_object(state, kind, namespace, name)


def render_denials(record: PoolRecord, error: RenderError) -> list[Violation]:
    """A pool admission let through but the chart refuses to render, as the pool's denials.

    The chart's own failures keep their code, with their field under the pool's values
    (``spec.values...`` for a HelmRelease); any other render error is one ``Invalid`` denial of
    the pool's values. Either way the message says it is the render that refuses.
    """
    out = under_values(error.failures, record.field, preface="the chart refuses to render the pool: ")
    if out:
        return list(out)
    message = str(error).removeprefix(f"{record.identity}: ")
    return [Violation("Invalid", record.field, f"the pool cannot be rendered: {message}")]


def effective_json(
    effective: Effective, warnings: list[str] | None = None, *, template_hash_value: str | None = None
) -> dict[str, Any]:
    """One row of ``resolve -o json`` (API.md section 4), with ``denials`` (none), ``warnings`` and
    ``why``: each setting's reason, the table's WHY column (``{"class": "spec.workerClassName",
    "talos.version": "pool", ...}``).

    Raises :class:`RenderError` when ``template_hash_value`` is not given and the pool cannot be rendered.
    """
    why = {setting: reason for setting, _, reason in _rows(effective)}
    why["templateHash"] = "render"
    return {
        "pool": effective.identity,
        "class": effective.class_name,
        "bootstrap": effective.bootstrap,
        "kubernetesVersion": effective.kubernetes_version,
        "talos": effective.talos.as_dict() if effective.talos is not None else None,
        "kernelModules": [module.as_dict() for module in effective.kernel_modules],
        "image": effective.image.as_dict(),
        "installerImage": effective.installer_image,
        "templateHash": template_hash_value if template_hash_value is not None else template_hash(effective),
        "denials": [],
        "warnings": list(warnings or []),
        "why": why,
    }


def denied_json(record: PoolRecord, denials: list[Violation], warnings: list[str]) -> dict[str, Any]:
    """A denied pool's row of ``resolve -o json``: ``{"pool", "class", "denials", "warnings"}``."""
    return {
        "pool": record.identity,
        "class": record.class_name,
        "denials": [violation.as_dict() for violation in denials],
        "warnings": list(warnings),
    }


def _rows(effective: Effective) -> list[tuple[str, str, str]]:
    """(setting, value, why) for people."""
    origins = effective.origins
    rows = [
        ("class", effective.class_name or "(none: legacy Talos)", origins.get("class", "")),
        ("bootstrap", effective.bootstrap, origins.get("bootstrap", "")),
        ("infrastructure", effective.infrastructure, "parent cluster"),
        ("kubernetesVersion", effective.kubernetes_version, origins.get("kubernetesVersion", "")),
    ]
    if effective.talos is not None:
        for key, value in effective.talos.as_dict().items():
            shown = value if isinstance(value, str) else (", ".join(sorted(value)) or "{}")
            if key == "imageFactoryCA" and value:
                shown = "(PEM certificate)"
            rows.append((f"talos.{key}", shown or '""', origins.get(f"talos.{key}", "")))
        modules = ", ".join(
            m.name + (f" ({' '.join(m.parameters)})" if m.parameters else "") for m in effective.kernel_modules
        )
        rows.append(("kernelModules", modules or "[]", origins.get("kernelModules", "")))
    image = effective.image
    rows.append(("image.source", image.source, origins.get("image.source", origins.get("image.reference", ""))))
    if image.reference:
        rows.append(("image.reference", image.reference, origins.get("image.reference", "")))
    if image.template_tags is not None:
        rows.append(("image.templateTags", ", ".join(image.template_tags), origins.get("image.templateTags", "")))
    if effective.installer_image:
        rows.append(("installerImage", effective.installer_image, "effective talos settings"))
    return rows


def pool_option_check(state: State, pool: str | None, state_path: list[str]) -> None:
    if pool is not None and state.pool(pool) is None:
        fail(no_pool(pool, state_label(state_path)))


def find_pool(state: State, pool: str) -> PoolRecord | None:
    """The pool ``--pool NS/NAME`` names: by its own identity, else (``NS/<cluster>-<pool>``) the
    direct-writer HelmRelease ``kubernetes-nodes-<cluster>-<pool>`` that carries it."""
    found = state.pool(pool)
    namespace, _, name = pool.partition("/")
    if found is None and name and not name.startswith(RELEASE_PREFIX):
        found = state.pools.get(("HelmRelease", namespace, f"{RELEASE_PREFIX}{name}"))
    return found


def selected_pool(state: State, pool: str | None, state_path: list[str]) -> str | None:
    """``--pool`` as the identity of the pool it names (both spellings of a direct HelmRelease
    pool are accepted; its rows keep its own ``NS/kubernetes-nodes-...``); exit 2 when none."""
    if pool is None:
        return None
    found = find_pool(state, pool)
    if found is None:
        fail(no_pool(pool, state_label(state_path)))
    return found.identity


@app.command("resolve", cls=Command)
def resolve_command(
    state_path: StateArgument,
    pool: Annotated[str | None, typer.Option("--pool", metavar="NS/NAME", help="Only this pool.")] = None,
    output: OutputOption = Format.table,
    exclude: ExcludeOption = None,
    chart: ChartOption = None,
    namespace: NamespaceOption = None,
    quiet: QuietOption = False,
) -> None:
    """The effective settings of each pool, and why each value won.

    A denied pool's denials print on stderr as NS/NAME: CODE field: message. -o json has a row
    for every pool, each with "denials" and "warnings"; a denied pool's row is {"pool", "class",
    "denials", "warnings"}.

    Exit 0, 1 on a denied pool, 2 when STATE cannot be read or --pool NS/NAME names no pool.
    """
    set_quiet(quiet)
    with collector_paused():
        _resolve(state_path, pool, output, exclude, chart, namespace)


def _resolve(
    state_path: list[str],
    pool: str | None,
    output: Format,
    exclude: list[str] | None,
    chart: str | None = None,
    namespace: str | None = None,
) -> None:
    state = load_state(state_path, exclude, chart=chart, namespace=namespace)
    pool = selected_pool(state, pool, state_path)
    resolved = [row for row in resolve_all(state) if pool is None or row[0].identity == pool]
    denied = False
    rows: list[dict[str, Any]] = []
    console = stdout()
    as_json = output is Format.json
    for record, effective, denials, warnings in resolved:
        suffix = None
        if effective is not None:
            try:
                suffix = template_hash(effective)
            except RenderError as error:
                # Admission let the pool through but the chart refuses it: a denied pool, not a crash.
                effective, denials = None, render_denials(record, error)
        if effective is None or suffix is None:
            denied = True
            print_denials(record.identity, denials)
            if as_json:
                rows.append(denied_json(record, denials, warnings))
            continue
        if as_json:
            rows.append(effective_json(effective, warnings, template_hash_value=suffix))
            continue
        out = table("SETTING", "VALUE", "WHY", title=f"{record.identity} ({record.kind})")
        for setting, value, why in _rows(effective):
            out.add_row(setting, value, why)
        out.add_row("templateHash", suffix, "render")
        console.table(out)
        for warning in warnings:
            if not SETTINGS.quiet:
                console.line(Styled("warning:", "yellow"), " ", warning)
        console.line("")
    groups = node_group_rows(state) if pool is None else []
    if as_json:
        print_json({"pools": rows, "nodeGroups": groups})
        raise typer.Exit(outcome(denied))
    for group in groups:
        console.line(
            f"{group['pool']} (node group {group['group']} of Kubernetes {group['parent']}): {NODE_GROUP_WORDS}"
        )
    if groups:
        console.line("")
    if not resolved and not groups:
        summary(console, "no pools in STATE")
    raise typer.Exit(outcome(denied))


#: what a parent's node group is, for people
NODE_GROUP_WORDS = (
    "a classless pool of the parent kubernetes chart (legacy Talos; rendered by that chart, not resolved here)"
)


def node_group_rows(state: State) -> list[dict[str, Any]]:
    """The parent Kubernetes apps' node groups as JSON rows (``check`` and ``resolve``): each a
    classless pool of the parent chart, named ``<cluster>-<group>`` as its objects are."""
    return [
        {"pool": f"{namespace}/{name}-{group}", "parent": f"{namespace}/{name}", "group": group, "class": None}
        for namespace, name, group in state.parent_node_groups()
    ]


__all__ = [
    "ChartOption",
    "ExcludeOption",
    "OutputOption",
    "StateArgument",
    "denied_json",
    "effective_json",
    "load_state",
    "node_group_rows",
    "object_name",
    "pool_option_check",
    "render_denials",
    "selected_pool",
    "state_label",
]
