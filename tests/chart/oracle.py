"""The oracle: Cozystack's real chart rendered by Helm's own engine, for the tests to compare with.

The engine is the package's ``helm`` extra (helm-python-sdk, through
:class:`workerclass.adapters.helm.HelmEngine`, which loads a chart once with its instance-type
lookups served from the values); the charts are Cozystack's folders as :mod:`tests.shared` finds
them (the upstream mirror, or a Cozystack checkout at the pinned commits). A render here is what
Cozystack renders for a pool:

- the values are the pool's over the platform's (``_cluster``; by default what the chart's own
  render-parity test injects), merged as Flux merges ``valuesFrom`` under ``values``;
- the instance-type lookup answers with the types Cozystack ships (a missing name finds nothing,
  so the chart's not-found ``fail`` behaves as on a cluster); every other lookup finds nothing, as
  under ``helm template``;
- the documents come in the chart's order (template files in path order, each file split as
  Helm's ``SplitManifests`` splits it; helpers, NOTES.txt and empty documents left out), or in
  Helm's install order by kind; each is kept as text and as the object Kubernetes reads from it
  (:mod:`tests.chart.reference_yaml`, a reading kept apart from the package's);
- a refusal is the chart's ``fail`` message alone, ``values schema: ...`` for a values-schema
  violation, ``YAML parse error on <template>: ...`` for a document no API server would read,
  Helm's message otherwise;
- on request, the TalosConfigTemplate the talos-reconcile Job applies: the heredoc of its script
  with the shell's rules for an unquoted heredoc, the variables the Job sets filled in and those
  it learns at run time left as ``${NAME}``.

Without the chart or the extra a test skips with the reason (:func:`require_oracle` for a module,
:func:`need_oracle` for one test), and fails under ``CI=true``.
"""

from __future__ import annotations

import atexit
import copy
import importlib.util
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.shared import ROOT, UPSTREAM_CHARTS, chart_path, instancetypes_source, unavailable, upstream_missing
from workerclass.adapters.chart import read_chart

from .reference_yaml import read_documents, read_one, to_json_value

REPO_ROOT = ROOT
#: what Cozystack's own render-parity test injects as the platform's values
DEFAULT_CLUSTER_VALUES: dict[str, Any] = {"_cluster": {"cluster-domain": "cozy.local"}}
#: Helm's install order by kind (``releaseutil.InstallOrder``); other kinds follow, by name
INSTALL_ORDER = (
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
)
_SEPARATOR = re.compile(r"(?:^|[\t\n\f\r ]*\n)---[\t\n\f\r ]*")
_LEADING_MARKERS = re.compile(r"^(?:---[\t ]*(?:\n|$))+")
_EXECUTION_ERROR = re.compile(r"^execution error at \([^)]*\): (.*)$", re.S)
_HEREDOC = re.compile(r"cat <<EOF \| kubectl apply -f -\n(.*?)\nEOF\n", re.S)
_SHELL = re.compile(r"(\\[$`\\])|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def helm_extra_missing() -> str | None:
    """Why Helm's engine is not here (the ``helm`` extra is not installed), or None."""
    if importlib.util.find_spec("helm_python") is None:
        return "Helm's engine is absent: install the helm extra (pip install -e '.[helm]'; make does)"
    return None


def absent_reason(chart: str = "main") -> str | None:
    """Why the oracle cannot render ``chart`` here, or None when it can."""
    return helm_extra_missing() or upstream_missing(chart)


def available() -> bool:
    """Whether the oracle can render the main chart; without it under ``CI=true``, the calling test fails."""
    reason = absent_reason()
    if reason is not None and os.environ.get("CI") == "true":
        unavailable(reason)
    return reason is None


#: the reason of a test that skips without the oracle
ABSENT = absent_reason() or "the oracle is here"


def require_oracle() -> None:
    """Skip the calling test module without the oracle (fail under ``CI=true``)."""
    reason = absent_reason()
    if reason is not None:
        unavailable(reason, module=True)


def need_oracle() -> None:
    """Skip the calling test without the oracle; under CI=true that is a failure."""
    reason = absent_reason()
    if reason is not None:
        unavailable(reason)


def helm_interpreter() -> tuple[str, dict[str, str]]:
    """An interpreter with Helm's engine (this one, with the helm extra) and its environment, for a
    test that drives helm-python-sdk in a process of its own; skip (fail under CI=true) without it."""
    reason = helm_extra_missing()
    if reason is not None:
        unavailable(reason)
    return sys.executable, dict(os.environ)


# ------------------------------------------------------------------ reading


def oracle_read(text: str) -> list[Any]:
    """The documents of ``text`` as Kubernetes reads them (go-yaml v2, then JSON)."""
    return read_documents(text)


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """Flux's values merge (``valuesFrom`` first, ``values`` on top): maps merge, the rest replaces."""
    out = copy.deepcopy(dict(base))
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def split_manifests(text: str) -> list[str]:
    """One template's output cut into documents as Helm's ``releaseutil.SplitManifests`` cuts it,
    each trimmed (a document a template opens with a second ``---`` loses that marker too)."""
    out = []
    for part in _SEPARATOR.split(text.strip()):
        part = _LEADING_MARKERS.sub("", part.strip()).strip()
        if part:
            out.append(part)
    return out


def instancetypes() -> dict[str, Any]:
    """The VirtualMachineClusterInstancetype objects Cozystack ships, by name: the mirror's file, or
    the checkout's kubevirt-instancetypes chart rendered as Cozystack installs it."""
    return dict(_instancetypes())


_TABLE: dict[str, Any] | None = None


def _instancetypes() -> dict[str, Any]:
    global _TABLE
    if _TABLE is None:
        path, how = instancetypes_source()
        if how == "file":
            documents = read_documents(path.read_text(encoding="utf-8"))
        else:
            from workerclass.adapters.helm import HelmEngine

            engine = HelmEngine(read_chart(path))
            rendered = engine.manifests({}, release="kubevirt-instancetypes", namespace="cozy-kubevirt")
            documents = [read_one(text) for name in sorted(rendered) for text in split_manifests(rendered[name])]
        _TABLE = {
            doc["metadata"]["name"]: doc
            for doc in documents
            if isinstance(doc, dict) and doc.get("kind") == "VirtualMachineClusterInstancetype"
        }
    return _TABLE


# ------------------------------------------------------------------ rendering


@dataclass
class OracleResult:
    ok: bool
    objects: list[dict[str, Any]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    error: str = ""

    def kinds(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o.get("kind") == kind]

    def one(self, kind: str) -> dict[str, Any]:
        found = self.kinds(kind)
        assert len(found) == 1, f"{len(found)} objects of kind {kind}"
        return found[0]


def heredoc_newline(obj: dict[str, Any]) -> dict[str, Any]:
    """The heredoc the oracle reads the TalosConfigTemplate from is cut before its last newline,
    which the shell passes on: run for real (``tests/e2e/test_talos_job_script.py``, the Job's script
    with kubectl), the applied template's ``data`` ends in a newline. The oracle's object gets it back."""
    spec = obj.get("spec", {}).get("template", {}).get("spec", {}) if obj.get("kind") == "TalosConfigTemplate" else {}
    data = spec.get("data") if isinstance(spec, dict) else None
    if isinstance(data, str) and not data.endswith("\n"):
        spec["data"] = data + "\n"
    return obj


@dataclass
class _Document:
    template: str
    text: str
    object: Any


def _install_order(documents: list[_Document]) -> list[_Document]:
    rank = {kind: i for i, kind in enumerate(INSTALL_ORDER)}

    def key(document: _Document) -> tuple[int, int, str]:
        kind = document.object.get("kind", "") if isinstance(document.object, dict) else ""
        return (0, rank[kind], "") if kind in rank else (1, 0, kind)

    return sorted(documents, key=key)


def _expand(match: re.Match[str], env: Mapping[str, Any]) -> str:
    """One escape or variable of an unquoted heredoc: an escaped ``$``, backquote or backslash is the
    character; a variable the Job sets is its value, one it learns at run time stays ``${NAME}``."""
    if match.group(1):
        return match.group(1)[1]
    name = match.group(2) or match.group(3)
    return str(env[name]) if name in env else "${" + name + "}"


def _talos_config_template(documents: list[_Document]) -> _Document | None:
    """The TalosConfigTemplate in the talos-reconcile Job's heredoc, as its shell would expand it."""
    for document in documents:
        obj = document.object
        if not (isinstance(obj, dict) and obj.get("kind") == "Job"):
            continue
        container = obj["spec"]["template"]["spec"]["containers"][0]
        found = _HEREDOC.search(container["command"][-1])
        if found is None:
            continue
        env = {item["name"]: item["value"] for item in container.get("env", []) if "value" in item}
        body = _SHELL.sub(lambda match, env=env: _expand(match, env), found.group(1))
        return _Document(document.template + " (talos-reconcile Job heredoc)", body.strip(), read_one(body))
    return None


class Oracle:
    """Helm's engine with each chart loaded once (by name, or by folder for a chart a test made)."""

    def __init__(self) -> None:
        self._engines: dict[str, Any] = {}
        self.renders = 0

    def _engine(self, chart: str) -> Any:
        from workerclass.adapters.helm import HelmEngine

        folder = chart_path(chart) if chart in UPSTREAM_CHARTS else Path(chart)
        key = str(folder.resolve())
        if key not in self._engines:
            self._engines[key] = HelmEngine(read_chart(folder))
        return self._engines[key]

    def render(
        self,
        values: Mapping[str, Any],
        *,
        release: str,
        namespace: str,
        cluster_values: Mapping[str, Any] | None = None,
        chart: str = "main",
        instancetypes: Mapping[str, Any] | None = None,
        talos_config_template: bool = False,
        order: str = "chart",
    ) -> OracleResult:
        import helm_python

        engine = self._engine(chart)
        platform = copy.deepcopy(DEFAULT_CLUSTER_VALUES) if cluster_values is None else cluster_values
        table = _instancetypes() if instancetypes is None else instancetypes
        self.renders += 1
        try:
            rendered = engine.manifests(
                deep_merge(platform, values), release=release, namespace=namespace, instancetypes=table
            )
        except helm_python.errors.HelmValuesError as error:
            return OracleResult(ok=False, error=f"values schema: {error}".rstrip())
        except helm_python.errors.HelmRenderError as error:
            message = str(error).strip()
            failed = _EXECUTION_ERROR.match(message)
            return OracleResult(ok=False, error=failed.group(1) if failed else message)
        except helm_python.HelmError as error:
            return OracleResult(ok=False, error=f"helm: {error}")
        documents: list[_Document] = []
        for path in sorted(rendered):
            if path.rsplit("/", 1)[-1].startswith("_") or path.endswith("NOTES.txt") or not rendered[path].strip():
                continue
            for text in split_manifests(rendered[path]):
                try:
                    obj = read_one(text)
                except yaml.YAMLError as error:  # the chart wrote what no API server would read
                    return OracleResult(ok=False, error=f"YAML parse error on {path}: {str(error).splitlines()[0]}")
                if obj is not None:
                    documents.append(_Document(path, text, obj))
        if order == "install":
            documents = _install_order(documents)
        if talos_config_template:
            template = _talos_config_template(documents)
            if template is not None:
                documents.append(template)
        return OracleResult(
            ok=True,
            objects=[heredoc_newline(to_json_value(d.object)) for d in documents],
            texts=[d.text for d in documents],
        )

    def close(self) -> None:
        self._engines.clear()


_SHARED: Oracle | None = None


def get_oracle() -> Oracle:
    """The session's oracle (made on first use); skips (fails under CI=true) without Helm's engine."""
    global _SHARED
    need_oracle()
    if _SHARED is None:
        _SHARED = Oracle()
        atexit.register(_SHARED.close)
    return _SHARED


def diff_paths(ours: Any, theirs: Any, path: str = "") -> list[str]:
    """Field paths where two parsed objects differ (type-strict: 1 vs "1" differ)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out: list[str] = []
        for k in sorted(set(ours) | set(theirs)):
            p = f"{path}.{k}" if path else k
            if k not in ours:
                out.append(f"{p}: missing in ours (oracle {theirs[k]!r:.80})")
            elif k not in theirs:
                out.append(f"{p}: extra in ours ({ours[k]!r:.80})")
            else:
                out += diff_paths(ours[k], theirs[k], p)
        return out
    if isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            return [f"{path}: {len(ours)} items in ours, {len(theirs)} in the oracle"]
        out = []
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            out += diff_paths(a, b, f"{path}[{i}]")
        return out
    if type(ours) is not type(theirs) or ours != theirs:
        return [f"{path}: ours {ours!r:.80} != oracle {theirs!r:.80}"]
    return []
