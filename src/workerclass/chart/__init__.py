"""A port of Cozystack's ``kubernetes-nodes`` chart (main ``3c780acd4``), pure Python.

Owns what the chart decides: its values and defaults (``values``), the sizing and kubelet
reservation arithmetic (``sizing``), every render-time ``fail`` of the chart as a
:class:`ChartFailure` with an admission code (``checks``), and the objects it renders
(``nodegroup`` for the KubevirtMachineTemplate, MachineDeployment, MachineHealthCheck and
WorkloadMonitor; ``talos_job`` for the talos-reconcile Job, its RBAC and network policy and
the TalosConfigTemplate the Job applies; ``dashboard`` for the dashboard RBAC). The oracle
(``shared/tools/cozystack-render``) judges it on parsed objects; the KubevirtMachineTemplate's
name and the Job's name are hashes of the chart's exact text, so those blocks are emitted as
the chart's templates emit them.

Its edge: plain values in, plain dicts out. It reads only its own package data (the chart's
``values.yaml``, ``files/versions.yaml``, ``images/kubectl.tag`` and the instance types
Cozystack ships, copied by ``scripts/sync-upstream.py``); it never sees State or a class.
"""

from __future__ import annotations

from .checks import chart_failures, kernel_module_failures
from .context import RELEASE_PREFIX, ChartFailure, ChartInput, ChartRefused
from .nodegroup import (
    Disk,
    kubevirtmachinetemplate,
    kubevirtmachinetemplate_text,
    machinedeployment,
    machinehealthcheck,
    nodegroup_objects,
    template_hash,
    workloadmonitor,
)
from .render import (
    factory_disk,
    golden_disk,
    image_factory_ca_configmap,
    image_factory_ca_failures,
    installer_image_failures,
    render_chart,
)
from .sizing import Sizing, sizing
from .values import (
    app_version,
    chart_defaults,
    chart_input,
    chart_version,
    coalesce,
    kubectl_image,
    load_instancetypes,
    version_map,
)

__all__ = [
    "RELEASE_PREFIX",
    "ChartFailure",
    "ChartInput",
    "ChartRefused",
    "Disk",
    "Sizing",
    "app_version",
    "chart_defaults",
    "chart_failures",
    "chart_input",
    "chart_version",
    "coalesce",
    "factory_disk",
    "golden_disk",
    "image_factory_ca_configmap",
    "image_factory_ca_failures",
    "installer_image_failures",
    "kernel_module_failures",
    "kubectl_image",
    "kubevirtmachinetemplate",
    "kubevirtmachinetemplate_text",
    "load_instancetypes",
    "machinedeployment",
    "machinehealthcheck",
    "nodegroup_objects",
    "render_chart",
    "sizing",
    "template_hash",
    "version_map",
    "workloadmonitor",
]
