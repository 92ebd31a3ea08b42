"""PR 3315's ``templates/pre-delete-unpin.yaml``: the pre-delete hook objects ``<release>-unpin``.

A chart whose rules carry the unpin hook (:attr:`~.identity.ChartRules.unpin_hook`) renders, for every
pool, a ServiceAccount, Role, RoleBinding, CiliumNetworkPolicy and Job that Helm runs just before
the release is uninstalled. The template is mostly the chart's own text (the Job's script), so the
port reads it from the chart in effect and renders it (:mod:`.gotext`), with the template's includes
answered by the port's own defines (``kubernetes-nodes.clusterName``, ``kubernetes-nodes.groupName``,
``kubernetes.labels``) and ``.Files.Get`` by the chart's files. Its edge: a :class:`ChartInput` in,
parsed objects out (:func:`render_unpin_hook`); without the chart's files,
:class:`~.source.ChartTextMissing`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .context import ChartInput
from .gotext import SPRIG, Template, TemplateError, compile_template
from .kubeyaml import k8s_load
from .labels import common_labels
from .quantity import go_quote_text
from .source import ChartSource, ChartTextMissing

__all__ = ["UNPIN_TEMPLATE", "render_unpin_hook"]

#: Where the hook lives in PR 3315's chart.
UNPIN_TEMPLATE = "templates/pre-delete-unpin.yaml"
_WHAT = "PR 3315's pre-delete unpin hook"
_DOCUMENT = re.compile(r"^---[ \t]*$", re.MULTILINE)
_COMPILED: dict[str, Template] = {}


class _Files:
    """``.Files`` of the chart: ``Get`` a file's text ("" for a file it does not have, as Helm)."""

    def __init__(self, chart: ChartSource) -> None:
        self._chart = chart

    def Get(self, path: str) -> str:
        try:
            return self._chart.text(path, what=_WHAT)
        except KeyError:
            return ""


def _template(chart: ChartSource) -> Template:
    if not chart.given:
        raise ChartTextMissing(_WHAT)
    compiled = _COMPILED.get(chart.digest)
    if compiled is None:
        compiled = compile_template(chart.text(UNPIN_TEMPLATE, what=_WHAT), UNPIN_TEMPLATE)
        _COMPILED[chart.digest] = compiled
    return compiled


def _labels_text(inp: ChartInput) -> str:
    """``include "kubernetes.labels" .`` as text (each value quoted: the same objects once parsed)."""
    return "\n".join(f"{key}: {go_quote_text(value)}" for key, value in common_labels(inp).items())


def render_unpin_hook(inp: ChartInput) -> list[dict[str, Any]]:
    """The hook's documents in the template's order, parsed as Kubernetes reads them."""
    defines = {
        "kubernetes-nodes.clusterName": lambda: inp.cluster_name,
        "kubernetes-nodes.groupName": lambda: inp.group_name,
        "kubernetes.labels": lambda: _labels_text(inp),
    }

    def include(name: str, _data: Any) -> str:
        if name not in defines:
            raise TemplateError(f"{UNPIN_TEMPLATE}: the define {name} is not one the port answers")
        return defines[name]()

    data: Mapping[str, Any] = {
        "Release": {"Name": inp.release, "Namespace": inp.namespace},
        "Values": inp.values,
        "Files": _Files(inp.chart),
    }
    text = _template(inp.chart).render(data, functions={**SPRIG, "include": include})
    documents = [k8s_load(part) for part in _DOCUMENT.split(text)]
    return [document for document in documents if isinstance(document, dict) and document]
