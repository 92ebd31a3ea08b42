"""How the chart in effect names the TalosConfigTemplate its talos-reconcile Job applies.

The Talos bootstrap provider (CABPT) refuses every change of a TalosConfigTemplate's spec (its
webhook's ``ValidateUpdate``: the spec is immutable). What a changed machine config does therefore
depends on the name the Job applies it under:

- ``stable``: the name is the pool's fixed ``${RELEASE}-${GROUP_NAME}`` (Cozystack main and PR 3315):
  the changed template is refused, the Job fails, and no machine gets the change, running or new;
- ``content``: the name carries more than that, a hash of the content (PR 3523's
  ``<cluster>-<pool>-<sha256(spec)[:6]>``): a change is a new template, the MachineDeployment's
  ``bootstrap.configRef`` follows it, and Cluster API replaces the pool's machines.

Read from the chart's own text when its files are given: the ``metadata.name`` of the
``kind: TalosConfigTemplate`` document in ``templates/talos-reconcile-job.yaml``. Without the text
(the shipped facts), every chart the facts describe names it ``stable``; a text where no such
document is found is read as ``stable`` too (predicting a refusal, not a rollout nobody asked for).

Its edge: a :class:`~.source.ChartSource` in, a word out.
"""

from __future__ import annotations

import functools
import re
from typing import Literal

from .source import ChartSource

__all__ = ["STABLE_NAME", "TemplateNaming", "talos_template_naming"]

TemplateNaming = Literal["stable", "content"]

#: The name the main chart's Job applies the template under (its shell variables).
STABLE_NAME = "${RELEASE}-${GROUP_NAME}"

_JOB_TEMPLATE = "templates/talos-reconcile-job.yaml"
_KIND = re.compile(r"^(?P<indent>[ \t]*)kind:[ \t]*TalosConfigTemplate[ \t]*$", re.MULTILINE)
_NAME = re.compile(r"^[ \t]*name:[ \t]*(?P<name>\S+)[ \t]*$", re.MULTILINE)
#: how far after the ``kind:`` line the ``metadata.name`` is looked for
_WINDOW = 400


def talos_template_naming(chart: ChartSource) -> TemplateNaming:
    """``stable`` or ``content``: how the chart's Job names the TalosConfigTemplate it applies."""
    if chart.files is None or _JOB_TEMPLATE not in chart.files:
        return "stable"
    return _naming(chart.text(_JOB_TEMPLATE, what="the TalosConfigTemplate's naming"))


@functools.lru_cache(maxsize=16)
def _naming(text: str) -> TemplateNaming:
    """The naming the Job's text gives (read once per text: every pool of a chart asks)."""
    for kind in _KIND.finditer(text):
        after = text[kind.end() : kind.end() + _WINDOW]
        metadata = after.find("metadata:")
        if metadata < 0:
            continue
        name = _NAME.search(after, metadata)
        if name is None:
            continue
        value = name.group("name").strip("\"'")
        return "stable" if value == STABLE_NAME else "content"
    return "stable"
