"""Helm's own engine, for a chart the port was not proved against (the optional ``helm`` extra).

Owns :class:`HelmEngine`: a chart's files loaded once into helm-python-sdk (Helm's template engine
as a library, the one the oracle uses) and rendered for a pool's values, release and namespace,
offline: the chart's ``lookup`` calls find nothing, as under ``helm template``, except its lookups of
instance types, which are answered from the State's (each ``lookup`` of a
VirtualMachineClusterInstancetype is rewritten, when the chart is loaded, into a read of the values
key :data:`INSTANCETYPES_KEY`, as the oracle does: without it every instance-type pool would fail
offline). The documents come
back in the chart's order (template files in path order, documents in file order, NOTES.txt and
empty documents left out) and parsed as Kubernetes reads YAML. A render Helm refuses is
:class:`~workerclass.chart.context.ChartRefused` naming the template that failed, never Helm's
message (a chart's ``fail`` may quote a value). :func:`helm_engine` is None without the extra.

Its edge: files and values in, plain dicts out; the only module that imports ``helm_python``.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from ..chart.context import ChartRefused
from ..chart.kubeyaml import k8s_load
from ..violations import Violation

__all__ = ["INSTANCETYPES_KEY", "PROBE_POOL", "HelmEngine", "helm_engine", "probe_gate"]

_DOCUMENT = re.compile(r"^---[ \t]*$", re.MULTILINE)
#: the values key the instance types are served under
INSTANCETYPES_KEY = "_workerclassInstancetypes"
_LOOKUP = re.compile(
    rb'lookup\s+"instancetype\.kubevirt\.io/v1beta1"\s+"VirtualMachineClusterInstancetype"\s+""\s+([^\s)}]+)'
)
_WHERE = re.compile(r"\(([^():\s]+\.(?:yaml|tpl|txt))(?::\d+)*\)")


#: the pool :func:`probe_gate` renders: one that names a class (sized by resources: no lookup needed)
PROBE_POOL = {
    "cluster": "probe",
    "workerClassName": "probe",
    "instanceType": "",
    "resources": {"cpu": "2", "memory": "4Gi"},
}


class HelmEngine:
    """One chart loaded into Helm's engine; :meth:`render` is the engine a ChartSource carries."""

    def __init__(self, files: Mapping[str, bytes]) -> None:
        import helm_python

        self._helm = helm_python
        with tempfile.TemporaryDirectory(prefix="workerclass-chart-") as folder:
            root = Path(folder) / "chart"
            for path, content in files.items():
                parts = PurePosixPath(path).parts
                if PurePosixPath(path).is_absolute() or ".." in parts or "\\" in path:
                    raise ValueError(f"the chart's file {path[:200]!r} would land outside the chart's folder")
                target = root / path
                target.parent.mkdir(parents=True, exist_ok=True)
                if path.startswith("templates/"):
                    content = _LOOKUP.sub(
                        rb'(index (index $.Values "'
                        + INSTANCETYPES_KEY.encode()
                        + rb'" | default dict) \1 | default dict)',
                        content,
                    )
                target.write_bytes(content)
            self._chart = helm_python.Chart.load(root)

    def manifests(
        self,
        values: Mapping[str, Any],
        *,
        release: str,
        namespace: str,
        instancetypes: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> dict[str, str]:
        """Helm's own output for the same inputs as :meth:`render`: each template's rendered text by
        its path in the chart, or Helm's error (``helm_python.HelmError``, its message unredacted)
        for a caller that may show it, as a test comparing with the chart does."""
        given = {**values, INSTANCETYPES_KEY: {name: dict(obj) for name, obj in (instancetypes or {}).items()}}
        rendered: dict[str, str] = self._chart.render(given, name=release, namespace=namespace, is_install=True)
        return rendered

    def render(
        self,
        values: Mapping[str, Any],
        *,
        release: str,
        namespace: str,
        instancetypes: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        """The chart's documents for ``values`` (the pool's over the platform's; the chart coalesces
        its own defaults) with ``instancetypes`` (name -> object) served to its lookups, or
        :class:`ChartRefused`."""
        try:
            manifests = self.manifests(values, release=release, namespace=namespace, instancetypes=instancetypes)
        except self._helm.HelmError as error:
            where = _WHERE.search(str(error))
            template = where.group(1) if where else "a template"
            raise ChartRefused(
                [
                    Violation(
                        "Invalid",
                        "spec",
                        f"the chart (rendered by Helm's engine) refuses the pool in {template}; its message is not "
                        "shown, as it may quote a value: render the chart with helm template to read it",
                    )
                ]
            ) from None
        objects: list[dict[str, Any]] = []
        for path in sorted(manifests):
            if path.endswith("NOTES.txt"):
                continue
            for part in _DOCUMENT.split(manifests[path]):
                document = k8s_load(part) if part.strip() else None
                if isinstance(document, dict) and document:
                    objects.append(document)
        return objects


def helm_engine(files: Mapping[str, bytes]) -> HelmEngine | None:
    """Helm's engine for ``files``, or None when the ``helm`` extra (helm-python-sdk) is not installed."""
    try:
        import helm_python  # noqa: F401
    except ImportError:
        return None
    return HelmEngine(files)


def probe_gate(engine: HelmEngine, version: str) -> bool | None:
    """Whether the chart leaves a pool that names a class to workerclass (our gate, or a gate of its
    own): ``True`` when Helm's engine renders no object for :data:`PROBE_POOL` at Kubernetes minor
    ``version``, ``False`` when it renders some, ``None`` when it refuses the pool (nothing shown)."""
    try:
        objects = engine.render({**PROBE_POOL, "version": version}, release="kubernetes-nodes-probe-pool",
                                namespace="tenant-probe")  # fmt: skip
    except ChartRefused:
        return None
    return not objects
