"""The part of helm-unittest the chart's own suites use, to run their cases against our port.

A suite file (``tests/*_test.yaml`` of Cozystack's chart) holds suites with ``templates``,
``release``, ``set`` and ``tests``; each test has its own ``set``, ``release``,
``documentSelector`` and ``asserts``. :func:`suites` reads them as Kubernetes reads YAML,
:func:`values` builds a test's values from the dotted ``set`` keys (the suite's under the
test's), and :func:`check` evaluates one assert on rendered documents (``{"template", "object"}``)
or on the render's error, returning what failed (nothing when it holds). The asserts known here:
``failedTemplate``, ``equal``, ``notEqual``, ``exists``, ``notExists``, ``isNull``,
``matchRegex``, ``notMatchRegex``, ``contains``, ``notContains``, ``lengthEqual``, ``isKind``;
any other is reported as unsupported, never passed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .oracle import deep_merge
from .reference_yaml import read_documents

__all__ = ["check", "suites", "values"]

_MISSING = object()
_PATH_PART = re.compile(r"\[\s*(?:'([^']*)'|\"([^\"]*)\"|(-?\d+))\s*\]|([^.\[]+)")


def suites(folder: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Every suite of the ``*_test.yaml`` files of ``folder``, in path order."""
    for path in sorted(folder.glob("*_test.yaml")):
        for suite in read_documents(path.read_text(encoding="utf-8")):
            if isinstance(suite, dict):
                yield path, suite


def values(suite: dict[str, Any], test: dict[str, Any]) -> dict[str, Any]:
    """The test's values: each dotted ``set`` key a nested mapping, the suite's first, the test's over them."""
    out: dict[str, Any] = {}
    for layer in (suite.get("set") or {}, test.get("set") or {}):
        for dotted, value in layer.items():
            node: Any = value
            for part in reversed(dotted.split(".")):
                node = {part: node}
            out = deep_merge(out, node)
    return out


def _dig(obj: Any, path: str) -> Any:
    """The value at a helm-unittest path (``a.b[0]["c.d"]``), or :data:`_MISSING`."""
    for match in _PATH_PART.finditer(path):
        quoted, double, index, name = match.groups()
        if index is not None:
            position = int(index)
            if not isinstance(obj, list) or not -len(obj) <= position < len(obj):
                return _MISSING
            obj = obj[position]
            continue
        key = quoted if quoted is not None else double if double is not None else name
        if not isinstance(obj, dict) or key not in obj:
            return _MISSING
        obj = obj[key]
    return obj


def _equal(a: Any, b: Any) -> bool:
    """Value equality as YAML documents mean it: a boolean is never a number, 1 equals 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _holds(kind: str, spec: dict[str, Any], document: dict[str, Any]) -> tuple[bool, str] | None:
    got = _dig(document["object"], spec.get("path", ""))
    present = got is not _MISSING
    if kind in ("equal", "notEqual"):
        same = present and _equal(got, spec["value"])
        if kind == "equal":
            return same, f"{got!r} != {spec['value']!r}"
        return not same, f"{got!r} == {spec['value']!r}"
    if kind == "exists":
        return present, "missing"
    if kind in ("notExists", "isNull"):
        return (not present or got is None), f"{got!r} is there"
    if kind in ("matchRegex", "notMatchRegex"):
        if not isinstance(got, str):
            return False, f"{got!r} is not text"
        hit = re.search(spec["pattern"], got) is not None
        return (hit, f"{spec['pattern']!r} does not match {got[:120]!r}") if kind == "matchRegex" else (
            not hit, f"{spec['pattern']!r} matches {got[:120]!r}")  # fmt: skip
    if kind in ("contains", "notContains"):
        hit = isinstance(got, list) and any(_equal(item, spec["content"]) for item in got)
        return (hit if kind == "contains" else not hit), f"{spec['content']!r} in {got!r}: {hit}"
    if kind == "lengthEqual":
        return isinstance(got, list | dict) and len(got) == spec["count"], f"length of {got!r} is not {spec['count']}"
    if kind == "isKind":
        return document["object"].get("kind") == spec.get("of"), f"kind {document['object'].get('kind')}"
    return None


def check(
    assertion: dict[str, Any],
    test: dict[str, Any],
    suite: dict[str, Any],
    documents: Sequence[dict[str, Any]],
    error: str | None,
) -> list[str]:
    """What fails of ``assertion`` on the render (``documents``, or ``error`` when it was refused)."""
    options = {"documentSelector", "template", "documentIndex", "not"}
    ((kind, spec),) = [(key, value) for key, value in assertion.items() if key not in options]
    spec = spec or {}
    if kind == "failedTemplate":
        if error is None:
            return ["expected the render to fail, it rendered"]
        if "errorMessage" in spec and error != spec["errorMessage"]:
            return [f"error {error!r} != {spec['errorMessage']!r}"]
        if "errorPattern" in spec and not re.search(spec["errorPattern"], error):
            return [f"error {error!r} !~ {spec['errorPattern']!r}"]
        return []
    if error is not None:
        return [f"render failed: {error}"]
    templates = [assertion["template"]] if assertion.get("template") else list(suite.get("templates") or [])
    selector = assertion.get("documentSelector") or test.get("documentSelector")
    chosen = [d for d in documents if not templates or any(d["template"].endswith("/" + t) for t in templates)]
    if selector:
        chosen = [d for d in chosen if _equal(_dig(d["object"], selector["path"]), selector["value"])]
    if "documentIndex" in assertion:
        chosen = chosen[assertion["documentIndex"] : assertion["documentIndex"] + 1]
    if not chosen:
        return [f"{kind}: no document matches (templates {templates}, selector {selector})"]
    negate = bool(assertion.get("not"))
    out = []
    for document in chosen:
        verdict = _holds(kind, spec, document)
        if verdict is None:
            return [f"assert type {kind} is not supported here"]
        ok, why = verdict
        if ok == negate:
            out.append(f"{kind} {spec.get('path', '')}: {why}")
    return out
