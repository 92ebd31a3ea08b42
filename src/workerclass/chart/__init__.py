"""A port of Cozystack's ``kubernetes-nodes`` chart (main ``3c780acd4``), pure Python.

Owns what the chart decides: its values, what its templates render and every render-time
``fail`` as a :class:`ChartFailure` with an admission code. The oracle
(``shared/tools/cozystack-render``) judges it on parsed objects; the KubevirtMachineTemplate's
name and the Job's name are hashes of the chart's exact text, so those blocks are emitted as the
chart's templates emit them. The port keeps the chart's structure: one function per define or
document, named after it, in the template's order.

Modules (what lives where, and what of the chart each mirrors):

- ``identity``: which chart a set of files is: :class:`~.identity.ChartIdentity` (name, version,
  digest, gated, the rules it implies), :func:`~.identity.chart_digest`, :func:`~.identity.identify`
  against the known identities ``scripts/sync-upstream.py`` generated (``data/facts.json``).
- ``context``: :class:`ChartInput` (``.Values``, ``.Release``, what ``lookup`` finds), the
  variants (main, PR 3571) and :class:`ChartFailure` / :class:`ChartRefused`.
- ``values``: ``values.yaml``, ``files/versions.yaml``, ``images/kubectl.tag``, ``Chart.yaml`` and
  the shipped instance types; Helm's coalesce, Flux's values merge, YAML as Kubernetes reads it
  (``k8s_load``, ``plain_scalar``, ``block_load``).
- ``quantity``: the Go/sprig primitives (``%v``, ``%q``, ``nindent``, ParseFloat/ParseInt, cast,
  shopspring decimal) and cozy-lib's ``toFloat`` / ``cpuToMillicores``.
- ``sizing``: ``nodegroup.yaml``'s sizing and kubelet reservation arithmetic.
- ``labels``: ``_helpers.tpl``'s ``kubernetes.labels`` and ``kubernetes.selectorLabels``.
- ``checks``: every ``fail`` of ``_helpers.tpl``, ``_versions.tpl``, ``nodegroup.yaml`` and
  cozy-lib's tenant rule, in the order Helm meets them.
- ``nodegroup``: ``templates/nodegroup.yaml`` (KubevirtMachineTemplate text and object, its name,
  MachineDeployment, MachineHealthCheck, WorkloadMonitor).
- ``dashboard``: ``templates/dashboard-resourcemap.yaml`` (the dashboard RBAC) and cozy-lib's ``_rbac.tpl``.
- ``talos_job``: ``templates/talos-reconcile-job.yaml`` (RBAC, network policy, the Job) and the
  TalosConfigTemplate its heredoc applies.
- ``talos_job_spec``: the ``talos-reconcile-job-spec`` define as literal text, the Job's name and
  its command script.
- ``goyaml``: Helm's ``toYaml`` as go-yaml v2 writes it, the package's one YAML writer (the Job's
  ``registryMirrors`` and kernel modules, the KubevirtMachineTemplate's pod resources and topology
  constraints).
- ``kernel_modules``: PR 3571's ``kernelModules`` and PR 3294's installer image, with the
  heredoc character rule they pass.
- ``render``: the whole chart for one pool in the oracle's order, plus the class-era inputs (disk
  sources, PR 3797's Image Factory CA).

Its edge: plain values in, plain dicts out. It reads only its own package data (copied by
``scripts/sync-upstream.py``); it never sees State or a class, and imports nothing of
workerclass but ``api`` and ``violations``.
"""

from __future__ import annotations

from .checks import chart_failures
from .context import RELEASE_PREFIX, ChartFailure, ChartInput, ChartRefused
from .kernel_modules import kernel_module_failures
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
