"""``check``, ``admit`` and ``resolve``: the core decisions over a STATE folder, offline."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from ..adapters.folder import LoadError, parse_documents, read_documents
from ..admission import Decision, admit, validate
from ..render import template_hash
from ..resolve import Effective, resolve_all
from ..state import State, identify
from .main import app
from .output import (
    EXIT_DENIED,
    EXIT_OK,
    Format,
    fail,
    no_pool,
    print_denials,
    print_json,
    stderr,
    stdout,
    table,
)

StateArgument = Annotated[
    Path,
    typer.Argument(
        metavar="STATE",
        help="A folder of YAML manifests (any depth, multi-document): the cluster as GitOps holds it.",
        show_default=False,
    ),
]
OutputOption = Annotated[Format, typer.Option("--output", "-o", help="table for people, json for scripts.")]


def load_state(path: Path) -> State:
    try:
        state = State.load(path)
    except LoadError as error:
        fail(str(error))
    console = stderr()
    for warning in state.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}", markup=True)
    return state


def _name(kind: str, namespace: str, name: str) -> str:
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def _decision_cell(decision: Decision) -> str:
    lines = [f"[red]{escape(str(v))}[/]" for v in decision.denials]
    lines += [
        f"[cyan]patch[/] {escape(op['op'])} {escape(op['path'])} = {escape(str(op.get('value')))}"
        for op in decision.patch
    ]
    lines += [f"[yellow]warning[/] {escape(w)}" for w in decision.warnings]
    return "\n".join(lines)


@app.command()
def check(state_path: StateArgument, output: OutputOption = Format.table) -> None:
    """Admit every object in STATE as a CREATE, in dependency order.

    Platform, classes, parent clusters, then pools. Exit 0 when all are allowed, 1 when any is
    denied, 2 when STATE cannot be read.
    """
    state = load_state(state_path)
    results = [(record, admit(state, "CREATE", record.obj)) for record in state.objects]
    denied = any(not decision.allowed for _, decision in results)
    if output is Format.json:
        print_json(
            {
                "allowed": not denied,
                "objects": [
                    {
                        "kind": record.kind,
                        "namespace": record.namespace or None,
                        "name": record.name,
                        "origin": record.origin,
                        **decision.as_dict(),
                    }
                    for record, decision in results
                ],
                "warnings": state.warnings,
            }
        )
    else:
        out = table("OBJECT", "RESULT", "DETAILS")
        for record, decision in results:
            verdict = "[green]allowed[/]" if decision.allowed else "[red]denied[/]"
            out.add_row(escape(_name(record.kind, record.namespace, record.name)), verdict, _decision_cell(decision))
        console = stdout()
        console.print(out)
        count = sum(1 for _, decision in results if not decision.allowed)
        summary = f"{len(results)} objects, {count} denied" if results else "no objects in STATE"
        console.print(f"[{'red' if denied else 'green'}]{summary}[/]")
    raise typer.Exit(EXIT_DENIED if denied else EXIT_OK)


def _read_request(path: str) -> dict[str, Any]:
    try:
        if path == "-":
            documents = parse_documents(typer.get_text_stream("stdin").read(), "<stdin>")
        else:
            documents = read_documents(Path(path))
    except LoadError as error:
        fail(str(error))
    if len(documents) != 1:
        fail(f"{path}: expected exactly one object, found {len(documents)}")
    obj = documents[0].obj
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if not isinstance(kind, str) or not kind or not isinstance(api_version, str) or not api_version:
        fail(f"{path}: not a Kubernetes object (it needs apiVersion and kind)")
    return obj


@app.command("admit")
def admit_command(
    state_path: StateArgument,
    file: Annotated[
        str, typer.Option("--file", "-f", metavar="FILE", help="The object of the request (YAML or JSON; - for stdin).")
    ],
    operation: Annotated[
        str,
        typer.Option(
            "--operation",
            metavar="CREATE|UPDATE|DELETE",
            help="For UPDATE and DELETE the old object is the one in STATE with the same identity.",
            case_sensitive=False,
        ),
    ] = "CREATE",
    output: OutputOption = Format.table,
) -> None:
    """Admit one request against STATE, as the webhooks would.

    Exit 0 allowed, 1 denied, 2 when STATE or FILE cannot be read, FILE is not one object, or an
    UPDATE/DELETE has no old object in STATE.
    """
    operation = operation.upper()
    if operation not in ("CREATE", "UPDATE", "DELETE"):
        fail(f"--operation must be CREATE, UPDATE or DELETE, not {operation!r}")
    state = load_state(state_path)
    obj = _read_request(file)
    kind, namespace, name = identify(obj)
    old = None
    if operation != "CREATE":
        old = _stored_object(state, kind, namespace, name)
        if old is None:
            fail(f"{operation} needs the old object: no {_name(kind or '?', namespace, name or '?')} in {state_path}")
    decision = validate(state, "DELETE", None, old) if operation == "DELETE" else admit(state, operation, obj, old)
    if output is Format.json:
        print_json(decision.as_dict())
    else:
        console = stdout()
        verdict = "[green]allowed[/]" if decision.allowed else "[red]denied[/]"
        console.print(f"{operation} {escape(_name(kind, namespace, name))}: {verdict}")
        if decision.denials:
            out = table("CODE", "FIELD", "MESSAGE")
            for violation in decision.denials:
                out.add_row(f"[red]{violation.code}[/]", escape(violation.field), escape(violation.message))
            console.print(out)
        for op in decision.patch:
            console.print(f"[cyan]patch[/] {op['op']} {op['path']} = {escape(str(op.get('value')))}")
        for warning in decision.warnings:
            console.print(f"[yellow]warning:[/] {escape(warning)}")
    raise typer.Exit(EXIT_OK if decision.allowed else EXIT_DENIED)


def _stored_object(state: State, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    """The old object of an UPDATE or DELETE: the folder's, else a built-in class or the embedded platform."""
    stored = state.find(kind, namespace, name)
    if stored is not None:
        return dict(stored.obj)
    if kind == "WorkerClass":
        record = state.worker_class(name)
        if record is not None and record.builtin:
            return dict(record.obj)
    if kind == "WorkerPlatform" and name == "default":
        return dict(state.platform_object)
    return None


def effective_json(effective: Effective) -> dict[str, Any]:
    """One row of ``resolve -o json`` (API.md section 4)."""
    return {
        "pool": effective.identity,
        "class": effective.class_name,
        "bootstrap": effective.bootstrap,
        "kubernetesVersion": effective.kubernetes_version,
        "talos": effective.talos.as_dict() if effective.talos is not None else None,
        "kernelModules": [module.as_dict() for module in effective.kernel_modules],
        "image": effective.image.as_dict(),
        "installerImage": effective.installer_image,
        "templateHash": template_hash(effective),
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


@app.command("resolve")
def resolve_command(
    state_path: StateArgument,
    pool: Annotated[str | None, typer.Option("--pool", metavar="NS/NAME", help="Only this pool.")] = None,
    output: OutputOption = Format.table,
) -> None:
    """The effective settings of each pool, and why each value won.

    Exit 0, 1 on a denied pool (its denials on stderr as NS/NAME: CODE field: message), 2 when STATE
    cannot be read or --pool NS/NAME names no pool.
    """
    state = load_state(state_path)
    if pool is not None and state.pool(pool) is None:
        fail(no_pool(pool, state_path))
    resolved = [row for row in resolve_all(state) if pool is None or row[0].identity == pool]
    denied = False
    rows: list[dict[str, Any]] = []
    console = stdout()
    for record, effective, denials, warnings in resolved:
        if effective is None:
            denied = True
            print_denials(record.identity, denials)
            continue
        if output is Format.json:
            rows.append(effective_json(effective))
            continue
        out = table("SETTING", "VALUE", "WHY", title=escape(f"{record.identity} ({record.kind})"))
        for setting, value, why in _rows(effective):
            out.add_row(setting, escape(value), escape(why))
        out.add_row("templateHash", template_hash(effective), "render")
        console.print(out)
        for warning in warnings:
            console.print(f"[yellow]warning:[/] {escape(warning)}")
        console.print()
    if output is Format.json:
        print_json({"pools": rows})
    elif not resolved:
        console.print("no pools in STATE")
    raise typer.Exit(EXIT_DENIED if denied else EXIT_OK)


__all__ = ["StateArgument", "effective_json", "load_state"]
