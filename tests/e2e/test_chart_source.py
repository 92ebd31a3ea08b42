"""The chart the pools run, read through Flux's source API on the test bed: the webhook reads the
ApplicationDefinition ``kubernetes-nodes``, the ExternalArtifact it names and the artifact itself
(served on loopback as source-controller serves it, checked against its digest), and refuses a
class-selecting write where that chart lacks the chart gate (``ChartNotGated``), or where it cannot be
verified; classless pools are never refused for it. The session's chart is the mirror's main chart
with our gate; this module publishes the ungated one, then a digest that does not match, and puts
the gated one back.

Seen to fail with the webhook's chart follower switched off (``serve webhook --chart`` pinning the
gated chart, so the published artifact is never read): the class-selecting CREATE stayed allowed on
the ungated chart (the wait for ChartNotGated timed out).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .conftest import TENANT, Served
from .flux import ArtifactServer, packaged, publish
from .kube import Kube, KubeError
from .testbed import wait_until

POOLS = "apps.cozystack.io/v1alpha1"


def pool(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": POOLS,
        "kind": "KubernetesNodes",
        "metadata": {"name": name, "namespace": TENANT},
        "spec": {"cluster": "example", "version": "v1.35", "minReplicas": 1, "maxReplicas": 2, **spec},
    }


def refusal(kube: Kube, obj: dict[str, Any]) -> str:
    """The webhook's answer to a dry-run CREATE of ``obj``: ``""`` when allowed, else its message."""
    try:
        kube.create(obj, dry_run=True)
    except KubeError as error:
        return error.message
    return ""


@pytest.fixture
def gated_again(kube: Kube, flux: ArtifactServer) -> Iterator[None]:
    yield
    publish(kube, flux, packaged("main+gate"))  # the session's chart, whatever the test left
    wait_until(lambda: refusal(kube, pool("example-probe", workerClassName="talos")) == "", timeout=30, what="gated")


def test_the_webhook_follows_the_chart_the_pools_run(
    kube: Kube, webhook: Served, flux: ArtifactServer, gated_again: None
) -> None:
    classified = pool("example-chart-kairos", workerClassName="kairos")
    defaulted = pool("example-chart-default")  # names no class: the platform default only on a gated chart
    assert refusal(kube, classified) == ""  # the session's gated chart: a class may be selected

    publish(kube, flux, packaged("main"))  # Cozystack's chart as it ships: no gate
    message = wait_until(lambda: refusal(kube, classified), timeout=30, what="ChartNotGated on the ungated chart")
    assert "ChartNotGated spec.workerClassName" in message
    assert "lacks the workerclass chart gate" in message and "main" in message
    assert refusal(kube, defaulted) == ""  # stays classless on the ungated chart: Cozystack keeps working
    # a classless pool is never refused for the chart: the legacy pool of the session takes a label
    legacy = kube.get(POOLS, "KubernetesNodes", "example-legacy", TENANT)
    legacy["metadata"].setdefault("labels", {})["team"] = "a"
    kube.replace(legacy)

    publish(kube, flux, packaged("main+gate"), digest="sha256:" + "0" * 64)  # bytes that do not match
    message = wait_until(
        lambda: (found := refusal(kube, classified)) and "cannot be verified" in found and found,
        timeout=30,
        what="ChartNotGated while the artifact cannot be verified",
    )
    assert "do not match the artifact's digest" in message
    assert flux.base not in message  # never the artifact's URL
