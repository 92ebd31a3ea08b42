"""What the design page warns about, on the real API server: a matching webhook with
``failurePolicy: Fail`` refuses a legacy pool's UPDATE while the webhook is down, although its
healthy handler would leave the pool unchanged; once the webhook is back and ready, the same
UPDATE passes.

Seen to fail against a broken bundle (``WORKERCLASS_E2E_BREAK=failure-policy-ignore``,
``failurePolicy: Ignore`` in both configurations): the UPDATE passed with the webhook down ("DID NOT
RAISE").
"""

from __future__ import annotations

import pytest

from .conftest import TENANT, Served
from .kube import Kube, KubeError
from .testbed import wait_until

POOLS = "apps.cozystack.io/v1alpha1"


def _scale(kube: Kube, replicas: int) -> None:
    kube.patch(POOLS, "KubernetesNodes", "example-legacy", {"spec": {"maxReplicas": replicas}}, namespace=TENANT)


def test_a_down_webhook_refuses_a_legacy_update_and_a_ready_one_lets_it_through(kube: Kube, webhook: Served) -> None:
    webhook.process.stop()
    try:
        with pytest.raises(KubeError) as caught:
            _scale(kube, 5)
        assert caught.value.code == 500
        assert "failed calling webhook" in caught.value.message
        assert "kubernetesnodes.mutate.workerclass.cozystack.io" in caught.value.message
        stored = kube.get(POOLS, "KubernetesNodes", "example-legacy", TENANT)
        assert stored["spec"]["maxReplicas"] != 5
    finally:
        webhook.process.start()
    wait_until(webhook.ready, timeout=60, what="the webhook ready again")
    _scale(kube, 5)
    stored = kube.get(POOLS, "KubernetesNodes", "example-legacy", TENANT)
    assert stored["spec"]["maxReplicas"] == 5
    assert "workerClassName" not in stored["spec"]
    _scale(kube, 3)
