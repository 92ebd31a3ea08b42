"""The webhook installation read live from the API server, for ``workerclass preflight --live``.

Its edge: a lightkube (sync) ``Client`` in, plain dicts out. :func:`read_install` returns an
:class:`Install`: the objects preflight checks (built into a State by ``State.from_objects``, as a
folder's are) and the lists the API server refused; :func:`live_preflight` is the whole verdict.
:func:`load_kubeconfig` and :func:`kube_client` make the client the command line uses.

What is read (each a ``list``, the least an identity needs for the checks):

1. every MutatingWebhookConfiguration and ValidatingWebhookConfiguration: the workerclass
   webhooks, and the others, whose outages refuse the same requests (``otherWebhooks``);
2. in each namespace of a Service that a workerclass webhook calls (``clientConfig.service``):
   its Services, Deployments (with their live ``status``) and PodDisruptionBudgets;
3. only when a workerclass webhook of a namespaced kind has a ``namespaceSelector``: every
   Namespace (their labels), and that kind's objects (KubernetesNodes, ComputePlanes) across all
   namespaces, to see whether the selector leaves out a namespace that holds some.

4. the Kairos bootstrap provider's KairosConfigTemplate CRD (one ``list`` by name): which bootstrap
   path Kairos pools get (:mod:`workerclass.ops.providers`);

5. the serving certificate: each Secret that a Deployment behind a webhook's Service mounts as a
   volume (``secret.secretName``; the bundle's is ``workerclass-webhook-tls``), one ``get`` each.
   Only its ``tls.crt`` is kept (:class:`~workerclass.ops.preflight.certificates.ServingCertificate`):
   ``tls.key`` and every other key are dropped right after the GET, never stored or printed. A
   Secret the identity may not get (403) or that is absent (404) is a warning of the ``caBundle``
   check, never a failure.

Nothing else: preflight reads no class, platform or parent cluster. A webhook that calls
``clientConfig.url`` names no namespace, so nothing is read for it; the ``service`` check says its
server cannot be verified.

:func:`read_uninstall` is ``preflight --uninstall``'s reading: the classes, the pools (KubernetesNodes,
their HelmReleases), and the objects the worker controller owns (labelled
:data:`~workerclass.ops.workers.POOL_LABEL`) or pinned (Helm-made, annotated
:data:`~workerclass.ops.workers.PINNED_ANNOTATION`), of every kind of
:data:`~workerclass.ops.workers.WORKER_KINDS`.

Errors: a list refused with an HTTP status (403 from RBAC, 404 for a group not served, 5xx) is an
:class:`~workerclass.ops.preflight.Unreadable`, which fails the check that needed it; a 404 for
the pools' kind means the API server does not serve it, so no namespace holds any. A 401, an
unreachable server, a timeout or a kubeconfig that cannot be used raise :class:`LiveError`, one
line that never quotes the server's message or its URL (a kubeconfig's server URL may carry
credentials): statuses through :func:`~workerclass.adapters.kube.short_error`.

lightkube is imported lazily (it comes with the ``controller`` extra): importing this module
needs no client.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..api.resources import HELM_RELEASE, KUBERNETES_NODES, WORKER_CLASS, WORKER_PLATFORM, by_kind
from ..ops.preflight import Preflight, Source, Unreadable, preflight
from ..ops.preflight.certificates import SecretRef, ServingCertificate, serving_secrets
from ..ops.preflight.expectations import BY_PATH, MUTATING, VALIDATING
from ..ops.preflight.objects import found_webhooks, kind_of, partition, selector_empty
from ..ops.providers import KAIROS_TEMPLATE_CRD
from ..ops.workers import PINNED_ANNOTATION, POOL_LABEL, WORKER_KINDS
from ..state import State
from .kube import LIST_CHUNK, resource_class, short_error, trimmed
from .kubeconfig import LiveError

__all__ = ["READ", "Install", "live_preflight", "read_install", "read_uninstall"]

#: kind -> (lightkube module, apiVersion, the resource as RBAC names it): what is read, typed
READ: dict[str, tuple[str, str, str]] = {
    MUTATING: (
        "lightkube.resources.admissionregistration_v1",
        "admissionregistration.k8s.io/v1",
        "mutatingwebhookconfigurations.admissionregistration.k8s.io",
    ),
    VALIDATING: (
        "lightkube.resources.admissionregistration_v1",
        "admissionregistration.k8s.io/v1",
        "validatingwebhookconfigurations.admissionregistration.k8s.io",
    ),
    "Service": ("lightkube.resources.core_v1", "v1", "services"),
    "Deployment": ("lightkube.resources.apps_v1", "apps/v1", "deployments.apps"),
    "PodDisruptionBudget": ("lightkube.resources.policy_v1", "policy/v1", "poddisruptionbudgets.policy"),
    "Namespace": ("lightkube.resources.core_v1", "v1", "namespaces"),
    "CustomResourceDefinition": (
        "lightkube.resources.apiextensions_v1",
        "apiextensions.k8s.io/v1",
        "customresourcedefinitions.apiextensions.k8s.io",
    ),
}


@dataclass(frozen=True, slots=True)
class Install:
    """What :func:`read_install` read: the objects, and the lists the API server refused."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    unreadable: tuple[Unreadable, ...] = ()
    #: the serving certificates (``tls.crt`` only) of the Secrets the webhook's Deployment mounts
    certificates: tuple[ServingCertificate, ...] = ()

    @property
    def source(self) -> Source:
        return Source(live=True, unreadable=self.unreadable)

    def state(self) -> State:
        return State.from_objects(self.objects, origin="cluster")

    def preflight(self) -> Preflight:
        return preflight(self.state(), self.source, self.certificates)


# ---------------------------------------------------------------------- reading


def _status_code(error: BaseException) -> int | None:
    """The HTTP status of a client error (lightkube's ApiError or httpx's HTTPStatusError), else None."""
    code = getattr(getattr(error, "status", None), "code", None)
    if code is None:
        response = getattr(error, "response", None)
        code = getattr(response, "status_code", None) if response is not None else None
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _causes(error: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _fatal(error: BaseException, resource: str) -> LiveError:
    """A failure that is no HTTP answer, as one line: the type of error, never its text."""
    names = {cls.__name__ for cls in type(error).__mro__}
    if any(isinstance(cause, ssl.SSLCertVerificationError) for cause in _causes(error)):
        return LiveError(
            "cannot reach the API server: its TLS certificate is not trusted "
            "(check the kubeconfig's certificate-authority)"
        )
    if "TimeoutException" in names or isinstance(error, TimeoutError):
        return LiveError(f"the API server did not answer in time ({type(error).__name__})")
    if "TransportError" in names or isinstance(error, OSError):
        return LiveError(f"cannot reach the API server ({type(error).__name__})")
    return LiveError(f"reading {resource} failed: {short_error(error)}")


def _plain(obj: Any, kind: str, api_version: str) -> dict[str, Any] | None:
    raw = obj.to_dict() if hasattr(obj, "to_dict") else obj
    if not isinstance(raw, dict):
        return None
    raw = dict(raw)
    raw.setdefault("apiVersion", api_version)
    raw.setdefault("kind", kind)
    metadata = raw.get("metadata")
    if isinstance(metadata, dict) and "managedFields" in metadata:
        raw["metadata"] = {key: value for key, value in metadata.items() if key != "managedFields"}
    return raw


class _Reader:
    """Lists into one list of objects; a refused list becomes an :class:`Unreadable`."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.objects: list[dict[str, Any]] = []
        self.unreadable: list[Unreadable] = []

    def typed(
        self, kind: str, namespace: str | None = None, fields: Mapping[str, str] | None = None
    ) -> list[dict[str, Any]]:
        """The objects of one of :data:`READ`'s kinds (in ``namespace``, matching ``fields``), kept and returned."""
        module, api_version, resource = READ[kind]
        cls = getattr(importlib.import_module(module), kind)
        scope: dict[str, Any] = {"namespace": namespace} if namespace else {}
        if fields:
            scope["fields"] = dict(fields)
        items = self._list(kind, cls, api_version, resource, scope)
        self.objects.extend(items)
        return items

    def everywhere(self, kind: str) -> list[dict[str, Any]]:
        """A custom resource's objects across all namespaces, trimmed, kept and returned; none when
        the API server does not serve it."""
        from lightkube.generic_resource import create_namespaced_resource

        row = by_kind(kind)
        assert row is not None and row.namespaced, kind
        resource = create_namespaced_resource(row.group, row.version, row.kind, row.plural)
        listed = self._list(kind, resource, row.api_version, row.name, {"namespace": "*"}, missing_is_empty=True)
        items = [trimmed(kind, item) for item in listed]
        self.objects.extend(items)
        return items

    def certificate(self, ref: SecretRef) -> ServingCertificate:
        """The ``tls.crt`` of the Secret ``ref`` names; its other keys (``tls.key``) are dropped at once."""
        from lightkube.resources.core_v1 import Secret

        try:
            secret = self.client.get(Secret, ref.name, namespace=ref.namespace)
        except Exception as error:
            code = _status_code(error)
            if code is None:
                raise _fatal(error, "secrets") from None
            if code == 401:
                raise LiveError(f"the API server refused the credentials ({short_error(error)})") from None
            return ServingCertificate(ref, status=short_error(error))
        data = secret.get("data") if isinstance(secret, dict) else getattr(secret, "data", None)
        encoded = data.get("tls.crt") if isinstance(data, dict) else None
        del secret, data  # the key material goes with them
        if not isinstance(encoded, str):
            return ServingCertificate(ref)
        try:
            return ServingCertificate(ref, base64.b64decode(encoded, validate=True))
        except (binascii.Error, ValueError):
            return ServingCertificate(ref)

    def _list(
        self,
        kind: str,
        resource: Any,
        api_version: str,
        name: str,
        scope: dict[str, Any],
        *,
        missing_is_empty: bool = False,
    ) -> list[dict[str, Any]]:
        try:
            listed = [
                _plain(obj, kind, api_version) for obj in self.client.list(resource, chunk_size=LIST_CHUNK, **scope)
            ]
        except Exception as error:
            code = _status_code(error)
            if code is None:
                raise _fatal(error, name) from None
            if code == 401:
                raise LiveError(f"the API server refused the credentials ({short_error(error)})") from None
            if code == 404 and missing_is_empty:
                return []
            namespace = scope.get("namespace")
            self.unreadable.append(Unreadable(kind, name, None if namespace == "*" else namespace, short_error(error)))
            return []
        return [item for item in listed if item is not None]


def read_install(client: Any) -> Install:
    """Read the webhook installation through ``client`` (a ``lightkube.Client``): see the module.

    Raises :class:`LiveError` when the cluster cannot be read at all (401, unreachable, timeout).
    """
    reader = _Reader(client)
    configurations = [obj for kind in (MUTATING, VALIDATING) for obj in reader.typed(kind)]
    ours, _ = partition(found_webhooks(configurations))
    namespaces = sorted({w.service[0] for w in ours if w.service is not None and w.service[0]})
    for namespace in namespaces:
        for kind in ("Service", "Deployment", "PodDisruptionBudget"):
            reader.typed(kind, namespace)
    services = [obj for obj in reader.objects if kind_of(obj) == "Service"]
    deployments = [obj for obj in reader.objects if kind_of(obj) == "Deployment"]
    certificates = tuple(reader.certificate(ref) for ref in serving_secrets(ours, services, deployments))
    selected = set()
    for webhook in ours:
        expectation = BY_PATH.get(webhook.path or "")
        selector = webhook.spec.get("namespaceSelector")
        if expectation is not None and expectation.namespaced and selector is not None and not selector_empty(selector):
            selected.add(expectation.kind)
    if selected:
        reader.typed("Namespace")
        for kind in sorted(selected):
            reader.everywhere(kind)
    reader.typed("CustomResourceDefinition", fields={"metadata.name": KAIROS_TEMPLATE_CRD})
    return Install(reader.objects, tuple(reader.unreadable), certificates)


def _metadata_only(obj: dict[str, Any]) -> dict[str, Any]:
    """An owned object as ``preflight --uninstall`` needs it: kind, name, namespace, labels, annotations."""
    raw = obj.get("metadata")
    metadata: dict[str, Any] = raw if isinstance(raw, dict) else {}
    keep = {key: metadata[key] for key in ("name", "namespace", "labels", "annotations") if key in metadata}
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": keep}


def read_uninstall(client: Any) -> Install:
    """What ``preflight --uninstall`` reads: the classes (finalizers kept), the platform, the pools
    (KubernetesNodes, HelmReleases), and every object of :data:`WORKER_KINDS` the controller labelled
    (:data:`POOL_LABEL`) or pinned (Helm-made, :data:`PINNED_ANNOTATION`), reduced to their metadata.
    A kind the server does not serve has none; a list refused is an :class:`Unreadable`."""
    from lightkube.generic_resource import create_global_resource, create_namespaced_resource
    from lightkube.operators import exists

    reader = _Reader(client)
    for row in (WORKER_PLATFORM, WORKER_CLASS):
        cluster_wide = create_global_resource(row.group, row.version, row.kind, row.plural)
        listed = reader._list(row.kind, cluster_wide, row.api_version, row.name, {}, missing_is_empty=True)
        reader.objects.extend(trimmed(row.kind, item) for item in listed)
    for row in (KUBERNETES_NODES, HELM_RELEASE):
        namespaced = create_namespaced_resource(row.group, row.version, row.kind, row.plural)
        listed = reader._list(
            row.kind, namespaced, row.api_version, row.name, {"namespace": "*"}, missing_is_empty=True
        )
        reader.objects.extend(trimmed(row.kind, item) for item in listed)
    for kind in WORKER_KINDS:
        resource = resource_class(kind.api_version, kind.kind, kind.plural, namespaced=kind.namespaced)
        scope: dict[str, Any] = {"namespace": "*"} if kind.namespaced else {}
        name = f"{kind.plural}.{kind.group}" if kind.group else kind.plural
        owned = reader._list(
            kind.kind,
            resource,
            kind.api_version,
            name,
            {**scope, "labels": {POOL_LABEL: exists()}},
            missing_is_empty=True,
        )
        # the chart renders no Secret: Helm never made one of a pool, nothing of it was pinned
        helm = (
            []
            if kind.kind == "Secret"
            else reader._list(
                kind.kind,
                resource,
                kind.api_version,
                name,
                {**scope, "labels": {"app.kubernetes.io/managed-by": "Helm"}},
                missing_is_empty=True,
            )
        )
        pinned = [obj for obj in helm if PINNED_ANNOTATION in ((obj.get("metadata") or {}).get("annotations") or {})]
        seen: set[tuple[str, str]] = set()
        for obj in [*owned, *pinned]:
            meta = obj.get("metadata") or {}
            key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
            if key not in seen:
                seen.add(key)
                reader.objects.append(_metadata_only(obj))
    return Install(reader.objects, tuple(reader.unreadable))


def live_preflight(client: Any) -> Preflight:
    """The preflight verdict of the installation ``client`` reads (:func:`read_install`)."""
    return read_install(client).preflight()
