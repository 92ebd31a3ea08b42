"""Which chart each pool's release runs, as far as a State shows it, against the chart emulated.

``plan``, ``restore`` and ``preflight`` emulate one chart, the State's (``--chart``; the shipped
facts' without it). A pool's HelmRelease (a KubernetesNodes' backing ``kubernetes-nodes-<name>``, or
the HelmRelease pool itself) names its chart in ``spec.chartRef``: an ExternalArtifact or a HelmChart
(in the chartRef's namespace, else the release's). Where the State holds that source with
``status.artifact.digest``, the digest is compared with the digests of the archives known to hold
the emulated chart (:attr:`~workerclass.chart.source.ChartSource.artifacts`: the ``.tgz`` given with
``--chart``, an artifact verified against the chart in a cluster):

- ``emulated``: the release runs the emulated chart;
- ``other``: it runs an artifact that is not the emulated chart's: plan and restore do not predict
  for the pool, preflight fails;
- ``unknown``: no chartRef, the source is not held, it has no digest yet, or no archive of the
  emulated chart is known to compare with (a folder given with ``--chart``; preflight warns).

Its edge: a State in, plain values out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..api.resources import HELM_RELEASE, RELEASE_PREFIX
from ..state import PoolRecord, State

__all__ = ["SOURCE_KINDS", "ReleaseChart", "release_chart", "release_charts"]

#: the Flux sources a HelmRelease's ``spec.chartRef`` may name
SOURCE_KINDS = ("ExternalArtifact", "HelmChart")

Verdict = Literal["emulated", "other", "unknown"]


@dataclass(frozen=True, slots=True)
class ReleaseChart:
    """What the State shows of the chart one pool's release runs."""

    pool: str  # NS/NAME of the pool object
    verdict: Verdict
    source: str | None = None  # "ExternalArtifact NS/NAME"
    digest: str | None = None  # its status.artifact.digest
    revision: str | None = None

    def reason(self, emulated: str) -> str:
        """Why the pool is not predicted (``other``), or what cannot be told (``unknown``), in words."""
        where = self.source or "its chartRef"
        if self.verdict == "other":
            return (
                f"its release runs another chart than the one emulated ({emulated}): {where} serves artifact "
                f"{self.digest} (revision {self.revision or '?'}); give that chart with --chart to predict for it"
            )
        if self.verdict == "unknown":
            return f"which chart its release runs cannot be told from STATE ({where})"
        return f"its release runs the chart emulated ({emulated})"


def _release_object(state: State, record: PoolRecord) -> Mapping[str, Any] | None:
    name = record.name if record.kind == HELM_RELEASE.kind else f"{RELEASE_PREFIX}{record.name}"
    if record.kind not in (HELM_RELEASE.kind, "KubernetesNodes"):
        return None
    found = state.find(HELM_RELEASE.kind, record.namespace, name)
    return found.obj if found is not None else None


def release_chart(state: State, record: PoolRecord) -> ReleaseChart:
    """The chart ``record``'s release runs, as far as ``state`` shows it."""
    release = _release_object(state, record)
    spec = release.get("spec") if isinstance(release, Mapping) else None
    reference = spec.get("chartRef") if isinstance(spec, Mapping) else None
    if not isinstance(reference, Mapping) or reference.get("kind") not in SOURCE_KINDS:
        return ReleaseChart(record.identity, "unknown")
    kind, name = str(reference.get("kind")), str(reference.get("name") or "")
    namespace = str(reference.get("namespace") or record.namespace)
    source = f"{kind} {namespace}/{name}"
    held = state.auxiliary_object(kind, namespace, name)
    status = held.get("status") if isinstance(held, Mapping) else None
    artifact = status.get("artifact") if isinstance(status, Mapping) else None
    digest = artifact.get("digest") if isinstance(artifact, Mapping) else None
    revision = artifact.get("revision") if isinstance(artifact, Mapping) else None
    if not isinstance(digest, str) or not digest:
        return ReleaseChart(record.identity, "unknown", source)
    revision = revision if isinstance(revision, str) else None
    if digest in state.chart.artifacts:
        return ReleaseChart(record.identity, "emulated", source, digest, revision)
    verdict: Verdict = "other" if state.chart.artifacts else "unknown"
    return ReleaseChart(record.identity, verdict, source, digest, revision)


def release_charts(state: State) -> list[ReleaseChart]:
    """:func:`release_chart` of every KubernetesNodes and HelmRelease pool, in the State's pool order."""
    return [release_chart(state, record) for record in state.sorted_pools() if record.kind != "ComputePlane"]
