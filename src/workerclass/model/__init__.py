"""Typed resources parsed from plain dicts.

Owns the shapes of WorkerClass, KubernetesNodes (and HelmRelease pool values, ComputePlane node
groups), WorkerPlatform and the parent Kubernetes app. Its edge: it reads dicts and returns
frozen values plus ``Invalid`` violations; it never looks at other objects.

"Supplied" survives parsing: an absent key is ``None``, a supplied empty value is ``""``, ``()``
or ``{}``. Resolution depends on that difference.

Modules:

- :mod:`.reader`: the typed reader over dicts (violations with field paths) and label rules (the
  value patterns are :mod:`workerclass.api.patterns`').
- :mod:`.versions`: ``version_tuple``, ``minor_of``.
- :mod:`.settings`: the Talos-only settings a class and a pool share (``talos``, ``kernelModules``,
  ``kubevirt.osImage``, ``proxmox.templateTags``) and their parser.
- :mod:`.worker_class`: ``WorkerClassSpec``, ``FixedImage``, ``parse_class_spec``.
- :mod:`.pool`: ``PoolSpec`` (KubernetesNodes, HelmRelease values), ``parse_pool_spec``,
  ``parse_node_group`` (ComputePlane), the chart's key sets.
- :mod:`.platform`: ``Platform``, ``complete_platform_spec``, ``parse_platform``.
- :mod:`.cluster`: ``Cluster`` (the parent app), ``parse_cluster``.

The key sets and patterns of the WorkerClass and WorkerPlatform specs (and the blocks a pool
shares) are declared once in :mod:`workerclass.api.schema`, which the CRDs are generated from.
"""

from __future__ import annotations

from .cluster import INFRASTRUCTURES, Cluster, parse_cluster
from .platform import Golden, KairosImage, Platform, complete_platform_spec, parse_platform
from .pool import (
    _POOL_KEYS,
    CHART_KEYS,
    CHART_VERSIONS,
    CLASS_ERA_KEYS,
    COMPUTE_PLANE_ALLOWLIST,
    DEFAULT_MAX_REPLICAS,
    DEFAULT_MIN_REPLICAS,
    RESERVED_LABEL_PREFIXES,
    ROLE,
    TAINT_EFFECTS,
    Gpu,
    PoolSpec,
    Resources,
    Taint,
    parse_node_group,
    parse_pool_spec,
)
from .settings import (
    _OS_KEYS,
    _TALOS_KEYS,
    PEM_CERTIFICATE,
    PEM_CERTIFICATES,
    ImageSource,
    KernelModule,
    OsImage,
    OsSettings,
    TalosSettings,
)
from .versions import minor_of, version_tuple
from .worker_class import (
    _CLASS_KEYS,
    FixedImage,
    WorkerClassSpec,
    parse_class_spec,
)

# every name importers use, including the underscored key sets (tests compare them with the CRDs)
__all__ = [
    "CHART_KEYS",
    "CHART_VERSIONS",
    "CLASS_ERA_KEYS",
    "COMPUTE_PLANE_ALLOWLIST",
    "DEFAULT_MAX_REPLICAS",
    "DEFAULT_MIN_REPLICAS",
    "INFRASTRUCTURES",
    "PEM_CERTIFICATE",
    "PEM_CERTIFICATES",
    "RESERVED_LABEL_PREFIXES",
    "ROLE",
    "TAINT_EFFECTS",
    "_CLASS_KEYS",
    "_OS_KEYS",
    "_POOL_KEYS",
    "_TALOS_KEYS",
    "Cluster",
    "FixedImage",
    "Golden",
    "Gpu",
    "ImageSource",
    "KairosImage",
    "KernelModule",
    "OsImage",
    "OsSettings",
    "Platform",
    "PoolSpec",
    "Resources",
    "Taint",
    "TalosSettings",
    "WorkerClassSpec",
    "complete_platform_spec",
    "minor_of",
    "parse_class_spec",
    "parse_cluster",
    "parse_node_group",
    "parse_platform",
    "parse_pool_spec",
    "version_tuple",
]
