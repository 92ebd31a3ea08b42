"""``check``, ``admit`` and ``resolve``: the core decisions over STATE, offline."""

from __future__ import annotations

import socket
import sys
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any
from xml.etree import ElementTree

import typer

from ..adapters.folder import LoadError, parse_documents, read_documents
from ..adapters.folder import load_state as read_state
from ..admission import Decision, admit, stored_object, validate
from ..api.resources import RELEASE_PREFIX
from ..api.webhooks import ADMITTED_OPERATIONS
from ..chart import ChartFailure
from ..render import RenderError, template_hash
from ..resolve import Effective, resolve_all
from ..state import ObjectRecord, PoolRecord, State, identify
from ..violations import Violation
from .app import QuietOption, app, set_quiet
from .chart import ChartOption, load_chart
from .output import (
    EXIT_DENIED,
    EXIT_OK,
    SETTINGS,
    Format,
    Styled,
    collector_paused,
    fail,
    no_pool,
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


def state_label(paths: list[str]) -> str:
    return " ".join(paths)


def load_state(paths: list[str], chart: str | None = None) -> State:
    """The State of STATE paths (under ``chart``, see :func:`load_chart`); its warnings (read ones,
    such as skipped documents, first), unless -q."""
    source = load_chart(chart)
    try:
        state = read_state(paths)
    except LoadError as error:
        fail(str(error))
    for warning in state.warnings:
        warn(warning)
    return state.with_chart(source) if chart is not None else state


def _name(kind: str, namespace: str, name: str) -> str:
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def _decision_cell(decision: Decision) -> list[Styled]:
    lines = [Styled(str(v), "red") for v in decision.denials]
    lines += [Styled(f"patch {op['op']} {op['path']} = {op.get('value')}", "cyan") for op in decision.patch]
    lines += [Styled(f"warning {w}", "yellow") for w in decision.warnings]
    return lines


class CheckFormat(StrEnum):
    table = "table"
    json = "json"
    junit = "junit"


def _junit(paths: list[str], operation: str, results: list[tuple[ObjectRecord, Decision]]) -> str:
    """JUnit XML: one testcase per object (classname = kind), a failure carrying its denials."""
    failures = sum(1 for _, decision in results if not decision.allowed)
    suite_name = f"workerclass check {state_label(paths)}"
    # The Ant JUnit schema (JUnit.xsd, as Jenkins, GitLab and most CI readers take it): testsuites
    # carries no attributes; each testsuite has package and id, the counts, time, timestamp and
    # hostname, then properties, the testcases, system-out and system-err, in that order.
    root = ElementTree.Element("testsuites")
    suite = ElementTree.SubElement(
        root,
        "testsuite",
        {
            "name": suite_name,
            "package": "workerclass",
            "id": "0",
            "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S"),
            "hostname": socket.gethostname() or "localhost",
            "tests": str(len(results)),
            "failures": str(failures),
            "errors": "0",
            "time": "0",
        },
    )
    properties = ElementTree.SubElement(suite, "properties")
    ElementTree.SubElement(properties, "property", {"name": "operation", "value": operation})
    out_lines: list[str] = []
    for record, decision in results:
        case = ElementTree.SubElement(
            suite,
            "testcase",
            {"classname": record.kind, "name": _name(record.kind, record.namespace, record.name), "time": "0"},
        )
        if not decision.allowed:
            first = decision.denials[0] if decision.denials else None
            failure = ElementTree.SubElement(
                case,
                "failure",
                {
                    "message": str(first) if first is not None else "denied",
                    "type": first.code if first is not None else "Denied",
                },
            )
            failure.text = "\n".join(str(v) for v in decision.denials) + f"\n(from {record.origin})"
        for warning in decision.warnings:
            out_lines.append(f"{_name(record.kind, record.namespace, record.name)}: warning: {warning}")
    ElementTree.SubElement(suite, "system-out").text = "\n".join(out_lines)
    ElementTree.SubElement(suite, "system-err").text = ""
    ElementTree.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(root, encoding="unicode") + "\n"


@app.command()
def check(
    state_path: StateArgument,
    output: Annotated[
        CheckFormat, typer.Option("--output", "-o", help="table for people, json for scripts, junit for CI reports.")
    ] = CheckFormat.table,
    stored: Annotated[
        bool,
        typer.Option(
            "--stored",
            help="Admit each object as an UPDATE of itself (as already stored), not as a CREATE.",
        ),
    ] = False,
    chart: ChartOption = None,
    quiet: QuietOption = False,
) -> None:
    """Admit every object in STATE, in dependency order: platform, classes, parent clusters, then pools.

    The default reading is CREATE for every object, as if the folder were applied to an empty
    cluster: a pool that omits workerClassName gets the platform default class (the patch is
    shown). --stored reads the folder as what the cluster already stores: each object is an
    UPDATE of itself, so a classless pool stays a legacy Talos pool (the reading resolve, render,
    plan and restore use) and an unchanged class spec is not judged again.

    -o junit writes one JUnit testcase per object (classname = kind); a denied object's failure
    carries its denials as CODE field: message.

    Exit 0 when all are allowed, 1 when any is denied, 2 when STATE cannot be read.
    """
    set_quiet(quiet)
    operation = "UPDATE" if stored else "CREATE"
    with collector_paused():
        state = load_state(state_path, chart)
        results = [
            (record, admit(state, operation, record.obj, record.obj if stored else None)) for record in state.objects
        ]
    denied = any(not decision.allowed for _, decision in results)
    if output is CheckFormat.json:
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
    elif output is CheckFormat.junit:
        sys.stdout.write(_junit(state_path, operation, results))
    else:
        out = table("OBJECT", "RESULT", "DETAILS")
        for record, decision in results:
            verdict = Styled("allowed", "green") if decision.allowed else Styled("denied", "red")
            out.add_row(_name(record.kind, record.namespace, record.name), verdict, _decision_cell(decision))
        console = stdout()
        if results:
            console.table(out)
        count = sum(1 for _, decision in results if not decision.allowed)
        text = f"{len(results)} objects, {count} denied" if results else "no objects in STATE"
        reading = " (read as stored: each an UPDATE of itself)" if stored else " (each admitted as a CREATE)"
        summary(console, text + reading, "red" if denied else "green")
    raise typer.Exit(EXIT_DENIED if denied else EXIT_OK)


def _read_request(path: str) -> dict[str, Any]:
    warnings: list[str] = []
    try:
        if path == "-":
            documents = parse_documents(typer.get_text_stream("stdin").read(), "<stdin>", warnings=warnings)
        else:
            documents = read_documents(Path(path), warnings=warnings)
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
            metavar="|".join(ADMITTED_OPERATIONS),
            help="For UPDATE and DELETE the old object is the one in STATE with the same identity.",
            case_sensitive=False,
        ),
    ] = "CREATE",
    output: OutputOption = Format.table,
    chart: ChartOption = None,
    quiet: QuietOption = False,
) -> None:
    """Admit one request against STATE, as the webhooks would (mutation, then validation).

    Denials print as CODE FIELD MESSAGE rows (-o json: the API.md section 4 decision).
    Exit 0 allowed, 1 denied, 2 when STATE or FILE cannot be read, FILE is not one object, or an
    UPDATE/DELETE has no old object in STATE.
    """
    set_quiet(quiet)
    operation = operation.upper()
    if operation not in ADMITTED_OPERATIONS:
        fail(f"--operation must be {_ADMITTED_TEXT}, not {operation!r}")
    if file == "-" and "-" in state_path:
        fail("stdin (-) can be STATE or FILE, not both")
    state = load_state(state_path, chart)
    obj = _read_request(file)
    kind, namespace, name = identify(obj)
    old = None
    if operation != "CREATE":
        old = _stored_object(state, kind, namespace, name)
        if old is None:
            where = state_label(state_path)
            fail(f"{operation} needs the old object: no {_name(kind or '?', namespace, name or '?')} in {where}")
    decision = validate(state, "DELETE", None, old) if operation == "DELETE" else admit(state, operation, obj, old)
    if output is Format.json:
        print_json(decision.as_dict())
    else:
        console = stdout()
        verdict = Styled("allowed", "green") if decision.allowed else Styled("denied", "red")
        console.line(f"{operation} {_name(kind, namespace, name)}: ", verdict)
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
    out: list[Violation] = []
    for failure in error.failures:
        if not isinstance(failure, ChartFailure):
            continue
        where = failure.field
        if where == "spec" or where.startswith("spec."):
            where = record.field + where[len("spec") :]
        out.append(Violation(failure.code, where, f"the chart refuses to render the pool: {failure.message}"))
    if out:
        return out
    message = str(error).removeprefix(f"{record.identity}: ")
    return [Violation("Invalid", record.field, f"the pool cannot be rendered: {message}")]


def effective_json(
    effective: Effective, warnings: list[str] | None = None, *, template_hash_value: str | None = None
) -> dict[str, Any]:
    """One row of ``resolve -o json`` (API.md section 4), with ``denials`` (none) and ``warnings``.

    Raises :class:`RenderError` when ``template_hash_value`` is not given and the pool cannot be rendered.
    """
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


@app.command("resolve")
def resolve_command(
    state_path: StateArgument,
    pool: Annotated[str | None, typer.Option("--pool", metavar="NS/NAME", help="Only this pool.")] = None,
    output: OutputOption = Format.table,
    chart: ChartOption = None,
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
        _resolve(state_path, pool, output, chart)


def _resolve(state_path: list[str], pool: str | None, output: Format, chart: str | None = None) -> None:
    state = load_state(state_path, chart)
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
    if as_json:
        print_json({"pools": rows})
    elif not resolved:
        summary(console, "no pools in STATE")
    raise typer.Exit(EXIT_DENIED if denied else EXIT_OK)


__all__ = [
    "ChartOption",
    "OutputOption",
    "StateArgument",
    "denied_json",
    "effective_json",
    "load_state",
    "pool_option_check",
    "render_denials",
    "selected_pool",
    "state_label",
]
