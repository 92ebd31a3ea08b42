"""A classified Talos pool's TalosConfigTemplate, named by its content so that a change reaches machines.

The Talos bootstrap provider (CABPT) refuses every change of a TalosConfigTemplate's spec. The
chart's talos-reconcile Job applies the template under the pool's fixed name
``kubernetes-<cluster>-<pool>``, so on Cozystack main a changed machine config (registry mirrors,
kernel modules, the installer image, the Image Factory CA) is refused and reaches no machine.
For a classified pool the template is ours to name, and the design page says bootstrap changes
require replacement workers: so it is named ``kubernetes-<cluster>-<pool>-<hash6>``, the first six
hex digits of :func:`~workerclass.render.hash.content_hash`'s rule over the template's ``spec`` as the Job
applies it with its run-time inputs (the cluster's token, CA, addresses) left as ``${NAME}`` (no
secret enters the name). :func:`content_named` rewrites the Job's heredoc to apply that name and
points the MachineDeployment's ``bootstrap.configRef`` at it: a change is a new template, a new
MachineSet and replacement workers, as PR 3523 does for the chart, and ``plan`` predicts it.

**Where a template of another content runs under the stable name**, the change would be refused
there: a pool whose render keeps the chart's stable name (its class adds nothing to the machine
config, so it renders exactly the chart's objects: the drop-in) is still named by content when the
template under the stable name holds something else (:func:`as_applied`): the pool rolls to the new
config instead of its Job failing against the provider.

**What runs is kept.** A pool whose running MachineDeployment already references a template of the
same content under another name keeps that name (:func:`keep_running_template`): the handoff of a
classless pool (the chart's stable name, whose content the class reproduces) and a re-render
under another naming rule roll nothing. The running template holds the filled-in run-time inputs,
so contents are compared with each ``${NAME}`` of the rendered one matching any text
(:func:`same_content`). The controller applies this rule with the live objects, ``plan`` and
``restore`` with the rendered ones of the other state.

A chart whose Job already names the template by content (PR 3523's,
:func:`workerclass.chart.talos_naming.talos_template_naming`) is left as it renders.

Its edge: rendered objects in, rendered objects out; nothing is read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..chart.nodegroup import chart_hash
from ..chart.values import copy_values
from .errors import RenderError

__all__ = [
    "TALOS_TEMPLATE_KIND",
    "as_applied",
    "configured_template",
    "content_named",
    "keep_running_template",
    "rename_template",
    "same_content",
]

TALOS_TEMPLATE_KIND = "TalosConfigTemplate"

#: the heredoc's name line and the script's log line, as the chart writes them
_NAME_LINE = re.compile(r"^(?P<indent>[ \t]+)name: \$\{RELEASE\}-\$\{GROUP_NAME\}(?P<suffix>-[0-9a-f]{6})?$", re.M)
_APPLIED_LINE = re.compile(r"TalosConfigTemplate \$\{RELEASE\}-\$\{GROUP_NAME\}(?P<suffix>-[0-9a-f]{6})? applied")
_PLACEHOLDER = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")


def configured_template(objects: Iterable[Mapping[str, Any]]) -> str | None:
    """The TalosConfigTemplate the MachineDeployment's ``bootstrap.configRef`` names, or ``None``."""
    for obj in objects:
        if obj.get("kind") == "MachineDeployment":
            ref = (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("bootstrap") or {}
            ref = ref.get("configRef") or {}
            if ref.get("kind") == TALOS_TEMPLATE_KIND and isinstance(ref.get("name"), str):
                return str(ref["name"])
    return None


def content_named(objects: list[dict[str, Any]], template: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``objects`` (a classified Talos pool's, the chart's stable-name render) with the template
    ``template`` (the Job's, as :func:`~workerclass.chart.talos_job.talos_config_template` reads it)
    named by its content: the Job's heredoc, the MachineDeployment's ``configRef`` and the template
    itself renamed. Raises :class:`RenderError` when the Job's script does not name the template the
    way the chart's does (a chart we cannot rename in: refused, never half-renamed)."""
    stable = configured_template(objects)
    if stable is None:
        return objects
    # the rule of :func:`workerclass.render.hash.content_hash` (which reads this module: not imported)
    digest = chart_hash(json.dumps(template.get("spec"), sort_keys=True, separators=(",", ":"), ensure_ascii=False))
    return rename_template(objects, f"{stable}-{digest}")


def rename_template(objects: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """``objects`` with the Talos template the MachineDeployment names renamed ``name`` everywhere
    (the Job's heredoc and log line, the ``configRef``, the rendered template)."""
    current = configured_template(objects)
    if current is None or current == name:
        return objects
    base = _base(objects)
    if base is None or not name.startswith(base):
        raise RenderError(f"the TalosConfigTemplate name {name!r} is not one of the pool's")
    suffix = name[len(base) :]
    out: list[dict[str, Any]] = []
    for obj in objects:
        kind = obj.get("kind")
        if kind == "Job" and _is_reconcile(obj):
            obj = _renamed_job(obj, suffix)
        elif kind == "MachineDeployment":
            obj = copy_values(obj)
            obj["spec"]["template"]["spec"]["bootstrap"]["configRef"]["name"] = name
        elif kind == TALOS_TEMPLATE_KIND and (obj.get("metadata") or {}).get("name") == current:
            obj = copy_values(obj)
            obj["metadata"]["name"] = name
        out.append(obj)
    return out


def keep_running_template(
    objects: list[dict[str, Any]], template: Mapping[str, Any] | None, running: Mapping[str, Any] | None
) -> list[dict[str, Any]]:
    """``objects`` pointed back at ``running`` (the template the running MachineDeployment names)
    when its content is ``template``'s (the rendered one): nothing rolls for a name alone."""
    if template is None or running is None:
        return objects
    name = (running.get("metadata") or {}).get("name")
    if not isinstance(name, str) or name == configured_template(objects):
        return objects
    if not same_content(template.get("spec"), running.get("spec")):
        return objects
    try:
        return rename_template(objects, name)
    except RenderError:
        return objects  # another pool's name, or none of this pool's shape: the rendered name stands


def as_applied(
    objects: list[dict[str, Any]],
    template: Mapping[str, Any] | None,
    running: Mapping[str, Any] | None,
    stable: Mapping[str, Any] | None,
) -> list[dict[str, Any]]:
    """``objects`` as the controller applies them, given what runs: ``running``, the template the
    running MachineDeployment names, and ``stable``, the one under the pool's stable name (each
    ``None`` when there is none). The running name is kept for the same content
    (:func:`keep_running_template`); a render under the stable name whose content is not the one
    there is named by its content (:func:`content_named`); otherwise the render stands."""
    if template is None:
        return objects
    kept = keep_running_template(objects, template, running)
    if kept is not objects:
        return kept
    if (
        stable is not None
        and configured_template(objects) == _base(objects)
        and not same_content(template.get("spec"), stable.get("spec"))
    ):
        return content_named(objects, template)
    return objects


def same_content(rendered: Any, running: Any) -> bool:
    """Whether ``running`` is ``rendered`` with its ``${NAME}`` run-time inputs filled in (each
    matches any text within its string); every other key, item and scalar must be equal."""
    if isinstance(rendered, Mapping):
        return (
            isinstance(running, Mapping)
            and set(rendered) == set(running)
            and all(same_content(rendered[key], running[key]) for key in rendered)
        )
    if isinstance(rendered, list):
        return (
            isinstance(running, list)
            and len(rendered) == len(running)
            and all(same_content(a, b) for a, b in zip(rendered, running, strict=True))
        )
    if isinstance(rendered, str) and isinstance(running, str) and _PLACEHOLDER.search(rendered):
        parts = _PLACEHOLDER.split(rendered)
        pattern = "(?s)" + ".*?".join(re.escape(part) for part in parts)
        return re.fullmatch(pattern, running) is not None
    return bool(rendered == running) and type(rendered) is type(running)


def _base(objects: Iterable[Mapping[str, Any]]) -> str | None:
    """``kubernetes-<cluster>-<pool>``: the MachineDeployment's name, which the stable template shares."""
    for obj in objects:
        if obj.get("kind") == "MachineDeployment":
            return str((obj.get("metadata") or {}).get("name"))
    return None


def _is_reconcile(job: Mapping[str, Any]) -> bool:
    return "-talos-reconcile" in str((job.get("metadata") or {}).get("name", ""))


def _renamed_job(job: Mapping[str, Any], suffix: str) -> dict[str, Any]:
    renamed: dict[str, Any] = copy_values(dict(job))
    containers = renamed["spec"]["template"]["spec"]["containers"]
    for container in containers:
        command = container.get("command")
        if not (isinstance(command, list) and len(command) == 3 and isinstance(command[2], str)):
            continue
        script, count = _NAME_LINE.subn(
            lambda m: f"{m.group('indent')}name: ${{RELEASE}}-${{GROUP_NAME}}{suffix}", command[2]
        )
        if count != 1:
            raise RenderError(
                "the talos-reconcile Job's script does not name its TalosConfigTemplate as the chart's does"
            )
        script = _APPLIED_LINE.sub(f"TalosConfigTemplate ${{RELEASE}}-${{GROUP_NAME}}{suffix} applied", script)
        command[2] = script
        return renamed
    raise RenderError("the talos-reconcile Job has no script to name its TalosConfigTemplate in")
