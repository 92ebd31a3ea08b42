"""The chart's label helpers: ``kubernetes.labels`` and ``kubernetes.selectorLabels`` (``_helpers.tpl``).

Owns the common labels every RBAC object, the network policy and the Job of the talos-reconcile
template carry, as the parsed mapping Kubernetes receives (keys in the chart's order). Its edge:
a :class:`ChartInput` in, a ``dict[str, str]`` out; the chart name, version and appVersion come
from the packaged ``Chart.yaml`` through :mod:`.values`.
"""

from __future__ import annotations

from .context import ChartInput
from .values import app_version, chart_version

__all__ = ["CHART_NAME", "RELEASE_SERVICE", "chart_label", "chart_name", "common_labels", "selector_labels"]

#: ``.Chart.Name``.
CHART_NAME = "kubernetes-nodes"
#: ``.Release.Service``: always ``Helm`` for a Helm render.
RELEASE_SERVICE = "Helm"


def _trunc63(text: str) -> str:
    """``trunc 63 | trimSuffix "-"`` (one trailing dash, as sprig's trimSuffix)."""
    return text[:63].removesuffix("-")


def chart_label(inp: ChartInput) -> str:
    """``kubernetes.chart``: ``<name>-<version>`` with ``+`` as ``_``, cut to 63."""
    return _trunc63(f"{CHART_NAME}-{chart_version(inp.chart)}".replace("+", "_"))


def chart_name(inp: ChartInput) -> str:
    """``kubernetes.name``: ``default .Chart.Name .Values.nameOverride``, cut to 63."""
    override = inp.values.get("nameOverride")
    name = override if isinstance(override, str) and override else CHART_NAME
    return _trunc63(name)


def selector_labels(inp: ChartInput) -> dict[str, str]:
    """``kubernetes.selectorLabels``."""
    return {"app.kubernetes.io/name": chart_name(inp), "app.kubernetes.io/instance": inp.release}


def common_labels(inp: ChartInput) -> dict[str, str]:
    """``kubernetes.labels``: chart, selector labels, appVersion (when set), managed-by."""
    labels = {"helm.sh/chart": chart_label(inp), **selector_labels(inp)}
    version = app_version(inp.chart.upstream)
    if version:
        labels["app.kubernetes.io/version"] = version
    labels["app.kubernetes.io/managed-by"] = RELEASE_SERVICE
    return labels
