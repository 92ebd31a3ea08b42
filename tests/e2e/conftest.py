"""Fixtures of the e2e tier: a real kube-apiserver on etcd, the install applied, the webhook and
the controller as processes, and the Cluster API manager.

Every test of this folder is marked ``e2e`` (``pytest -m e2e`` runs the tier alone, ``-m 'not e2e'``
leaves it out). The test bed comes from ``make testbed``; where it is not built, the tier skips
with the reason, and under ``CI=true`` it fails instead (``.ci/run`` must not pass without it).

The CRDs come from where upstream publishes them, never from copies in the repository: Cluster
API's, the Talos and KubeVirt providers', Cilium's and Flux's from their Go modules in the module
cache (``CRD_MODULES`` of ``scripts/testbed.py``: the versions Cozystack installs, and why one
differs), the providers' with the contract labels their kustomizations add. Two have no module the
proxy serves and are read from the upstream mirror (``shared/upstream-crds/``, ``$WORKERCLASS_SHARED``
or ``../shared`` beside the repository), else from a checkout at a pinned commit
(:func:`tests.shared.upstream_crd`): Cozystack's WorkloadMonitor (``$WORKERCLASS_COZYSTACK``) and
Kairos's KairosConfigTemplate (``$WORKERCLASS_KAIROS_PROVIDER``; without it only the tests that apply
a Kairos template skip). KamajiControlPlane is a stand-in (``test_talos_job_script``). The application
kinds that Cozystack serves through its own API server (KubernetesNodes, Kubernetes) are served
here as CRDs of the same group, version and kind that keep every field (the application API does
not prune either).
"""

from __future__ import annotations

import base64
import copy
import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.shared import upstream_crd

from .flux import ArtifactServer, install_sources, packaged, publish, source_crds
from .kube import Kube
from .testbed import (
    ROOT,
    ApiServer,
    Binaries,
    CertAuthority,
    Identity,
    Process,
    crd_labels,
    crd_module,
    find_binaries,
    free_port,
    wait_until,
    workerclass_command,
)

NAMESPACE = "cozy-workerclass"
WEBHOOK_USER = f"system:serviceaccount:{NAMESPACE}:workerclass-webhook"
CONTROLLER_USER = f"system:serviceaccount:{NAMESPACE}:workerclass-controller"
ACCOUNT_GROUPS = ("system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}")
TENANT = "tenant-example"
#: where Cilium's module publishes its CRDs as files
CILIUM_CRDS = Path("pkg/k8s/apis/cilium.io/client/crds/v2")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"the e2e tier must run under CI=true: {reason}", pytrace=False)
    pytest.skip(reason)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.e2e)


_RAN: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" and report.outcome == "passed" and "/e2e/" in report.nodeid.replace("\\", "/"):
        _RAN.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Under ``CI=true`` a run that collected the e2e tier must have passed some of it (a tier that
    skipped whole is a failure there, not a green run). ``make test`` runs the tier in processes of
    its own (``-m 'e2e and not faults'``, ``-m 'e2e and faults'``) beside the rest (``-m 'not e2e'``):
    the check belongs to each run that selected some of the tier."""
    selected = any("/e2e/" in item.nodeid.replace("\\", "/") for item in session.items)
    if os.environ.get("CI") == "true" and selected and not _RAN:
        session.config.get_terminal_writer().line("e2e tier: no test of it passed under CI=true", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def binaries() -> Binaries:
    found, reason = find_binaries()
    if found is None:
        _unavailable(reason)
    assert found is not None
    return found


# ------------------------------------------------------------------ CRDs


def _crd(group: str, kind: str, plural: str, *, namespaced: bool = True) -> dict[str, Any]:
    """A stand-in CRD for a kind Cozystack serves through its application API: every field kept."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
            "scope": "Namespaced" if namespaced else "Cluster",
            "versions": [
                {
                    "name": "v1alpha1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            },
                        }
                    },
                    "subresources": {"status": {}},
                }
            ],
        },
    }


APPLICATION_CRDS = [
    _crd("apps.cozystack.io", "KubernetesNodes", "kubernetesnodes"),
    _crd("apps.cozystack.io", "Kubernetes", "kuberneteses"),
    # Cozystack's own CRD (cluster-scoped), served as a stand-in too: its Go module is not on the proxy
    _crd("cozystack.io", "ApplicationDefinition", "applicationdefinitions", namespaced=False),
]


def example_objects(*names: str) -> list[dict[str, Any]]:
    """Objects of the bundled ``examples/tenant-example`` (the realistic tenant ``make demo`` reads)."""
    out = []
    for name in names:
        out += [doc for doc in yaml.safe_load_all((ROOT / "examples" / "tenant-example" / name).read_text()) if doc]
    return out


def read_crds(folder: Path, pattern: str = "*.yaml") -> list[dict[str, Any]]:
    crds = []
    for path in sorted(folder.glob(pattern)):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                crds.append(doc)
    return crds


def helm_release_crds() -> list[dict[str, Any]]:
    """Flux's HelmRelease CRD from helm-controller's module."""
    folder = crd_module("helm-controller") / "config" / "crd" / "bases"
    return read_crds(folder, "helm.toolkit.fluxcd.io_helmreleases.yaml")


def provider_crds(name: str, pattern: str = "*.yaml") -> list[dict[str, Any]]:
    """A provider's CRDs from its module (``config/crd/bases``), each with the labels its
    kustomization adds (the contract label among them)."""
    folder = crd_module(name)
    labels = crd_labels(folder)
    crds = read_crds(folder / "config" / "crd" / "bases", pattern)
    for crd in crds:
        crd["metadata"].setdefault("labels", {}).update(labels)
    return crds


def install_crds(kube: Kube, crds: list[dict[str, Any]]) -> None:
    for crd in crds:
        crd = copy.deepcopy(crd)
        crd.get("metadata", {}).pop("annotations", None)  # cert-manager's CA injection has no meaning here
        spec = crd["spec"]
        spec.pop("conversion", None)  # conversion webhooks: none on the test bed (one version served)
        kube.apply(crd, manager="workerclass-e2e-crds")
    kube.wait_established(crd["metadata"]["name"] for crd in crds)
    kube.wait_listable(crds)


# ------------------------------------------------------------------ the API server


@pytest.fixture(scope="session")
def cluster(binaries: Binaries, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    server = ApiServer(tmp_path_factory.mktemp("testbed"), binaries)
    server.start()
    try:
        kube = Kube(server.url, server.ssl_context())
        install_crds(kube, APPLICATION_CRDS)
        install_crds(kube, helm_release_crds())
        # Flux's source API: the ExternalArtifact the pools' releases take their chart from
        install_crds(kube, [crd for path in source_crds() for crd in read_crds(path.parent, path.name)])
        # Cozystack's CNI: the chart's talos-reconcile Job comes with a CiliumNetworkPolicy
        install_crds(kube, read_crds(crd_module("cilium") / CILIUM_CRDS, "ciliumnetworkpolicies.yaml"))
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": TENANT}})
        # What a tenant had before workerclass was installed: its parent cluster and a legacy pool
        # (the KubernetesNodes and the HelmRelease Cozystack's API keeps it as).
        for obj in example_objects("cluster.yaml", "legacy-pool.yaml"):
            kube.apply(obj, manager="cozystack-api")
        kube.close()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def kube(cluster: ApiServer) -> Iterator[Kube]:
    client = Kube(cluster.url, cluster.ssl_context())
    yield client
    client.close()


def kube_as(cluster: ApiServer, identity: Identity) -> Kube:
    return Kube(cluster.url, cluster.ssl_context(identity))


# ------------------------------------------------------------------ the install


@dataclass
class WebhookCerts:
    ca: CertAuthority
    cert: Path
    key: Path
    ca_file: Path


@pytest.fixture(scope="session")
def webhook_certs(tmp_path_factory: pytest.TempPathFactory) -> WebhookCerts:
    folder = tmp_path_factory.mktemp("webhook-tls")
    ca = CertAuthority.create("workerclass-webhook-ca")
    cert, key = ca.write_pair(folder, "tls", ca.issue("workerclass-webhook", hosts=["127.0.0.1", "localhost"]))
    ca_file = folder / "ca.crt"
    ca_file.write_bytes(ca.pem)
    return WebhookCerts(ca, cert, key, ca_file)


def manifests(ca_file: Path, *extra: str) -> list[dict[str, Any]]:
    """``workerclass manifests --ca-bundle CA -o json`` as a user runs it (broken on purpose when
    ``WORKERCLASS_E2E_BREAK`` names one of :data:`BREAKS`: how each test was seen to fail)."""
    out = subprocess.run(
        [*workerclass_command(), "manifests", "--ca-bundle", str(ca_file), "-o", "json", *extra],
        capture_output=True,
        text=True,
        check=True,
    )
    items: list[dict[str, Any]] = json.loads(out.stdout)["items"]
    broken = os.environ.get("WORKERCLASS_E2E_BREAK")
    if broken:
        for obj in items:
            BREAKS[broken](obj)
    return items


def _webhooks(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return obj.get("webhooks", []) if obj["kind"].endswith("WebhookConfiguration") else []


def _break_failure_policy(obj: dict[str, Any]) -> None:
    for webhook in _webhooks(obj):
        webhook["failurePolicy"] = "Ignore"


def _break_mutating_rule(obj: dict[str, Any]) -> None:
    if obj["kind"] == "MutatingWebhookConfiguration":
        for webhook in obj["webhooks"]:
            webhook["rules"][0]["resources"] = ["kubernetesnode"]


def _break_immutability(obj: dict[str, Any]) -> None:
    if obj["kind"] == "CustomResourceDefinition" and obj["spec"]["names"]["kind"] == "WorkerClass":
        spec = obj["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        spec["x-kubernetes-validations"] = [
            r for r in spec["x-kubernetes-validations"] if r["rule"] != "self == oldSelf"
        ]


def _break_controller_status(obj: dict[str, Any]) -> None:
    if obj["kind"] == "ClusterRole" and obj["metadata"]["name"] == "workerclass-controller":
        obj["rules"] = [r for r in obj["rules"] if "workerclasses/status" not in r["resources"]]


def _break_controller_workers(obj: dict[str, Any]) -> None:
    if obj["kind"] == "ClusterRole" and obj["metadata"]["name"] == "workerclass-controller":
        obj["rules"] = [
            r for r in obj["rules"] if "machinedeployments" not in r["resources"] or "patch" not in r["verbs"]
        ]


#: deliberately broken bundles (``WORKERCLASS_E2E_BREAK=<name>``), each named in the docstring of the
#: test it was seen to fail
BREAKS = {
    "failure-policy-ignore": _break_failure_policy,
    "mutating-rule-singular": _break_mutating_rule,
    "no-immutability-rule": _break_immutability,
    "no-status-rbac": _break_controller_status,
    "no-worker-rbac": _break_controller_workers,
}


def served_from(configuration: dict[str, Any], base_url: str, ca_pem: bytes) -> dict[str, Any]:
    """A bundle's webhook configuration pointed at a server on loopback: ``clientConfig.service``
    becomes ``url`` (base + the service path) with the CA bundle, everything else kept (rules,
    selectors, match conditions, failure policy, timeout), as CAPI's own envtest registers its webhooks."""
    out = copy.deepcopy(configuration)
    for webhook in out.get("webhooks", []):
        client = webhook["clientConfig"]
        service = client.pop("service", None)
        if service is not None:
            client["url"] = base_url + service.get("path", "/")
        client["caBundle"] = base64.b64encode(ca_pem).decode()
    return out


@dataclass
class Install:
    """The bundle as applied: its objects, and its webhook configurations as registered."""

    objects: list[dict[str, Any]]
    webhook_port: int

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [obj for obj in self.objects if obj["kind"] == kind]


@pytest.fixture(scope="session")
def flux(kube: Kube) -> Iterator[ArtifactServer]:
    """The chart the pools run, as Cozystack serves it: the ApplicationDefinition ``kubernetes-nodes``
    naming an ExternalArtifact, whose artifact (the mirror's main chart with our gate, packaged) an
    HTTP server on loopback serves. The webhook and the controller read it (``adapters.flux``)."""
    server = ArtifactServer()
    try:
        install_sources(kube)
        publish(kube, server, packaged("main+gate"))
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def install(kube: Kube, webhook_certs: WebhookCerts, flux: ArtifactServer) -> Install:
    """Every document of the bundle server-side applied (a dry run of all first), the CRDs Established,
    the webhook configurations pointed at ``127.0.0.1:<port>`` where the ``webhook`` fixture serves."""
    objects = manifests(webhook_certs.ca_file)
    port = free_port()
    applied = []
    for obj in objects:
        if obj["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            obj = served_from(obj, f"https://127.0.0.1:{port}", webhook_certs.ca.pem)
        applied.append(obj)
    crds = [obj for obj in applied if obj["kind"] == "CustomResourceDefinition"]
    for crd in crds:
        kube.apply(crd, manager="workerclass-e2e-install", dry_run=True)
        kube.apply(crd, manager="workerclass-e2e-install")
    kube.wait_established(crd["metadata"]["name"] for crd in crds)
    rest = [obj for obj in applied if obj["kind"] != "CustomResourceDefinition"]
    webhooks = [obj for obj in rest if obj["kind"].endswith("WebhookConfiguration")]
    others = [obj for obj in rest if obj not in webhooks]
    # The bundle creates no namespace (deleting it must never delete one it did not create): the
    # namespace exists first, as the README's runbook says; a dry run needs it too.
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}, manager="workerclass-e2e")
    for obj in others:
        kube.apply(obj, manager="workerclass-e2e-install", dry_run=True)
    for obj in others:
        kube.apply(obj, manager="workerclass-e2e-install")
    # The webhook configurations last: from here on every matching write goes through the webhook.
    for obj in webhooks:
        kube.apply(obj, manager="workerclass-e2e-install", dry_run=True)
        kube.apply(obj, manager="workerclass-e2e-install")
    return Install(applied, port)


# ------------------------------------------------------------------ the servers as processes


@dataclass
class Served:
    process: Process
    port: int
    ca: bytes

    def ready(self) -> bool:
        import ssl
        import urllib.request

        context = ssl.create_default_context(cadata=self.ca.decode())
        try:
            with urllib.request.urlopen(f"https://127.0.0.1:{self.port}/readyz", context=context, timeout=2) as answer:
                return bool(answer.status == 200)
        except Exception:
            return False


def start_webhook(cluster: ApiServer, install: Install, webhook_certs: WebhookCerts, log: Path, *extra: str) -> Served:
    identity = cluster.identity(WEBHOOK_USER, ACCOUNT_GROUPS)
    process = Process(
        "workerclass-webhook",
        [
            *workerclass_command(), "serve", "webhook",
            "--kubeconfig", str(identity.kubeconfig),
            "--tls-cert", str(webhook_certs.cert), "--tls-key", str(webhook_certs.key),
            "--host", "127.0.0.1", "--port", str(install.webhook_port),
            "--log-level", "info", "--chart-poll", "0.5", *extra,
        ],
        log,
    ).start()  # fmt: skip
    return Served(process, install.webhook_port, webhook_certs.ca.pem)


@pytest.fixture(scope="session")
def webhook(
    cluster: ApiServer, install: Install, webhook_certs: WebhookCerts, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """``workerclass serve webhook`` as the bundle's ServiceAccount, ready (its cache synced)."""
    served = start_webhook(cluster, install, webhook_certs, tmp_path_factory.mktemp("webhook") / "webhook.log")
    try:
        wait_until(served.ready, timeout=60, what="the webhook's /readyz")
    except TimeoutError:
        served.process.stop()
        raise RuntimeError("the webhook did not become ready:\n" + served.process.tail()) from None
    yield served
    served.process.stop()


# ------------------------------------------------------------------ Cluster API


@dataclass
class ClusterAPI:
    """The Cluster API core manager, its CRDs, the providers' template CRDs and its webhooks."""

    process: Process
    health_port: int
    #: why the KairosConfigTemplate CRD is not served ("" when it is)
    kairos_absent: str = ""

    def ready(self) -> bool:
        import urllib.request

        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=2) as answer:
                return bool(answer.status == 200)
        except Exception:
            return False


#: the contract label Cluster API looks a provider's template CRD up by (v1beta1 -> the served version)
CONTRACT = "cluster.x-k8s.io/v1beta1"


def upstream_crds(which: str) -> list[dict[str, Any]] | None:
    """The CRDs of the upstream file ``which`` (see :data:`tests.shared.UPSTREAM_CRDS`), or None."""
    text, _ = upstream_crd(which)
    if text is None:
        return None
    return [
        doc
        for doc in yaml.safe_load_all(text)
        if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition"
    ]


def capi_crds(binaries: Binaries) -> tuple[list[dict[str, Any]], str]:
    """Cluster API's own CRDs from its module, the providers' template CRDs from theirs
    (KubevirtMachineTemplate, TalosConfigTemplate: the same schemas as the copies Cozystack ships),
    Cozystack's WorkloadMonitor as it ships it, then KairosConfigTemplate from its provider's
    repository (labelled here: the upstream file has no contract label, and Cluster API refuses a
    template CRD without one), with why the last is absent ("" when it is there). The last two
    come from the mirror or a checkout (:func:`tests.shared.upstream_crd`): no module serves them.
    Without the WorkloadMonitor the tier does not start; without the Kairos CRD only the tests that
    apply a KairosConfigTemplate skip (:func:`kairos_crd`)."""
    core = read_crds(crd_module("cluster-api") / "config" / "crd" / "bases")
    templates = provider_crds("capk", "*_kubevirtmachinetemplates.yaml") + provider_crds(
        "cabpt", "*_talosconfigtemplates.yaml"
    )
    monitor = upstream_crds("workloadmonitor")
    if monitor is None:
        _unavailable(f"Cozystack's WorkloadMonitor CRD is absent: {upstream_crd('workloadmonitor')[1]}")
    assert monitor is not None
    kairos = upstream_crds("kairosconfigtemplate")
    for crd in kairos or []:
        served = [version["name"] for version in crd["spec"]["versions"] if version.get("served")]
        crd["metadata"].setdefault("labels", {})[CONTRACT] = "_".join(served)
    absent = "" if kairos is not None else upstream_crd("kairosconfigtemplate")[1]
    return core + templates + monitor + (kairos or []), absent


KAIROS_CRD = "kairosconfigtemplates.bootstrap.cluster.x-k8s.io"


@pytest.fixture
def kairos_crd(capi: ClusterAPI) -> ClusterAPI:
    """Cluster API with the KairosConfigTemplate CRD served: a test that applies a Kairos template
    takes this, and skips (fails under ``CI=true``) with the reason where the CRD is absent."""
    if capi.kairos_absent:
        _unavailable(f"Kairos's KairosConfigTemplate CRD is absent: {capi.kairos_absent}")
    return capi


#: where the render's one departure from the upstream Kairos provider's schema lives
KAIROS_DISTRIBUTION = ("spec", "template", "spec", "distribution")


@contextmanager
def kairos_with_kubeadm(kube: Kube) -> Iterator[None]:
    """The KairosConfigTemplate CRD with ``kubeadm`` added to its ``distribution`` enum, as a Kairos
    bootstrap provider with the kubeadm path the design page requires would serve it (the upstream
    one lists ``k0s`` and ``k3s`` only); the upstream schema is put back afterwards."""
    original = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", KAIROS_CRD)
    crd = copy.deepcopy(original)
    for version in crd["spec"]["versions"]:
        node = version["schema"]["openAPIV3Schema"]
        for key in KAIROS_DISTRIBUTION:
            node = node["properties"][key]
        node["enum"] = [*node["enum"], "kubeadm"]
    kube.replace(crd)
    probe = {
        "apiVersion": "bootstrap.cluster.x-k8s.io/v1beta2",
        "kind": "KairosConfigTemplate",
        "metadata": {"name": "probe", "namespace": "default"},
        "spec": {"template": {"spec": {"distribution": "kubeadm", "role": "worker", "kubernetesVersion": "v1.35.6"}}},
    }
    wait_until(lambda: kube.create(probe, dry_run=True), timeout=30, what="the kubeadm distribution served")
    try:
        yield
    finally:
        current = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", KAIROS_CRD)
        current["spec"] = original["spec"]
        kube.replace(current)


def capi_webhooks(binaries: Binaries, base_url: str, ca_pem: bytes) -> list[dict[str, Any]]:
    """Cluster API's webhook configurations (``config/webhook/manifests.yaml`` of its module),
    registered with ``url:`` and the CA bundle as its own envtest does."""
    path = crd_module("cluster-api") / "config" / "webhook" / "manifests.yaml"
    out = []
    for doc in yaml.safe_load_all(path.read_text()):
        if isinstance(doc, dict) and doc.get("kind", "").endswith("WebhookConfiguration"):
            doc = served_from(doc, base_url, ca_pem)
            doc["metadata"]["name"] = "capi-" + doc["metadata"]["name"]
            out.append(doc)
    return out


@pytest.fixture(scope="session")
def capi(
    cluster: ApiServer, kube: Kube, binaries: Binaries, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ClusterAPI]:
    if binaries.capi_manager is None:
        _unavailable("the Cluster API manager is not built: run 'make testbed'")
    folder = tmp_path_factory.mktemp("capi")
    crds, kairos_absent = capi_crds(binaries)
    install_crds(kube, crds)
    ca = CertAuthority.create("capi-webhook-ca")
    ca.write_pair(folder / "certs", "tls", ca.issue("capi-webhook", hosts=["127.0.0.1", "localhost"]))
    webhook_port, health_port, diagnostics_port = free_port(), free_port(), free_port()
    process = Process(
        "capi-manager",
        [
            str(binaries.capi_manager),
            f"--kubeconfig={cluster.admin.kubeconfig}",
            f"--webhook-port={webhook_port}",
            f"--webhook-cert-dir={folder / 'certs'}",
            f"--health-addr=127.0.0.1:{health_port}",
            f"--diagnostics-address=127.0.0.1:{diagnostics_port}",
            "--insecure-diagnostics",
            "--leader-elect=false",
            "--skip-crd-migration-phases=StorageVersionMigration,CleanupManagedFields",
            "--sync-period=30s",
        ],
        folder / "capi-manager.log",
    ).start()
    running = ClusterAPI(process, health_port, kairos_absent)
    try:
        for configuration in capi_webhooks(binaries, f"https://127.0.0.1:{webhook_port}", ca.pem):
            kube.apply(configuration, manager="workerclass-e2e-capi")
        wait_until(running.ready, timeout=90, what="the Cluster API manager's /readyz")
    except Exception:
        process.stop()
        raise RuntimeError("the Cluster API manager did not start:\n" + process.tail()) from None
    yield running
    process.stop()


def cabpt_crds(binaries: Binaries) -> list[dict[str, Any]]:
    """CABPT's CRDs (TalosConfig, TalosConfigTemplate) from its module, with the contract labels
    its kustomization gives them (Cluster API finds a template CRD by them)."""
    return provider_crds("cabpt")


def provider_webhooks(name: str, base_url: str, ca_pem: bytes) -> list[dict[str, Any]]:
    """A provider's webhook configurations (``config/webhook/manifests.yaml`` of its module) by
    ``url:``, each named ``<name>-<its name>`` (the modules all call theirs the same)."""
    path = crd_module(name) / "config" / "webhook" / "manifests.yaml"
    out = []
    for doc in yaml.safe_load_all(path.read_text()):
        if isinstance(doc, dict) and doc.get("kind", "").endswith("WebhookConfiguration"):
            doc = served_from(doc, base_url, ca_pem)
            doc["metadata"]["name"] = f"{name}-" + doc["metadata"]["name"]
            out.append(doc)
    return out


def cabpt_webhooks(binaries: Binaries, base_url: str, ca_pem: bytes) -> list[dict[str, Any]]:
    """CABPT's webhook configurations by ``url:``."""
    return provider_webhooks("cabpt", base_url, ca_pem)


@pytest.fixture(scope="session")
def cabpt(
    capi: ClusterAPI, cluster: ApiServer, kube: Kube, binaries: Binaries, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ClusterAPI]:
    """The Talos bootstrap provider's manager (the version Cozystack ships), its CRDs and webhooks:
    what it refuses (a changed TalosConfigTemplate spec) is refused on the bed as in a cluster."""
    if binaries.cabpt_manager is None:
        _unavailable("the Talos bootstrap provider (CABPT) is not built: run 'make testbed'")
    folder = tmp_path_factory.mktemp("cabpt")
    install_crds(kube, cabpt_crds(binaries))
    ca = CertAuthority.create("cabpt-webhook-ca")
    ca.write_pair(folder / "certs", "tls", ca.issue("cabpt-webhook", hosts=["127.0.0.1", "localhost"]))
    webhook_port, health_port, metrics_port = free_port(), free_port(), free_port()
    process = Process(
        "cabpt-manager",
        [
            str(binaries.cabpt_manager),
            f"--kubeconfig={cluster.admin.kubeconfig}",
            f"--webhook-port={webhook_port}",
            f"--webhook-cert-dir={folder / 'certs'}",
            f"--health-addr=127.0.0.1:{health_port}",
            f"--diagnostics-address=127.0.0.1:{metrics_port}",
            "--insecure-diagnostics",
        ],
        folder / "cabpt-manager.log",
    ).start()
    running = ClusterAPI(process, health_port)
    try:
        for configuration in cabpt_webhooks(binaries, f"https://127.0.0.1:{webhook_port}", ca.pem):
            kube.apply(configuration, manager="workerclass-e2e-cabpt")
        wait_until(running.ready, timeout=90, what="the CABPT manager's /readyz")
    except Exception:
        process.stop()
        raise RuntimeError("the CABPT manager did not start:\n" + process.tail()) from None
    yield running
    process.stop()


#: the namespace whose Cluster API objects the KubeVirt provider's controllers reconcile (its
#: ``--namespace``): nothing is put there, so they never act on the other tests' objects, while its
#: webhook (registered cluster-wide) judges every KubevirtMachineTemplate written to the bed
CAPK_NAMESPACE = "capk-e2e-idle"


@pytest.fixture(scope="session")
def capk(
    capi: ClusterAPI, cluster: ApiServer, kube: Kube, binaries: Binaries, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ClusterAPI]:
    """The KubeVirt provider's manager (the version Cozystack ships), its CRDs and its webhook:
    every KubevirtMachineTemplate written from here on is validated by CAPK as in a cluster. Its
    controllers need their own kinds' CRDs to start (KubevirtMachine, KubevirtCluster), and are
    confined to :data:`CAPK_NAMESPACE`; no KubeVirt runs, so they would have nothing to act on."""
    if binaries.capk_manager is None:
        _unavailable("the KubeVirt provider (CAPK) is not built: run 'make testbed'")
    folder = tmp_path_factory.mktemp("capk")
    install_crds(kube, provider_crds("capk"))
    if kube.find("v1", "Namespace", CAPK_NAMESPACE) is None:
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CAPK_NAMESPACE}})
    ca = CertAuthority.create("capk-webhook-ca")
    ca.write_pair(folder / "certs", "tls", ca.issue("capk-webhook", hosts=["127.0.0.1", "localhost"]))
    webhook_port, health_port, metrics_port = free_port(), free_port(), free_port()
    process = Process(
        "capk-manager",
        [
            str(binaries.capk_manager),
            f"--kubeconfig={cluster.admin.kubeconfig}",
            f"--webhook-port={webhook_port}",
            f"--webhook-cert-dir={folder / 'certs'}",
            f"--health-addr=127.0.0.1:{health_port}",
            f"--metrics-bind-addr=127.0.0.1:{metrics_port}",
            f"--namespace={CAPK_NAMESPACE}",
            "--leader-elect=false",
        ],
        folder / "capk-manager.log",
    ).start()
    running = ClusterAPI(process, health_port)
    try:
        for configuration in provider_webhooks("capk", f"https://127.0.0.1:{webhook_port}", ca.pem):
            kube.apply(configuration, manager="workerclass-e2e-capk")
        wait_until(running.ready, timeout=90, what="the CAPK manager's /readyz")
    except Exception:
        process.stop()
        raise RuntimeError("the CAPK manager did not start:\n" + process.tail()) from None
    yield running
    process.stop()
