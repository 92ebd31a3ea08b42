"""The State: a read-only view of classes, pools, the platform and parent clusters.

Built from a STATE folder (the cluster as GitOps holds it, read by
:func:`workerclass.adapters.folder.load_state`) or from plain objects (the webhook's and
controller's cache). Its edge: it indexes and parses; it decides nothing. Its modules:

- :mod:`~workerclass.state.snapshot`: :class:`State` itself (construction, lookups, the
  incremental :meth:`State.with_object` / :meth:`State.without`),
  :func:`embedded_instancetypes`;
- :mod:`~workerclass.state.records`: one object into one record: :class:`ObjectRecord`,
  :class:`ClassRecord`, :class:`PoolRecord`, :class:`Document`, :class:`LoadError`,
  :func:`identify`, :func:`pool_from_object`, :func:`pool_cluster`, :func:`node_group_pools`, :func:`helm_release_name`,
  :func:`release_of`, :func:`is_pool_release`, :func:`cluster_release`;
- :mod:`~workerclass.state.memo`: :class:`Memo`, the facts derived from one snapshot (its one
  mutable part, and why that is safe);
- :mod:`~workerclass.state.pmap`: :class:`PMap`, the persistent mapping the indexes are kept in;
- :mod:`~workerclass.state.skipped`: :class:`Skipped`, what indexing skips, said one line each (or
  counted per kind), with "did you mean" for a near miss of a kind read;
- :mod:`~workerclass.state.kinds`: the kinds read (:data:`KINDS`, :data:`POOL_KINDS`,
  :data:`AUXILIARY_KINDS`, the API groups...), views of
  :mod:`workerclass.api.resources`, kept importable from here.
"""

from __future__ import annotations

from ..builtin import embedded_platform_spec as embedded_platform_spec
from .kinds import (
    APPLICATION_KIND_LABEL,
    APPS,
    AUXILIARY_KINDS,
    COZYSTACK,
    FLUX,
    INSTANCETYPE_GROUP,
    INSTANCETYPE_KIND,
    KINDS,
    POOL_KINDS,
)
from .memo import Memo
from .pmap import PMap
from .records import (
    ClassRecord,
    Document,
    LoadError,
    ObjectRecord,
    PoolRecord,
    cluster_release,
    helm_release_name,
    identify,
    is_pool_release,
    node_group_pools,
    pool_cluster,
    pool_from_object,
    release_of,
)
from .snapshot import State, embedded_instancetypes

__all__ = [
    "APPLICATION_KIND_LABEL",
    "APPS",
    "AUXILIARY_KINDS",
    "COZYSTACK",
    "FLUX",
    "INSTANCETYPE_GROUP",
    "INSTANCETYPE_KIND",
    "KINDS",
    "POOL_KINDS",
    "ClassRecord",
    "Document",
    "LoadError",
    "Memo",
    "ObjectRecord",
    "PMap",
    "PoolRecord",
    "State",
    "cluster_release",
    "embedded_instancetypes",
    "embedded_platform_spec",
    "helm_release_name",
    "identify",
    "is_pool_release",
    "node_group_pools",
    "pool_cluster",
    "pool_from_object",
    "release_of",
]
