"""The WorkerClass controller (``workerclass serve controller``) against the real API server, as the
bundle's controller ServiceAccount: the status subresource written, the finalizer held while a
pool selects a custom class and released after, a restart that writes nothing, and one watch per
resource for the whole process (the audit log counts the controller's watches: with kopf beside
the cache, WorkerClasses were watched twice).

The finalizer is the second line behind the webhook's ``ClassInUse``: it matters when the webhook
is not in the way (uninstalled, or a direct HelmRelease writer's pool, which no webhook sees). The
test removes the validating configuration for the deletion and puts it back after.

Seen to fail against a broken bundle (``WORKERCLASS_E2E_BREAK=no-status-rbac``, the controller's
ClusterRole without ``workerclasses/status``): the status was never written (the wait timed out).
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workerclass.api import CONTROLLER_READS
from workerclass.ops.workers import WORKER_KINDS

from .conftest import ACCOUNT_GROUPS, CONTROLLER_USER, TENANT, Install, Served
from .kube import Kube
from .testbed import ApiServer, Process, chart_option, wait_until, workerclass_command

CLASSES = "cozystack.io/v1alpha1"
POOLS = "apps.cozystack.io/v1alpha1"
FINALIZER = "workerclass.cozystack.io/retain-while-selected"


@pytest.fixture(scope="module")
def controller(cluster: ApiServer, install: Install, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Process]:
    identity = cluster.identity(CONTROLLER_USER, ACCOUNT_GROUPS)
    process = Process(
        "workerclass-controller",
        [
            *workerclass_command(), "serve", "controller",
            "--kubeconfig", str(identity.kubeconfig),
            "--liveness-port", "0", "--metrics-port", "0", "--debounce", "0.1", "--retain-recheck", "1",
            *chart_option(),
        ],
        tmp_path_factory.mktemp("controller") / "controller.log",
    ).start()  # fmt: skip
    yield process
    process.stop()


def _status(kube: Kube, name: str) -> dict[str, Any]:
    return (kube.get(CLASSES, "WorkerClass", name).get("status")) or {}


def _conditions(status: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in status.get("conditions", [])}


def test_status_finalizer_and_a_quiet_restart(
    cluster: ApiServer, kube: Kube, webhook: Served, controller: Process, install: Install, tmp_path: Path
) -> None:
    name = "talos-e2e-controller-r1"
    kube.create(
        {
            "apiVersion": CLASSES,
            "kind": "WorkerClass",
            "metadata": {"name": name},
            "spec": {"bootstrap": "talos", "talos": {"version": "v1.13.6"}},
        }
    )
    # status: accepted, not in use; the finalizer on
    wait_until(
        lambda: _conditions(_status(kube, name)) == {"Accepted": "True", "InUse": "False", "WorkersApplied": "True"},
        timeout=30,
        what="the class status written (no pool: WorkersApplied True)",
    )
    wait_until(
        lambda: FINALIZER in kube.get(CLASSES, "WorkerClass", name)["metadata"].get("finalizers", []),
        timeout=30,
        what="the finalizer",
    )
    pool = {
        "apiVersion": POOLS,
        "kind": "KubernetesNodes",
        "metadata": {"name": "example-e2e-retained", "namespace": TENANT},
        "spec": {
            "cluster": "example", "workerClassName": name, "version": "v1.35",
            "minReplicas": 1, "maxReplicas": 2, "talos": {"version": "v1.13.6"},
        },
    }  # fmt: skip
    kube.create(pool)
    wait_until(lambda: _conditions(_status(kube, name)).get("InUse") == "True", timeout=30, what="InUse=True")
    # settled before the restart: the worker controller has reported the pool (no HelmRelease here), so
    # WorkersApplied is no longer the "not reconciled yet" that the class status may write first
    wait_until(
        lambda: (
            next(
                (c["reason"] for c in _status(kube, name).get("conditions", []) if c["type"] == "WorkersApplied"), None
            )
            == "WaitingForRelease"
        ),
        timeout=30,
        what="WorkersApplied WaitingForRelease",
    )
    status = _status(kube, name)
    assert status["pools"] == 1
    in_use = next(c for c in status["conditions"] if c["type"] == "InUse")
    assert in_use["message"].startswith("1 live pool(s) in 1 namespace(s) select this class")
    assert TENANT not in in_use["message"]  # a class is readable by every tenant: counts, no names

    # a restart: the same desired state, so not one write
    controller.stop()
    mark = cluster.audit_mark()
    restarted = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    controller.start()
    time.sleep(8)  # the cache lists and watches, the loops run on its first State
    assert controller.running, controller.tail()
    # one list-watch per resource for the whole process (a watch lasts 30 s before it is renewed)
    watches = [  # the audit log is written late: a watch of the stopped process can follow the mark
        w
        for w in cluster.requests_by(CONTROLLER_USER, since=mark, verbs=("watch",))
        if w.get("requestReceivedTimestamp", "") >= restarted
    ]

    # the worker controller's watches of the kinds it applies, by its pool label, are apart from the cache's
    def by_pool_label(watch: dict[str, Any]) -> bool:
        uri = watch.get("requestURI", "")
        return (
            "labelSelector=workerclass.cozystack.io%2Fpool" in uri
            or "labelSelector=workerclass.cozystack.io/pool" in uri
        )

    owned = sorted(w["objectRef"].get("resource", "") for w in watches if by_pool_label(w))
    watched = sorted(w["objectRef"].get("resource", "") for w in watches if not by_pool_label(w))
    assert "workerclasses" in watched and len(watched) == len(set(watched)), watched
    assert set(watched) <= {watched_resource.plural for watched_resource in CONTROLLER_READS}, watched
    assert len(owned) == len(set(owned)) and set(owned) <= {kind.plural for kind in WORKER_KINDS}, owned
    assert "serviceaccounts" in owned, owned  # (Cluster API is not served in this module)
    writes = cluster.writes_by(CONTROLLER_USER, since=mark)
    # the leader Lease's renewals are the election's heartbeat, not writes to what the controller manages
    described = [
        (w["verb"], w["objectRef"].get("resource"), w["objectRef"].get("name"))
        for w in writes
        if w["objectRef"].get("resource") != "leases"
    ]
    assert described == []

    # the webhook out of the way: the finalizer alone holds the class while the pool selects it
    validating = next(obj for obj in install.objects if obj["kind"] == "ValidatingWebhookConfiguration")
    kube.delete("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", validating["metadata"]["name"])
    try:
        kube.delete(CLASSES, "WorkerClass", name)
        time.sleep(3)
        held = kube.find(CLASSES, "WorkerClass", name)
        assert held is not None and held["metadata"].get("deletionTimestamp"), "deleted while selected"
        kube.delete(POOLS, "KubernetesNodes", "example-e2e-retained", TENANT)
        wait_until(lambda: kube.find(CLASSES, "WorkerClass", name) is None, timeout=30, what="the class released")
    finally:
        kube.apply(validating, manager="workerclass-e2e-install")
