"""Resolution: class baseline, then pool overrides, then image selection and compatibility.

Pure. Implements API.md section 2 and the design page's "Talos overrides and image selection"
table, one rule per path. Its edge: it reads a :class:`~workerclass.state.State` and one pool;
it returns :class:`Effective` settings with the origin of every value, or violations. Rules that
need no resolution (a class on its own, a pool's change, the family lookup) are
:mod:`workerclass.rules`'; resolution applies them where a pool meets them.

Modules, from the entry points down:

- :mod:`.pools`: the entry points (:func:`resolve_pool`, :func:`resolve_verdict`, :func:`resolve`,
  :func:`resolve_all`) and what every pool meets before its family is known.
- :mod:`.talos`: Talos settings (scalars, registry mirrors, kernel modules) and the Talos pool.
- :mod:`.kairos`: the Kairos pool (its refusals, a fixed or a platform image).
- :mod:`.image`: image source selection on KubeVirt (builtin golden or Image Factory) and the
  disk/installer agreement.
- :mod:`.classes`: a class's rules plus its baseline against the platform; :func:`class_problems`.
- :mod:`.versions`: the Kubernetes minor and patch, and the control-plane skew.
- :mod:`.checks`: replicas, vGPU on Talos, the health threshold, the pool's name.
- :mod:`.chart`: the chart's render-time refusals, defaults, version map and render context.
- :mod:`.resolution`: the working space (:class:`Resolution`) and shared message helpers.
- :mod:`.effective`: the result (:class:`Effective`, :class:`EffectiveTalos`, :class:`EffectiveImage`).
"""

from __future__ import annotations

from .chart import (
    CLASS_RESOLVED_CODES,
    MAX_CHART_DEPTH,
    SHARED_CHECKS_SIZE,
    chart_checks,
    chart_context,
    chart_talos_defaults,
    chart_version_map,
)
from .checks import check_replicas, check_talos_vgpu
from .classes import class_problems
from .effective import Effective, EffectiveImage, EffectiveTalos
from .image import GOLDEN_NAMESPACE, golden_reference, resolve_kubevirt_image
from .pools import resolve, resolve_all, resolve_pool, resolve_verdict
from .resolution import Resolution, shown_cluster_name
from .talos import NVIDIA_MODULES, mirror_map, resolve_talos
from .versions import MAX_MINOR_SKEW

__all__ = [
    "CLASS_RESOLVED_CODES",
    "GOLDEN_NAMESPACE",
    "MAX_CHART_DEPTH",
    "MAX_MINOR_SKEW",
    "NVIDIA_MODULES",
    "SHARED_CHECKS_SIZE",
    "Effective",
    "EffectiveImage",
    "EffectiveTalos",
    "Resolution",
    "chart_checks",
    "chart_context",
    "chart_talos_defaults",
    "chart_version_map",
    "check_replicas",
    "check_talos_vgpu",
    "class_problems",
    "golden_reference",
    "mirror_map",
    "resolve",
    "resolve_all",
    "resolve_kubevirt_image",
    "resolve_pool",
    "resolve_talos",
    "resolve_verdict",
    "shown_cluster_name",
]
