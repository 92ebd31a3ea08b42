"""Validation of rendered objects against the real upstream CRD schemas.

The CRDs are read where the upstream mirror has them, ``upstream-crds/`` of ``$WORKERCLASS_SHARED``
or ``../shared`` beside the repository (never a copy in the repository): without it a check skips
with that reason, and fails under ``CI=true``.
Where Cozystack ships a CRD (``cozystack-shipped/``: Cluster API 1.10.1, CABPT 0.6.12, CAPK 0.1.10,
the WorkloadMonitor), objects are checked against that one; the Kairos and Proxmox templates,
which Cozystack does not ship, against the newest upstream CRDs; core and Cilium kinds the chart
renders get the ObjectMeta checks only. Each object is checked with jsonschema against its served
version, as the API server would check it:

- unknown fields are refused where the schema lists properties and does not preserve unknown
  fields (the API server would prune them silently, which hides typos);
- ``x-kubernetes-int-or-string`` is honoured; a Go-style ``^(?i)`` pattern is rewritten to
  Python's leading ``(?i)``;
- the CEL rules (``x-kubernetes-validations``) on every schema node an object reaches must be
  in :data:`CEL_RULES`, a hand translation; an untranslated rule fails the check, so a CRD
  update cannot slip by. Transition rules (``oldSelf``) apply to updates only and are skipped;
- exactly one deliberate exception: ``KairosConfigTemplate`` ``distribution: kubeadm``. The
  design page's Kairos pools join through the kubeadm path, which the current upstream enum
  (``k0s``, ``k3s``) does not list yet. :func:`schema_for` adds that one value to that one enum
  and :data:`ENUM_EXCEPTIONS` records it; a test fails once upstream lists it, to drop this.
"""

from __future__ import annotations

import base64
import copy
import os
import re
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator

from tests.shared import ROOT, require, shared_dir

REPO = ROOT


def crd_directory() -> Path | None:
    """The mirror's CRD folder, or None without it (under ``CI=true`` its absence fails the test)."""
    directory = shared_dir() / "upstream-crds"
    if (directory / "SOURCES.tsv").is_file():
        return directory
    if os.environ.get("CI") == "true":
        require("upstream-crds", "SOURCES.tsv")
    return None


def require_crds() -> Path:
    """The mirror's CRD folder, or skip the test (fail under ``CI=true``) naming the setting."""
    return require("upstream-crds", "SOURCES.tsv").parent


#: The CRDs Cozystack ships for what the chart renders (Cluster API 1.10.1, CABPT 0.6.12, CAPK
#: 0.1.10, cozystack-controller): ``cozystack-shipped/`` below the CRD folder. They win over the
#: newer upstream CRDs, which serve versions Cozystack's clusters do not.
SHIPPED = "cozystack-shipped"

#: (apiVersion, kind) -> CRD file name (relative to the CRD folder).
CRD_FILES: dict[tuple[str, str], str] = {
    ("cluster.x-k8s.io/v1beta1", "MachineDeployment"): f"{SHIPPED}/cluster.x-k8s.io_machinedeployments.yaml",
    ("cluster.x-k8s.io/v1beta1", "MachineHealthCheck"): f"{SHIPPED}/cluster.x-k8s.io_machinehealthchecks.yaml",
    (
        "bootstrap.cluster.x-k8s.io/v1alpha3",
        "TalosConfigTemplate",
    ): f"{SHIPPED}/bootstrap.cluster.x-k8s.io_talosconfigtemplates.yaml",
    (
        "infrastructure.cluster.x-k8s.io/v1alpha1",
        "KubevirtMachineTemplate",
    ): f"{SHIPPED}/infrastructure.cluster.x-k8s.io_kubevirtmachinetemplates.yaml",
    ("cozystack.io/v1alpha1", "WorkloadMonitor"): f"{SHIPPED}/cozystack.io_workloadmonitors.yaml",
    # Not shipped by Cozystack: the newest upstream CRDs.
    (
        "bootstrap.cluster.x-k8s.io/v1beta2",
        "KairosConfigTemplate",
    ): "bootstrap.cluster.x-k8s.io_kairosconfigtemplates.yaml",
    (
        "infrastructure.cluster.x-k8s.io/v1alpha2",
        "ProxmoxMachineTemplate",
    ): "infrastructure.cluster.x-k8s.io_proxmoxmachinetemplates.yaml",
}

#: Kinds the chart renders that are Kubernetes or Cilium types without a CRD here: only the
#: ObjectMeta rules the API server enforces are checked for them.
CORE_KINDS: frozenset[tuple[str, str]] = frozenset(
    {
        ("v1", "ServiceAccount"),
        ("v1", "ConfigMap"),
        ("v1", "Secret"),
        ("batch/v1", "Job"),
        ("rbac.authorization.k8s.io/v1", "Role"),
        ("rbac.authorization.k8s.io/v1", "RoleBinding"),
        ("rbac.authorization.k8s.io/v1", "ClusterRole"),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
        ("cilium.io/v2", "CiliumNetworkPolicy"),
    }
)

#: (kind, JSON path of the enum, the value added): the one documented departure from upstream.
ENUM_EXCEPTIONS: list[tuple[str, tuple[str, ...], str]] = [
    ("KairosConfigTemplate", ("spec", "template", "spec", "distribution"), "kubeadm"),
]


def _with_default(obj: dict[str, Any], key: str, default: Any) -> Any:
    return obj.get(key, default)


#: CEL rule text -> a Python predicate over ``self`` (after schema defaults).
CEL_RULES: dict[str, Callable[[Any], bool]] = {
    "self.full || !has(self.format)": lambda s: bool(_with_default(s, "full", True)) or "format" not in s,
    "self.full || !has(self.storage)": lambda s: bool(_with_default(s, "full", True)) or "storage" not in s,
    "has(self.templateSelector) || (has(self.templateID) && has(self.sourceNode))": lambda s: (
        "templateSelector" in s or ("templateID" in s and "sourceNode" in s)
    ),
    "self.end >= self.start": lambda s: s["end"] >= s["start"],
    "self.startsWith('/')": lambda s: s.startswith("/"),
    "!self.contains('..')": lambda s: ".." not in s,
    "self == true": lambda s: s is True,
    "!(self in ['Ready','Available','HealthCheckSucceeded','OwnerRemediated','ExternallyRemediated'])": lambda s: (
        s not in ["Ready", "Available", "HealthCheckSucceeded", "OwnerRemediated", "ExternallyRemediated"]
    ),
}


@cache
def _crd(file_name: str) -> dict[str, Any]:
    directory = require_crds()
    with (directory / file_name).open(encoding="utf-8") as handle:
        loaded: dict[str, Any] = yaml.safe_load(handle)
    return loaded


def served_version(api_version: str, kind: str) -> dict[str, Any]:
    """The CRD version entry for ``api_version``; it must be served."""
    crd = _crd(CRD_FILES[(api_version, kind)])
    version = api_version.rsplit("/", 1)[1]
    for entry in crd["spec"]["versions"]:
        if entry["name"] == version:
            assert entry.get("served"), f"{kind} {version} is not served by the upstream CRD"
            found: dict[str, Any] = entry
            return found
    raise AssertionError(f"the upstream {kind} CRD has no version {version}")


def _strict(node: Any) -> Any:
    """Kubernetes structural schema -> JSON Schema with unknown fields refused."""
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _strict(value) for key, value in node.items() if key != "x-kubernetes-validations"}
    if "pattern" in out and "(?i)" in out["pattern"]:
        out["pattern"] = "(?i)" + out["pattern"].replace("(?i)", "")
    if node.get("x-kubernetes-int-or-string") and "type" not in node and "anyOf" not in node:
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if (
        "properties" in node
        and not node.get("x-kubernetes-preserve-unknown-fields")
        and "additionalProperties" not in node
    ):
        out["additionalProperties"] = False
    return out


@cache
def schema_for(api_version: str, kind: str) -> dict[str, Any]:
    schema = copy.deepcopy(served_version(api_version, kind)["schema"]["openAPIV3Schema"])
    for exception_kind, path, value in ENUM_EXCEPTIONS:
        if exception_kind != kind:
            continue
        node = schema
        for key in path:
            node = node["properties"][key]
        node["enum"] = [*node["enum"], value]
    strict: dict[str, Any] = _strict(schema)
    return strict


def upstream_enum(api_version: str, kind: str, path: tuple[str, ...]) -> list[Any]:
    node = served_version(api_version, kind)["schema"]["openAPIV3Schema"]
    for key in path:
        node = node["properties"][key]
    enum: list[Any] = node["enum"]
    return enum


def _cel_nodes(schema: dict[str, Any], value: Any, path: str) -> Iterator[tuple[str, str, Any]]:
    """Every (path, rule, value) for the CEL rules on schema nodes that ``value`` reaches."""
    for rule in schema.get("x-kubernetes-validations", []):
        yield path, rule["rule"], value
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        additional = schema.get("additionalProperties")
        for key, item in value.items():
            if key in properties:
                yield from _cel_nodes(properties[key], item, f"{path}.{key}")
            elif isinstance(additional, dict):
                yield from _cel_nodes(additional, item, f"{path}.{key}")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            yield from _cel_nodes(schema["items"], item, f"{path}[{index}]")


DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _metadata_errors(obj: dict[str, Any]) -> list[str]:
    """ObjectMeta rules the CRD schemas leave to the API server (``metadata: {type: object}``)."""
    errors: list[str] = []
    metadata = obj.get("metadata", {})
    name = metadata.get("name", "")
    if not DNS_SUBDOMAIN.match(name) or len(name) > 253:
        errors.append(f"metadata.name {name!r} is not a DNS subdomain")
    for where in ("metadata.labels", "spec.template.metadata.labels"):
        node: Any = obj
        for key in where.split("."):
            node = node.get(key, {}) if isinstance(node, dict) else {}
        for key, value in (node or {}).items():
            if not LABEL_KEY.match(key) or len(key.rpartition("/")[2]) > 63:
                errors.append(f"{where}: {key!r} is not a label key")
            if not isinstance(value, str) or not LABEL_VALUE.match(value) or len(value) > 63:
                errors.append(f"{where}.{key}: {value!r} is not a label value")
    for key, value in metadata.get("annotations", {}).items():
        if not LABEL_KEY.match(key) or not isinstance(value, str):
            errors.append(f"metadata.annotations: {key!r}={value!r} is not an annotation")
    return errors


def validation_errors(obj: dict[str, Any]) -> list[str]:
    """Every way ``obj`` departs from its upstream CRD's served version (empty = valid)."""
    key = (obj.get("apiVersion", ""), obj.get("kind", ""))
    if key == ("v1", "ConfigMap"):
        # A core type: no CRD; check the shape the API server enforces for what we render.
        data = obj.get("data", {})
        bad = [k for k, v in data.items() if not isinstance(v, str) or not re.match(r"^[-._a-zA-Z0-9]+$", k)]
        extra = sorted(set(obj) - {"apiVersion", "kind", "metadata", "data", "binaryData", "immutable"})
        return (
            [f"data.{k}: not a string value under a valid key" for k in bad]
            + [f"{k}: unknown field" for k in extra]
            + _metadata_errors(obj)
        )
    if key == ("v1", "Secret"):
        # A core type: the shape the API server enforces for what we render (string values under
        # valid keys; data base64), and the type Cluster API reads bootstrap data from.
        errors = [
            f"{k}: unknown field"
            for k in sorted(set(obj) - {"apiVersion", "kind", "metadata", "data", "stringData", "type", "immutable"})
        ]
        for field in ("data", "stringData"):
            for k, v in (obj.get(field) or {}).items():
                if not isinstance(v, str) or not re.match(r"^[-._a-zA-Z0-9]+$", k):
                    errors.append(f"{field}.{k}: not a string value under a valid key")
                elif field == "data":
                    try:
                        base64.b64decode(v, validate=True)
                    except ValueError:
                        errors.append(f"data.{k}: not base64")
        return errors + _metadata_errors(obj)
    if key in CORE_KINDS:
        return _metadata_errors(obj)
    if key not in CRD_FILES:
        return [f"no upstream CRD for {key[1]} {key[0]}"]
    validator = Draft202012Validator(schema_for(*key))
    errors = [
        f"{'.'.join(str(part) for part in error.absolute_path) or '<root>'}: {error.message}"
        for error in sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path)))
    ]
    raw = served_version(*key)["schema"]["openAPIV3Schema"]
    for path, rule, value in _cel_nodes(raw, obj, ""):
        if "oldSelf" in rule:
            continue  # transition rules: checked on UPDATE only
        predicate = CEL_RULES.get(rule)
        if predicate is None:
            errors.append(f"{path}: CEL rule {rule!r} has no translation in tests/render/schemas.py")
        elif not predicate(value):
            errors.append(f"{path}: fails CEL rule {rule!r}")
    return errors + _metadata_errors(obj)
