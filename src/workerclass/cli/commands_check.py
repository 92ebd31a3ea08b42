"""``check``: every object of STATE admitted, in dependency order, as a table, JSON or JUnit.

The default reading is a CREATE of each object; ``--stored`` an UPDATE of itself, a stored class or
platform judged by every rule of its spec (:func:`checked`). Each object is shown with the file
and line it was read from.
"""

from __future__ import annotations

import dataclasses
import socket
import sys
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated
from xml.etree import ElementTree

import typer

from ..admission import Decision, admit, validate
from ..state import ObjectRecord, State
from .app import Command, QuietOption, app, set_quiet
from .commands_core import (
    ChartOption,
    ExcludeOption,
    NamespaceOption,
    StateArgument,
    load_state,
    node_group_rows,
    object_name,
    state_label,
)
from .output import SETTINGS, Styled, collector_paused, outcome, print_json, stdout, summary, table

__all__ = ["JUDGED_AS_CREATED", "check", "checked"]


def _decision_cell(decision: Decision) -> list[Styled]:
    lines = [Styled(str(v), "red") for v in decision.denials]
    lines += [Styled(f"patch {op['op']} {op['path']} = {op.get('value')}", "cyan") for op in decision.patch]
    lines += [Styled(f"warning {w}", "yellow") for w in decision.warnings]
    return lines


#: kinds whose stored spec ``check --stored`` also judges by the rules of a CREATE: admission lets an
#: UPDATE that leaves their spec alone through (a finalizer removed, a label), so an UPDATE of itself
#: would say nothing of a stored class with ``spec: null`` or an unpinned image; said as warnings
JUDGED_AS_CREATED = ("WorkerClass", "WorkerPlatform")


def checked(state: State, record: ObjectRecord, stored: bool) -> Decision:
    """``check``'s decision on one object: a CREATE of it, or (``stored``) exactly the webhook's
    decision on an UPDATE of the stored object onto itself (ratcheting included: a stored pool's
    refusals that the UPDATE leaves as stored are its warnings). A stored class or platform also
    gets, as warnings, what the rules of a CREATE refuse in its spec."""
    if not stored:
        return admit(state, "CREATE", record.obj, None)
    decision = admit(state, "UPDATE", record.obj, record.obj)
    if record.kind not in JUDGED_AS_CREATED:
        return decision
    created = validate(state, "CREATE", record.obj, None).denials
    said = [
        f"{violation} (allowed as stored: an update that leaves the spec alone goes through; "
        "a new object with this spec is refused)"
        for violation in created
        if violation not in decision.denials
    ]
    return dataclasses.replace(decision, warnings=decision.warnings + said) if said else decision


class CheckFormat(StrEnum):
    table = "table"
    json = "json"
    junit = "junit"


def _junit(paths: list[str], operation: str, results: list[tuple[ObjectRecord, Decision]], unread: list[str]) -> str:
    """JUnit XML: one testcase per object (classname = kind), a failure carrying its denials, and one
    testcase per part of STATE that could not be read (classname ``STATE``), an error carrying why."""
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
            "tests": str(len(results) + len(unread)),
            "failures": str(failures),
            "errors": str(len(unread)),
            "time": "0",
        },
    )
    properties = ElementTree.SubElement(suite, "properties")
    ElementTree.SubElement(properties, "property", {"name": "operation", "value": operation})
    out_lines: list[str] = []
    for line in unread:
        where, _, why = line.partition(": ")
        case = ElementTree.SubElement(suite, "testcase", {"classname": "STATE", "name": where, "time": "0"})
        ElementTree.SubElement(case, "error", {"message": line, "type": "Unreadable"}).text = why or line
        out_lines.append(f"{where}: could not be read")
    for record, decision in results:
        name = object_name(record.kind, record.namespace, record.name)
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
            help="Admit each object as an UPDATE of itself (as already stored), not as a CREATE: the "
            "webhook's decision on that UPDATE, ratcheting included.",
        ),
    ] = False,
    exclude: ExcludeOption = None,
    chart: ChartOption = None,
    namespace: NamespaceOption = None,
    quiet: QuietOption = False,
) -> None:
    """Admit every object in STATE, in dependency order: platform, classes, parent clusters, then pools.

    The default reading is CREATE for every object, as if the folder were applied to an empty
    cluster: a pool that omits workerClassName gets the platform default class (the patch is
    shown). --stored reads the folder as what the cluster already stores: each object is an
    UPDATE of itself, so a classless pool stays a legacy Talos pool (the reading resolve, render,
    plan and restore use), decided exactly as the webhook decides that UPDATE (a stored refusal the
    UPDATE leaves as stored is a warning: ratcheting); what the rules of a CREATE refuse in a stored
    WorkerClass's or WorkerPlatform's spec is said as warnings.

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
        state = load_state(state_path, exclude, chart=chart, namespace=namespace)
        results = [(record, checked(state, record, stored)) for record in state.objects]
    denied = any(not decision.allowed for _, decision in results)
    unread = list(SETTINGS.read_error_lines)
    if output is CheckFormat.json:
        print_json(
            {
                "allowed": not denied and not unread,
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
                "errors": unread,
                "nodeGroups": node_group_rows(state),
            }
        )
    elif output is CheckFormat.junit:
        sys.stdout.write(_junit(state_path, operation, results, unread))
    else:
        out = table("OBJECT", "FILE", "RESULT", "DETAILS")
        for record, decision in results:
            verdict = Styled("allowed", "green") if decision.allowed else Styled("denied", "red")
            out.add_row(
                object_name(record.kind, record.namespace, record.name), record.where, verdict, _decision_cell(decision)
            )
        console = stdout()
        if results:
            console.table(out)
        count = sum(1 for _, decision in results if not decision.allowed)
        text = f"{_count(len(results), 'object')}, {count} denied" if results else "no objects in STATE"
        reading = " (read as stored: each an UPDATE of itself)" if stored else " (each admitted as a CREATE)"
        groups = state.parent_node_groups()
        if groups:  # pools too, rendered by the parent chart: counted, never silent
            console.line(
                f"{_count(len(groups), 'node group')} of parent Kubernetes apps: classless pools of the parent "
                "kubernetes chart (" + ", ".join(f"{ns}/{name}-{group}" for ns, name, group in groups) + ")"
            )
        if SETTINGS.read_errors:
            reading += f"; {_count(SETTINGS.read_errors, 'part')} of STATE could not be read"
        summary(console, text + reading, "red" if denied or SETTINGS.read_errors else "green")
    raise typer.Exit(outcome(denied))


def _count(count: int, word: str) -> str:
    """``1 object``, ``2 objects``."""
    return f"{count} {word}" + ("" if count == 1 else "s")
