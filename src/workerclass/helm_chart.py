"""The Helm chart of the package (``charts/workerclass``), generated from the install's declarations.

Cozystack ships its system packages as Helm charts; this one renders the objects ``workerclass
manifests`` prints, from the same generator (:mod:`workerclass.deploy`), so the two cannot drift:

- every setting of :class:`~workerclass.deploy.InstallOptions` that is a value (the image, the
  webhook's replicas and timeout, the namespace, the metrics namespace, the CA bundle) is rendered
  once with a sentinel in its place, and the sentinel is replaced in the text by the Helm
  expression of the value (:data:`SCALARS`);
- every setting that adds, removes or reshapes objects (cert-manager or a CA bundle, the
  controller, the webhook configurations, the kind of network policy, a metrics namespace or none)
  is a :class:`Switch`: the bundle is rendered for every combination, and each object's template
  is wrapped in the ``if``/``else`` of exactly the switches its text depends on.

:func:`options_for` reads chart values as :class:`~workerclass.deploy.InstallOptions`: the test
renders the chart with Helm's engine and compares its objects with :func:`~workerclass.deploy.install_manifests`
for the same settings. :func:`chart_files` is the whole chart as text; ``workerclass manifests
--helm-chart DIR`` writes it (``charts/workerclass`` is the committed copy, checked against it).

Its edge: plain text out; nothing is applied. It reads only :mod:`workerclass.deploy`.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import yaml

from .deploy import (
    DEFAULT_IMAGE,
    DEFAULT_NAMESPACE,
    MONITORING_NAMESPACE,
    InstallOptions,
    document_yaml,
    install_manifests,
    package_version,
    rule_reasons,
)

__all__ = ["CHART_NAME", "SCALARS", "SWITCHES", "Switch", "chart_files", "default_values", "options_for", "templates"]

CHART_NAME = "workerclass"
#: Kubernetes the bundle needs: CRD validation rules (``x-kubernetes-validations``) are GA in 1.29
KUBE_VERSION = ">=1.29.0-0"

_NAMESPACE = "wcsentinelnamespace"
_IMAGE = "wcsentinel.example/image:sentinel"
_REPLICAS = 987001
_TIMEOUT = 987002
_METRICS_NAMESPACE = "wcsentinelmetrics"
_CA = b"wcsentinel-ca-bundle"
_CA_TEXT = base64.b64encode(_CA).decode("ascii")
_CHART_SOURCE = "wcsentinelchartsource"

#: sentinel text -> (Helm expression of the value, whether a whole scalar is quoted)
SCALARS: Mapping[str, tuple[str, bool]] = {
    _NAMESPACE: (".Release.Namespace", True),
    _IMAGE: (".Values.image", True),
    str(_REPLICAS): (".Values.webhook.replicas | int", False),
    str(_TIMEOUT): (".Values.webhook.timeoutSeconds | int", False),
    _METRICS_NAMESPACE: (".Values.metricsNamespace", True),
    _CA_TEXT: (".Values.caBundle | b64enc", True),
    _CHART_SOURCE: (".Values.chartSource", True),
}


@dataclass(frozen=True)
class Switch:
    """A setting that adds, removes or reshapes objects: its values and the Helm condition that
    selects each (the last value takes the ``else``)."""

    name: str
    values: tuple[Any, ...]
    conditions: tuple[str, ...]
    #: sets the value on the options (the controller is not an option: ``"controller"`` is read apart)
    apply: Callable[[InstallOptions, Any], InstallOptions]


def _same(value: Any) -> Any:
    return value


def _set(field: str, value_of: Callable[[Any], Any] = _same) -> Callable[[InstallOptions, Any], InstallOptions]:
    """Sets ``field`` of the options to ``value_of(value)``."""
    return lambda options, value: replace(options, **{field: value_of(value)})


SWITCHES: tuple[Switch, ...] = (
    Switch("controller", (True, False), (".Values.controller.enabled", ""), lambda options, value: options),
    Switch(
        "webhookConfigurations", (True, False), (".Values.webhook.configurations", ""), _set("webhook_configurations")
    ),
    Switch("caBundle", (True, False), (".Values.caBundle", ""), _set("ca_bundle", lambda on: _CA if on else None)),
    Switch(
        "networkPolicy",
        ("kubernetes", "cilium", "none"),
        ('eq .Values.networkPolicy "kubernetes"', 'eq .Values.networkPolicy "cilium"', ""),
        _set("network_policy"),
    ),
    Switch(
        "metricsNamespace",
        (True, False),
        (".Values.metricsNamespace", ""),
        _set("metrics_namespace", lambda on: _METRICS_NAMESPACE if on else None),
    ),
    Switch(
        "chartSource",
        (True, False),
        (".Values.chartSource", ""),
        _set("chart_source", lambda on: _CHART_SOURCE if on else None),
    ),
)

Combination = tuple[Any, ...]


def _base() -> InstallOptions:
    return InstallOptions(namespace=_NAMESPACE, image=_IMAGE, replicas=_REPLICAS, timeout_seconds=_TIMEOUT)


def _texts(combination: Combination, reasons: dict[str, str], dumped: dict[str, str]) -> dict[tuple[str, str], str]:
    """The bundle of one combination of the switches: each object's YAML by (kind, name), in order
    (``dumped``: the YAML of each object already written, by its JSON: most are the same in every
    combination, and dumping the CRDs 48 times is most of the cost)."""
    options = _base()
    for switch, value in zip(SWITCHES, combination, strict=True):
        options = switch.apply(options, value)
    controller = combination[[switch.name for switch in SWITCHES].index("controller")]
    out: dict[tuple[str, str], str] = {}
    for obj in install_manifests(options, controller=controller):
        key = json.dumps(obj, sort_keys=True)
        if key not in dumped:
            dumped[key] = document_yaml(obj, reasons)
        out[(obj["kind"], obj["metadata"]["name"])] = dumped[key]
    return out


def _substituted(text: str) -> str:
    """The sentinels replaced by the Helm expressions of their values."""
    for sentinel, (expression, quoted) in SCALARS.items():
        if quoted:
            # a whole scalar (``key: X`` or ``- X``): quoted, so that no value reads as another type
            text = re.sub(rf"(?m)(: |- ){re.escape(sentinel)}$", rf"\g<1>{{{{ {expression} | quote }}}}", text)
        text = text.replace(sentinel, f"{{{{ {expression} }}}}")
    return text


def _tree(depends: list[int], texts: dict[Combination, str | None], chosen: dict[int, Any]) -> list[str]:
    """The template lines of one object: nested ``if``/``else`` over the switches it depends on."""
    if not depends:
        matching = (text for combination, text in texts.items() if all(combination[i] == v for i, v in chosen.items()))
        text = next(matching, None)
        return [text.rstrip("\n")] if text else []
    index, rest = depends[0], depends[1:]
    switch = SWITCHES[index]
    bodies = [_tree(rest, texts, {**chosen, index: value}) for value in switch.values]
    if all(body == bodies[0] for body in bodies):
        return bodies[0]
    while not bodies[-1]:  # no object under the last values: no branch for them
        bodies.pop()
    lines: list[str] = []
    for position, body in enumerate(bodies):
        condition = switch.conditions[position]
        if position == 0:
            lines.append(f"{{{{- if {condition} }}}}")
        elif condition:
            lines.append(f"{{{{- else if {condition} }}}}")
        else:
            lines.append("{{- else }}")
        lines.extend(body)
    lines.append("{{- end }}")
    return lines


def templates() -> dict[str, str]:
    """``templates/NN-kind-name.yaml`` -> its text: every object of every combination of the switches,
    each wrapped in the conditions of the switches its text depends on."""
    reasons = rule_reasons()
    combinations = list(itertools.product(*(switch.values for switch in SWITCHES)))
    dumped: dict[str, str] = {}
    bundles = {combination: _texts(combination, reasons, dumped) for combination in combinations}
    order: list[tuple[str, str]] = []
    for bundle in bundles.values():
        order.extend(key for key in bundle if key not in order)
    out: dict[str, str] = {}
    for number, key in enumerate(order):
        texts = {combination: bundles[combination].get(key) for combination in combinations}
        depends = [
            index
            for index, switch in enumerate(SWITCHES)
            if any(
                texts[combination] != texts[(*combination[:index], value, *combination[index + 1 :])]
                for combination in combinations
                for value in switch.values
            )
        ]
        for combination in combinations:  # the text is a function of those switches alone
            chosen = {index: combination[index] for index in depends}
            same = [texts[other] for other in combinations if all(other[i] == v for i, v in chosen.items())]
            if len(set(same)) != 1:
                raise ValueError(f"{key}: its text depends on the switches together, not one by one")
        kind, name = key
        lines = _tree(depends, texts, {})
        body = _substituted("\n".join(lines)) + "\n"
        out[f"templates/{number:02d}-{kind.lower()}-{name}.yaml"] = body
    return out


def default_values() -> dict[str, Any]:
    """The chart's ``values.yaml``: the defaults of ``workerclass manifests``."""
    defaults = InstallOptions()
    return {
        "image": DEFAULT_IMAGE,
        "webhook": {"replicas": defaults.replicas, "timeoutSeconds": defaults.timeout_seconds, "configurations": True},
        "caBundle": "",
        "controller": {"enabled": True},
        "networkPolicy": defaults.network_policy,
        "metricsNamespace": MONITORING_NAMESPACE,
        "chartSource": "",
    }


def options_for(values: Mapping[str, Any], namespace: str = DEFAULT_NAMESPACE) -> tuple[InstallOptions, bool]:
    """Chart values (over :func:`default_values`) as ``workerclass manifests`` options: the options
    and whether the controller is included."""
    merged = default_values()
    for key, value in values.items():
        merged[key] = {**merged[key], **value} if isinstance(merged.get(key), dict) else value
    ca = merged["caBundle"]
    options = InstallOptions(
        namespace=namespace,
        image=merged["image"],
        replicas=merged["webhook"]["replicas"],
        timeout_seconds=merged["webhook"]["timeoutSeconds"],
        webhook_configurations=merged["webhook"]["configurations"],
        ca_bundle=ca.encode() if ca else None,
        network_policy=merged["networkPolicy"],
        metrics_namespace=merged["metricsNamespace"] or None,
        chart_source=merged["chartSource"] or None,
    )
    return options, bool(merged["controller"]["enabled"])


_VALUES_HEAD = """\
# The workerclass package (generated by `workerclass manifests --helm-chart DIR`: do not edit).
# Installed into its own namespace (helm install -n cozy-workerclass --create-namespace); the chart
# creates no Namespace. Install with webhook.configurations=false, wait for the Deployments, then
# upgrade with webhook.configurations=true; uninstall in the reverse order (README: installing,
# upgrading and uninstalling).
"""

_VALUE_NOTES = {
    "image": "the image the Dockerfile builds for this version",
    "webhook": "replicas (a disruption budget keeps one up), timeoutSeconds (1-30), and whether the webhook "
    "configurations are installed",
    "caBundle": "PEM CA of a serving Secret workerclass-webhook-tls you provide; empty: cert-manager issues it",
    "controller": "the WorkerClass controller (status, the finalizer, classified pools' objects)",
    "networkPolicy": "kubernetes (portable), cilium (the API server and the node only) or none",
    "metricsNamespace": "the namespace whose pods may scrape /metrics; empty: none may",
    "chartSource": "KIND/NAMESPACE/NAME of the Flux source the pools take their chart from, for a cluster "
    "without the ApplicationDefinition kubernetes-nodes; empty: that definition's chartRef",
}


def _values_yaml() -> str:
    lines = [_VALUES_HEAD]
    for key, value in default_values().items():
        lines.append(f"# {key}: {_VALUE_NOTES[key]}")
        lines.append(yaml.safe_dump({key: value}, sort_keys=False, default_flow_style=False).rstrip("\n"))
    return "\n".join(lines) + "\n"


def _schema() -> dict[str, Any]:
    """``values.schema.json``: the values' types and ranges (other keys pass: Cozystack injects its own)."""
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "required": ["image", "webhook", "controller", "networkPolicy"],
        "properties": {
            "image": {"type": "string", "minLength": 1},
            "webhook": {
                "type": "object",
                "properties": {
                    "replicas": {"type": "integer", "minimum": 1},
                    "timeoutSeconds": {"type": "integer", "minimum": 1, "maximum": 30},
                    "configurations": {"type": "boolean"},
                },
                "required": ["replicas", "timeoutSeconds", "configurations"],
                "additionalProperties": False,
            },
            "caBundle": {"type": "string"},
            "controller": {
                "type": "object",
                "properties": {"enabled": {"type": "boolean"}},
                "required": ["enabled"],
                "additionalProperties": False,
            },
            "networkPolicy": {"type": "string", "enum": ["kubernetes", "cilium", "none"]},
            "metricsNamespace": {"type": "string"},
            "chartSource": {
                "type": "string",
                "pattern": "^((ExternalArtifact|HelmChart|OCIRepository)/[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]"
                "([-a-z0-9.]*[a-z0-9])?)?$",
            },
        },
    }


#: render-time refusals of values the schema cannot express (as ``workerclass manifests`` refuses them)
_CHECKS = """\
{{- /* Values the schema cannot judge, refused as `workerclass manifests --ca-bundle` refuses them. */ -}}
{{- if .Values.caBundle }}
{{- if not (contains "-----BEGIN CERTIFICATE-----" .Values.caBundle) }}
{{- fail "caBundle: not a PEM certificate bundle" }}
{{- end }}
{{- if contains "PRIVATE KEY" .Values.caBundle }}
{{- fail "caBundle: holds a private key; give the CA certificate only" }}
{{- end }}
{{- end }}
"""


def chart_files() -> dict[str, str]:
    """The whole chart: path below the chart folder -> text."""
    version = package_version()
    chart = {
        "apiVersion": "v2",
        "name": CHART_NAME,
        "description": "Cozystack worker classes and Kairos worker pools: the admission webhook and the "
        "WorkerClass controller",
        "type": "application",
        "version": version,
        "appVersion": version,
        "kubeVersion": KUBE_VERSION,
    }
    files = {
        "Chart.yaml": "# Generated by `workerclass manifests --helm-chart DIR`: do not edit.\n"
        + yaml.safe_dump(chart, sort_keys=False),
        "values.yaml": _values_yaml(),
        "values.schema.json": json.dumps(_schema(), indent=2) + "\n",
        "templates/checks.yaml": _CHECKS,
    }
    files.update(templates())
    return files
