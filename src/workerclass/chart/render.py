"""The whole chart for one pool, in the oracle's default order.

Owns :func:`render_chart`: refuse with :class:`ChartRefused` when :func:`chart_failures` finds
any, else the documents as ``cozystack-render --order chart`` lists them: template files in path
order (``dashboard-resourcemap.yaml``, ``nodegroup.yaml``, ``talos-reconcile-job.yaml``),
documents in file order; then, for a factory disk with a CA, PR 3797's ConfigMap (its template
``templates/talos/image-factory-ca.yaml`` sorts after the Job's file); then the
TalosConfigTemplate when asked for. The dashboard RBAC and the Job come from A2's
:mod:`.dashboard` and :mod:`.talos_job`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .checks import chart_failures, image_factory_ca_failures, installer_image_failures, kernel_module_failures
from .context import ChartInput, ChartRefused
from .nodegroup import (
    Disk,
    factory_disk,
    image_factory_ca_configmap,
    image_factory_ca_configmap_name,
    nodegroup_objects,
)
from .sizing import sizing


def render_chart(
    inp: ChartInput,
    *,
    talos_config_template: bool = False,
    disk: Disk | None = None,
    kernel_modules: Sequence[Any] | None = None,
    installer_image: str | None = None,
    image_factory_ca: str | None = None,
) -> list[dict[str, Any]]:
    """Every object the chart renders for ``inp`` (plus the class-era inputs), or :class:`ChartRefused`.

    ``disk``: the class-era disk source (None: the chart's own HTTP URL). ``image_factory_ca``:
    a PEM bundle for an HTTP disk; it adds ``certConfigMap`` to the disk and the CA ConfigMap
    (whitespace-only is unset; a private key or anything but certificate blocks is refused).
    ``kernel_modules`` and ``installer_image`` go to the Job's machine config; they are checked
    with PR 3571's character rules first (both reach the Job's shell heredoc).
    """
    failures = chart_failures(inp) + image_factory_ca_failures(image_factory_ca)
    failures += kernel_module_failures(kernel_modules or [], pool=inp.group_name, field="kernelModules")
    failures += installer_image_failures(installer_image)
    if failures:
        raise ChartRefused(failures)
    from .dashboard import render_dashboard
    from .talos_job import render_talos_job
    from .talos_job import talos_config_template as tct

    size = sizing(inp)
    ca = image_factory_ca.strip() if image_factory_ca and image_factory_ca.strip() else None
    if ca is not None and (disk is None or disk.kind == "http"):
        base = disk if disk is not None else factory_disk(inp)
        disk = Disk.http(base.url, cert_configmap=image_factory_ca_configmap_name(inp))
    objects: list[dict[str, Any]] = list(render_dashboard(inp))
    objects += nodegroup_objects(inp, size, disk)
    objects += render_talos_job(inp, sizing=size, kernel_modules=kernel_modules, installer_image=installer_image)
    if ca is not None and disk is not None and disk.kind == "http":
        objects.append(image_factory_ca_configmap(inp, ca))
    if talos_config_template:
        objects.append(tct(inp, sizing=size, kernel_modules=kernel_modules, installer_image=installer_image))
    return objects
