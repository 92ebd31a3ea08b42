"""The CustomResourceDefinitions the package owns: ``WorkerClass`` and ``WorkerPlatform``.

The schemas carry every rule one object can (DESIGN.md: "the CRD schema carries every rule it
can"): field layout of API.md section 1, with unknown fields pruned, the bootstrap family enum,
pinned-reference and version patterns, ``builtin``/``factory`` exclusivity, a fixed image only on
Kairos classes, and the class spec's immutability as ``self == oldSelf``. Rules that span
objects (a class's baseline against the platform, pools against classes) stay in Python.

``status`` is a subresource laid out as API.md section 1 (``conditions`` with ``type``,
``status``, ``reason``, ``message``, ``observedGeneration``; ``pools``), so what the controller
writes is kept whole, never pruned.

Its edge: plain dicts out; nothing is applied. KubernetesNodes, Kubernetes and ComputePlane are
Cozystack's application API, HelmRelease is Flux's: their CRDs are not ours to ship.
"""

from __future__ import annotations

from typing import Any

__all__ = ["GROUP", "crd_manifests", "worker_class_crd", "worker_platform_crd"]

GROUP = "cozystack.io"
VERSION = "v1alpha1"

TALOS_VERSION = r"^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$"
KUBERNETES_MINOR = r"^v\d+\.\d+$"
KUBERNETES_PATCH = r"^v\d+\.\d+\.\d+$"
SCHEMATIC_ID = r"^[0-9a-f]{64}$"
HTTP_URL = r"^https?://[^\s/@?#]+([/?#]\S*)?$"
PINNED = r"^\S*@sha256:[0-9a-f]{64}$"


def _string(pattern: str | None = None, description: str | None = None) -> dict[str, Any]:
    # YAML's ``key:`` with nothing after it is null; the parser reads it as supplied and empty
    out: dict[str, Any] = {"type": "string", "nullable": True}
    if pattern is not None:
        # an empty value is "supplied empty" (API.md section 2), not a format error
        out["pattern"] = f"^$|{pattern}" if pattern.startswith("^") else pattern
    if description is not None:
        out["description"] = description
    return out


def _object(properties: dict[str, Any], description: str | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if description is not None:
        out["description"] = description
    out.update(extra)
    return out


def _talos(platform: bool) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "version": _string(TALOS_VERSION, "Talos version (vX.Y.Z)"),
        "schematicID": _string(SCHEMATIC_ID, "Image Factory schematic ID (64 hex)"),
        "imageFactoryURL": _string(HTTP_URL, "Image Factory endpoint, without credentials"),
        "installerRepository": _string(description="installer image repository, without tag"),
    }
    if platform:
        properties["goldens"] = {
            "type": "array",
            "description": "builtin golden disks that exist",
            "items": _object(
                {"version": _string(TALOS_VERSION), "schematicID": _string(SCHEMATIC_ID)},
                required=["version", "schematicID"],
            ),
        }
        properties["supportMatrix"] = {
            "type": "object",
            "description": "Talos minor -> the Kubernetes minors it runs",
            "additionalProperties": _object(
                {"min": _string(KUBERNETES_MINOR), "max": _string(KUBERNETES_MINOR)}, required=["min", "max"]
            ),
        }
    else:
        properties["imageFactoryCA"] = _string(description="PEM CA certificate(s) of a private Image Factory")
        properties["registryMirrors"] = {
            "type": "object",
            "description": "registry -> mirror endpoints; replaced whole, never merged",
            "additionalProperties": {
                **_object(
                    {"endpoints": {"type": "array", "items": _string(HTTP_URL)}, "skipFallback": {"type": "boolean"}},
                    required=["endpoints"],
                ),
                "x-kubernetes-preserve-unknown-fields": True,
            },
        }
    return _object(properties)


def _source(factory: bool) -> dict[str, Any]:
    properties = {"version": _string(TALOS_VERSION), "schematicID": _string(SCHEMATIC_ID)}
    if factory:
        properties["endpoint"] = _string(HTTP_URL)
    return _object(properties, nullable=True)


def _class_spec() -> dict[str, Any]:
    os_image = _object(
        {"builtin": _source(False), "factory": _source(True)},
        "disk source: at most one of builtin and factory; {} = the default factory path",
        nullable=True,
        **{
            "x-kubernetes-validations": [
                {"rule": "!(has(self.builtin) && has(self.factory))", "message": "set builtin or factory, not both"}
            ]
        },
    )
    spec = _object(
        {
            "bootstrap": {"type": "string", "enum": ["talos", "kairos"], "description": "the bootstrap family"},
            "talos": _talos(platform=False),
            "kernelModules": {
                "type": "array",
                "items": _object(
                    {
                        "name": _string(r"^[A-Za-z0-9_-]+$"),
                        "parameters": {"type": "array", "items": {"type": "string"}},
                    },
                    required=["name"],
                ),
            },
            "kubevirt": _object({"osImage": os_image}),
            "proxmox": _object({"templateTags": {"type": "array", "items": {"type": "string"}}}),
            "image": _object(
                {
                    "kubernetesVersion": _string(KUBERNETES_PATCH, "the exact Kubernetes version the disk carries"),
                    "reference": _string(PINNED, "<repository>@sha256:<64 hex digest> of a verified, public disk"),
                },
                "a fixed Kairos disk: both fields or neither",
                **{
                    "x-kubernetes-validations": [
                        {
                            "rule": "(has(self.kubernetesVersion) && self.kubernetesVersion != '') == "
                            "(has(self.reference) && self.reference != '')",
                            "message": "image.kubernetesVersion and image.reference are required together",
                        }
                    ]
                },
            ),
        },
        "the offer: an OS and bootstrap baseline, and for Kairos an optional fixed image; immutable",
        required=["bootstrap"],
        **{
            "x-kubernetes-validations": [
                {
                    "rule": "self == oldSelf",
                    "message": "the spec of a WorkerClass is immutable: publish another class and select it",
                },
                {
                    "rule": "self.bootstrap == 'kairos' || !has(self.image) || "
                    "((!has(self.image.reference) || self.image.reference == '') && "
                    "(!has(self.image.kubernetesVersion) || self.image.kubernetesVersion == ''))",
                    "message": "a fixed image is for Kairos classes",
                },
            ]
        },
    )
    return spec


def _status() -> dict[str, Any]:
    condition = _object(
        {
            "type": {"type": "string", "enum": ["Accepted", "InUse"]},
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "reason": {"type": "string"},
            "message": {"type": "string"},
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
        },
        required=["type", "status"],
    )
    return _object(
        {
            "conditions": {
                "type": "array",
                "items": condition,
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["type"],
            },
            "pools": {"type": "integer", "minimum": 0, "description": "live pools that select this class"},
        },
        "written by the workerclass controller",
    )


def _crd(
    kind: str, plural: str, schema: dict[str, Any], columns: list[dict[str, Any]], *, status: bool
) -> dict[str, Any]:
    version: dict[str, Any] = {
        "name": VERSION,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": schema},
        "additionalPrinterColumns": columns,
    }
    if status:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{GROUP}",
            "labels": {"app.kubernetes.io/part-of": "workerclass"},
        },
        "spec": {
            "group": GROUP,
            "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()},
            "scope": "Cluster",
            "versions": [version],
        },
    }


def worker_class_crd() -> dict[str, Any]:
    schema = _object(
        {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": _class_spec(),
            "status": _status(),
        },
        "A hoster's immutable worker offer; tenants' KubernetesNodes pools select it by name.",
        required=["spec"],
    )
    columns = [
        {"name": "Bootstrap", "type": "string", "jsonPath": ".spec.bootstrap"},
        {"name": "Accepted", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Accepted")].status'},
        {"name": "Pools", "type": "integer", "jsonPath": ".status.pools"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    return _crd("WorkerClass", "workerclasses", schema, columns, status=True)


def worker_platform_crd() -> dict[str, Any]:
    spec = _object(
        {
            "defaultWorkerClass": {"type": "string", "description": "the class new pools get on CREATE"},
            "kubernetesVersions": {
                "type": "object",
                "description": "supported minors -> the exact patch used for platform images",
                "additionalProperties": _object({"patch": _string(KUBERNETES_PATCH)}, required=["patch"]),
            },
            "talos": _talos(platform=True),
            "clusterValues": {
                "type": "object",
                "description": "what Cozystack injects as _cluster into every app's values "
                "(default {cluster-domain: cozy.local})",
                "x-kubernetes-preserve-unknown-fields": True,
            },
            "kairos": _object(
                {
                    "images": {
                        "type": "object",
                        "description": "platform Kairos disks per minor (experimental)",
                        "additionalProperties": _object(
                            {"reference": _string(PINNED), "kubernetesVersion": _string(KUBERNETES_PATCH)},
                            required=["reference"],
                        ),
                    }
                }
            ),
        },
        required=["defaultWorkerClass"],
    )
    schema = _object(
        {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"}, "spec": spec},
        "The hoster's platform defaults; only the one named default is read.",
        required=["spec"],
        **{
            "x-kubernetes-validations": [
                {
                    "rule": "self.metadata.name == 'default'",
                    "message": "the WorkerPlatform is a singleton named default",
                }
            ]
        },
    )
    columns = [
        {"name": "Default class", "type": "string", "jsonPath": ".spec.defaultWorkerClass"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    return _crd("WorkerPlatform", "workerplatforms", schema, columns, status=False)


def crd_manifests() -> list[dict[str, Any]]:
    return [worker_class_crd(), worker_platform_crd()]
