"""Which Cozystack ``kubernetes-nodes`` chart a set of files is: its digest and its known identities.

Owns :class:`ChartIdentity` (a chart the port has been proved against: its name, version, digest,
whether it carries our chart gate, and the rules it implies, :class:`ChartRules`),
:func:`chart_digest` (a digest of a chart's files that a folder and its ``helm package`` archive
share) and :func:`identify` (files -> the known identity with that digest, or None).

The known identities are generated facts: ``scripts/sync-upstream.py`` digests each upstream chart
it is given, and the same chart with our gate patch (``deploy/chart-gate/``) applied, and writes
them with the rules each implies into ``data/facts.json`` (key ``charts``). Nothing here reads a
chart from disk: the files come in as a mapping (``workerclass.adapters.chart`` reads a folder or
an archive into one), so the controller can identify the artifact a HelmRelease points to the
same way the CLI identifies ``--chart DIR|TGZ``.

Its edge: a ``Mapping[str, bytes]`` in (paths relative to the chart's root, ``/``-separated, its
subcharts under ``charts/<name>/``), plain values out; pure apart from reading its package data.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import yaml

from ..api.frozen import fast_init
from .facts import DEFAULT_UPSTREAM, facts

__all__ = [
    "ChartIdentity",
    "ChartRules",
    "by_name",
    "chart_digest",
    "chart_metadata",
    "counted_files",
    "default_identity",
    "identify",
    "known_identities",
]


@fast_init
@dataclass(frozen=True, slots=True)
class ChartRules:
    """What a chart decides beyond the facts every known chart shares (admission and render follow it).

    ``immutable_fields``: values paths its schema makes immutable on UPDATE (``self == oldSelf``);
    ``parent_version``: it refuses a pool whose minor is ahead of the parent KamajiControlPlane's;
    ``cluster_name_drift``: it refuses a pool whose live MachineDeployment has another
    ``spec.clusterName``; ``unpin_hook``: it renders pre-delete hook objects ``<release>-unpin``.
    """

    immutable_fields: tuple[str, ...] = ()
    parent_version: bool = False
    cluster_name_drift: bool = False
    unpin_hook: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "immutableFields": list(self.immutable_fields),
            "parentVersion": self.parent_version,
            "clusterNameDrift": self.cluster_name_drift,
            "unpinHook": self.unpin_hook,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChartRules:
        return cls(
            immutable_fields=tuple(str(path) for path in data.get("immutableFields") or ()),
            parent_version=bool(data.get("parentVersion")),
            cluster_name_drift=bool(data.get("clusterNameDrift")),
            unpin_hook=bool(data.get("unpinHook")),
        )


@fast_init
@dataclass(frozen=True, slots=True)
class ChartIdentity:
    """A chart the port has been proved against (or, from :func:`identify`, files found to be one).

    ``name`` says which (``main``, ``pr3315``, and ``main+gate`` / ``pr3315+gate`` for the same
    charts with our gate applied); ``upstream`` is the upstream chart it is (``main``, ``pr3315``:
    the facts it renders with); ``source`` where that chart comes from, in words (the commit);
    ``version`` the ``version`` of its ``Chart.yaml`` (Cozystack's build sets it, so it is not part
    of the digest: :func:`identify` gives the version of the files it was handed); ``digest`` is
    :func:`chart_digest` of its files; ``gated``: it carries our chart gate (it renders nothing for a
    pool that names a worker class).
    """

    name: str
    upstream: str
    source: str
    version: str
    digest: str
    gated: bool
    rules: ChartRules

    def describe(self) -> str:
        """``main (cozystack main 3c780acd4), version 0.0.0, sha256:1234567890ab``: for people."""
        gate = ", with the workerclass chart gate" if self.gated else ""
        return f"{self.name} ({self.source}{gate}), version {self.version}, {self.digest[:19]}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "upstream": self.upstream,
            "source": self.source,
            "version": self.version,
            "digest": self.digest,
            "gated": self.gated,
            "rules": self.rules.as_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChartIdentity:
        return cls(
            name=str(data["name"]),
            upstream=str(data["upstream"]),
            source=str(data["source"]),
            version=str(data["version"]),
            digest=str(data["digest"]),
            gated=bool(data["gated"]),
            rules=ChartRules.from_dict(data.get("rules") or {}),
        )


# ------------------------------------------------------------------ which files count


#: The root of a chart or of a subchart: a ``Chart.yaml`` there is counted by its metadata.
_CHART_FILE = re.compile(r"^(?:charts/[^/]+/)*Chart\.yaml$")
#: The fields of Helm's chart metadata (``helm package`` writes ``Chart.yaml`` back from these only).
_METADATA_FIELDS = frozenset(
    {
        "apiVersion",
        "name",
        "home",
        "sources",
        "version",
        "description",
        "keywords",
        "maintainers",
        "icon",
        "condition",
        "tags",
        "appVersion",
        "deprecated",
        "annotations",
        "kubeVersion",
        "dependencies",
        "type",
    }
)
#: Helm's rule added to every ``.helmignore``: hidden files under ``templates/``.
_DEFAULT_IGNORE = ("templates/.?*",)


def _go_glob(pattern: str) -> re.Pattern[str]:
    """Go's ``filepath.Match`` pattern as a regular expression (``*`` and ``?`` stop at ``/``)."""
    out, i = [], 0
    while i < len(pattern):
        char = pattern[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        elif char == "[":
            end = pattern.find("]", i + 2)
            if end < 0:
                out.append(re.escape(char))
            else:
                body = pattern[i + 1 : end]
                negate = body.startswith("^")
                body = body[1:] if negate else body
                escaped = body.replace("\\", "\\\\").replace("^", "\\^")
                out.append(f"[{'^' if negate else ''}{escaped}]")
                i = end
        else:
            out.append(re.escape(char))
        i += 1
    return re.compile("".join(out) + r"\Z")


@fast_init
@dataclass(frozen=True, slots=True)
class _IgnoreRule:
    pattern: re.Pattern[str]
    negate: bool
    directory_only: bool
    scope: str  # "root": the whole path from the root; "path": the whole path; "base": the last part

    def matches(self, path: str) -> bool:
        subject = path.rsplit("/", 1)[-1] if self.scope == "base" else path
        return self.pattern.match(subject) is not None


def _ignore_rules(text: str) -> list[_IgnoreRule]:
    """Helm's ``ignore.Parse`` (``pkg/ignore/rules.go``): one pattern a line, ``#`` comments,
    ``!`` negates, a trailing ``/`` matches folders only, a leading ``/`` anchors at the root, a
    pattern without ``/`` matches the last part of a path."""
    rules: list[_IgnoreRule] = []
    for raw in [*text.splitlines(), *_DEFAULT_IGNORE]:
        rule = raw.strip()
        if not rule or rule.startswith("#") or "**" in rule:
            continue
        negate = rule.startswith("!")
        rule = rule.removeprefix("!")
        directory_only = rule.endswith("/")
        rule = rule.removesuffix("/")
        if rule.startswith("/"):
            scope, rule = "root", rule.removeprefix("/")
        else:
            scope = "path" if "/" in rule else "base"
        rules.append(_IgnoreRule(_go_glob(rule), negate, directory_only, scope))
    return rules


def _ignored(rules: list[_IgnoreRule], path: str, *, is_dir: bool) -> bool:
    """Helm's ``Rules.Ignore`` for one path."""
    for rule in rules:
        if rule.negate:
            if rule.directory_only and not is_dir:
                return True
            if not rule.matches(path):
                return True
            continue
        if rule.directory_only and not is_dir:
            continue
        if rule.matches(path):
            return True
    return False


def counted_files(files: Mapping[str, bytes]) -> list[str]:
    """The paths :func:`chart_digest` counts, sorted: what Helm loads from a chart folder and packages.

    A file is left out when the chart's root ``.helmignore`` (with Helm's own ``templates/.?*``)
    ignores it or one of its folders, as Helm's folder loader skips it; an archive ``helm package``
    wrote holds no such file to begin with.
    """
    rules = _ignore_rules(files[".helmignore"].decode("utf-8", "replace")) if ".helmignore" in files else []
    rules = rules or _ignore_rules("")
    kept: list[str] = []
    for path in sorted(files):
        parts = path.split("/")
        folders = ("/".join(parts[: depth + 1]) for depth in range(len(parts) - 1))
        if any(_ignored(rules, folder, is_dir=True) for folder in folders):
            continue
        if not _ignored(rules, path, is_dir=False):
            kept.append(path)
    return kept


def chart_metadata(text: bytes) -> dict[str, Any]:
    """A ``Chart.yaml`` as Helm's metadata: its known fields that are set (a mapping; {} when unreadable)."""
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError:
        return {}
    if not isinstance(loaded, dict):
        return {}
    return {str(key): value for key, value in loaded.items() if key in _METADATA_FIELDS and value not in (None, "")}


def _counted_bytes(path: str, content: bytes) -> bytes:
    if not _CHART_FILE.match(path):
        return content
    metadata = chart_metadata(content)
    metadata.pop("version", None)
    return json.dumps(metadata, sort_keys=True, separators=(",", ":"), default=str).encode()


def chart_digest(files: Mapping[str, bytes]) -> str:
    """``sha256:<hex>`` over the chart's files, the same for a folder and its ``helm package`` archive.

    Which files count: every file Helm loads from the folder and writes into its archive: the
    chart's and its subcharts' (``charts/<name>/...``), less what the root ``.helmignore`` ignores
    (:func:`counted_files`). Each counts by its bytes, except a chart's ``Chart.yaml`` (the root's
    and each subchart's), which counts by its metadata less ``version``, as compact JSON with sorted
    keys: ``helm package`` writes that file anew (comments and key order go), and Cozystack's build
    stamps the version, so the same templates, values and files under another version are the same
    chart. The digest is the sha256 of the lines ``<sha256 hex of the counted bytes>  <path>\\n``
    in path order (``sha256sum`` lines, sorted).
    """
    lines = "".join(
        f"{hashlib.sha256(_counted_bytes(path, files[path])).hexdigest()}  {path}\n" for path in counted_files(files)
    )
    return "sha256:" + hashlib.sha256(lines.encode()).hexdigest()


# ------------------------------------------------------------------ the known identities


@functools.cache
def _facts_charts() -> tuple[ChartIdentity, ...]:
    return tuple(ChartIdentity.from_dict(entry) for entry in facts().get("charts", ()))


def known_identities() -> tuple[ChartIdentity, ...]:
    """Every chart the port has been proved against, in the order the sync script wrote them."""
    return _facts_charts()


@functools.cache
def _by_digest() -> Mapping[str, ChartIdentity]:
    return {identity.digest: identity for identity in _facts_charts()}


def default_identity() -> ChartIdentity:
    """The chart the shipped facts describe (:data:`DEFAULT_UPSTREAM`): what applies when none is given."""
    return by_name(DEFAULT_UPSTREAM)


def by_name(name: str) -> ChartIdentity:
    """The known identity named ``name`` (KeyError when there is none)."""
    for identity in _facts_charts():
        if identity.name == name:
            return identity
    raise KeyError(name)


def identify(files: Mapping[str, bytes], *, known: Iterable[ChartIdentity] | None = None) -> ChartIdentity | None:
    """The known identity whose digest the files have (with the version of their ``Chart.yaml``), or None.

    ``known`` defaults to :func:`known_identities`.
    """
    digest = chart_digest(files)
    table = _by_digest() if known is None else {identity.digest: identity for identity in known}
    found = table.get(digest)
    if found is None:
        return None
    version = chart_metadata(files.get("Chart.yaml", b"")).get("version")
    return replace(found, version=str(version)) if version is not None else found
