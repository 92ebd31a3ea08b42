"""``check``, ``admit`` and ``resolve``: the core decisions over STATE, offline."""

from __future__ import annotations

import dataclasses
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
from .app import Command, QuietOption, app, set_quiet
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


def load_state(paths: list[str], exclude: list[str] | None = None, *, whole: bool = False) -> State:
    """The State of STATE paths; its warnings (read ones, such as skipped documents, first), unless -q.

    What cannot be read (a file's invalid YAML, a duplicate identity) is said on stderr with file
    and line, one line each, and the rest is read: the command goes on and exits 2 at the end
    (:func:`~.output.outcome`). ``whole``: a command that needs all of STATE (``plan`` compares two,
    ``admit`` decides against it, ``preflight`` judges an install) stops there instead. A STATE
    without any object workerclass reads is an error, never a success over nothing.
    """
    errors: list[str] = []
    state = read_state(paths, errors=errors, exclude=exclude or ())
    for line in errors:
        error(line)
    if errors and whole:
        count = len(errors)
        fail(
            f"{state_label(paths)}: {count} part{'' if count == 1 else 's'} could not be read (above): nothing decided"
        )
    SETTINGS.read_errors += len(errors)
    for warning in state.warnings:
        warn(warning)
    if not state.records and not state.auxiliary and not state.cluster_instancetypes:
        fail(
            f"{state_label(paths)}: no object workerclass reads (no WorkerPlatform, WorkerClass, Kubernetes, "
            "KubernetesNodes, pool HelmRelease or ComputePlane): check the paths and --exclude"
        )
    return state


def _name(kind: str, namespace: str, name: str) -> str:
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def _decision_cell(decision: Decision) -> list[Styled]:
    lines = [Styled(str(v), "red") for v in decision.denials]
    lines += [Styled(f"patch {op['op']} {op['path']} = {op.get('value')}", "cyan") for op in decision.patch]
    lines += [Styled(f"warning {w}", "yellow") for w in decision.warnings]
    return lines


#: kinds whose stored object ``check --stored`` judges as it would be created: admission lets an
#: UPDATE that leaves their spec alone through (a finalizer removed, a label), so an UPDATE of itself
#: would say nothing of a stored class with ``spec: null`` or an unpinned image
JUDGED_AS_CREATED = ("WorkerClass", "WorkerPlatform")


def checked(state: State, record: ObjectRecord, stored: bool) -> Decision:
    """``check``'s decision on one object: a CREATE of it, or (``stored``) an UPDATE of itself;
    a stored class or platform is judged by every rule of its spec, the decision still an UPDATE."""
    if not stored:
        return admit(state, "CREATE", record.obj, None)
    if record.kind in JUDGED_AS_CREATED:
        judged = validate(state, "CREATE", record.obj, None)
        return dataclasses.replace(judged, operation="UPDATE")
    return admit(state, "UPDATE", record.obj, record.obj)


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
        name = _name(record.kind, record.namespace, record.name)
        # The Ant schema gives a testcase no attribute for its file: where each object is read from
        # goes in system-out (every object) and in its failure (a denied one), never in its name, so
        # that a CI's history of a test case survives lines moving in the file.
        out_lines.append(f"{name}: at {record.where}")
        case = ElementTree.SubElement(suite, "testcase", {"classname": record.kind, "name": name, "time": "0"})
        if not decision.allowed:
            first = decision.denials[0] if decision.denials else None
            failure = ElementTree.SubElement(
                case,
                "failure",
                {
                    "message": (str(first) if first is not None else "denied") + f" (at {record.where})",
                    "type": first.code if first is not None else "Denied",
                },
            )
            failure.text = "\n".join(str(v) for v in decision.denials) + f"\nat {record.where}"
        for warning in decision.warnings:
            out_lines.append(f"{name}: warning: {warning}")
    ElementTree.SubElement(suite, "system-out").text = "\n".join(out_lines)
    ElementTree.SubElement(suite, "system-err").text = ""
    ElementTree.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(root, encoding="unicode") + "\n"


@app.command(cls=Command)
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
    exclude: ExcludeOption = None,
    quiet: QuietOption = False,
) -> None:
    """Admit every object in STATE, in dependency order: platform, classes, parent clusters, then pools.

    The default reading is CREATE for every object, as if the folder were applied to an empty
    cluster: a pool that omits workerClassName gets the platform default class (the patch is
    shown). --stored reads the folder as what the cluster already stores: each object is an
    UPDATE of itself, so a classless pool stays a legacy Talos pool (the reading resolve, render,
    plan and restore use); a stored WorkerClass or WorkerPlatform is judged by every rule of its
    spec, as on CREATE (admission lets an UPDATE that leaves a spec alone through).

    Every object is shown with the file and line it was read from (FILE; -o json: "file",
    "line"). -o junit writes one JUnit testcase per object (classname = kind); a denied object's
    failure carries its denials as CODE field: message, and where the object is.

    A file that cannot be read is said on stderr with its line, and the rest is checked.
    Exit 0 when all are allowed, 1 when any is denied, 2 when part of STATE cannot be read (that
    wins over a denial) or STATE holds no object workerclass reads.
    """
    set_quiet(quiet)
    operation = "UPDATE" if stored else "CREATE"
    with collector_paused():
        state = load_state(state_path, exclude)
        results = [(record, checked(state, record, stored)) for record in state.objects]
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
                        "file": record.file,
                        "line": record.line or None,
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
        out = table("OBJECT", "FILE", "RESULT", "DETAILS")
        for record, decision in results:
            verdict = Styled("allowed", "green") if decision.allowed else Styled("denied", "red")
            out.add_row(
                _name(record.kind, record.namespace, record.name), record.where, verdict, _decision_cell(decision)
            )
        console = stdout()
        if results:
            console.table(out)
        count = sum(1 for _, decision in results if not decision.allowed)
        text = f"{_count(len(results), 'object')}, {count} denied" if results else "no objects in STATE"
        reading = " (read as stored: each an UPDATE of itself)" if stored else " (each admitted as a CREATE)"
        unread = SETTINGS.read_errors
        if unread:
            reading += f"; {_count(unread, 'part')} of STATE could not be read"
        summary(console, text + reading, "red" if denied or unread else "green")
    raise typer.Exit(outcome(denied))


def _count(count: int, word: str) -> str:
    """``1 object``, ``2 objects``."""
    return f"{count} {word}" + ("" if count == 1 else "s")


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
    state = load_state(state_path, exclude, whole=True)
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
        # the request named, never printed whole: its values may hold a secret
        print_json({"kind": kind, "namespace": namespace or None, "name": name, **decision.as_dict()})
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
        _resolve(state_path, pool, output, exclude)


def _resolve(state_path: list[str], pool: str | None, output: Format, exclude: list[str] | None) -> None:
    state = load_state(state_path, exclude)
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
    raise typer.Exit(outcome(denied))


__all__ = [
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
