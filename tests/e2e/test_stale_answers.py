"""While the webhook's cache is not current but still inside ``--stale-after``, its answers say so:
the AdmissionReview ``warnings`` reach the client as HTTP ``Warning`` headers through the API server.

The HelmRelease API goes away under the running webhook (its CRD deleted: the watch ends, the lists
fail), a pool write is still answered from the last good state, and that answer carries
``workerclass: deciding on helmreleases... as of Ns ago (...)``; once the API is back and listed,
the next answer carries no such line.

Seen to fail against a broken webhook: with the handler's staleness lines switched off
(``stale = []``), no answer carried the warning (the wait timed out).
"""

from __future__ import annotations

from typing import Any

from .conftest import TENANT, Served, example_objects, helmrelease_crds, install_crds
from .kube import Kube
from .testbed import wait_until

POOLS = "apps.cozystack.io/v1alpha1"
HELM_RELEASES = "helmreleases.helm.toolkit.fluxcd.io"


def _scale(kube: Kube, replicas: int) -> list[str]:
    """A merge patch of the legacy pool's maxReplicas; the Warning headers of the answer."""
    resource = kube.resource(POOLS, "KubernetesNodes")
    answer = kube.http.patch(
        resource.path(TENANT, "example-legacy"),
        content=f'{{"spec": {{"maxReplicas": {replicas}}}}}',
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert answer.status_code == 200, answer.text[:300]
    return answer.headers.get_list("warning")


def test_a_stale_cache_says_so_in_its_answers(kube: Kube, webhook: Served) -> None:
    crds = helmrelease_crds()
    assert [w for w in _scale(kube, 4) if "deciding on" in w] == []  # current: not a word
    kube.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", HELM_RELEASES)
    try:
        found: list[Any] = []

        def warned() -> bool:
            found[:] = [w for w in _scale(kube, 5) if "workerclass: deciding on helmreleases" in w]
            return bool(found)

        wait_until(warned, timeout=30, interval=1, what="a staleness warning on the answer")
        assert "ago" in found[0]
    finally:
        install_crds(kube, crds)
        for obj in example_objects("legacy-pool.yaml"):
            if obj["kind"] == "HelmRelease":
                kube.apply(obj, manager="cozystack-api")

    def current() -> bool:
        return not [w for w in _scale(kube, 3) if "deciding on" in w]

    wait_until(current, timeout=60, interval=1, what="answers without staleness once HelmReleases are back")
