"""Pool names (``InvalidPoolName``): a KubernetesNodes' when it is created, a HelmRelease's on
every write (its name is the release name the chart fails at every render).

Cozystack's API validates an application's name on CREATE only (``rest.go``: names are
immutable, so UPDATE skips it): a DNS-1035 label, and the Helm release prefix plus the name at
most 53 characters (``kubernetes-nodes-`` + 36). The chart then takes the pool name from the
release name and fails unless it starts with ``kubernetes-nodes-<cluster>-``; cozy-lib fails for
a namespace that is not ``tenant-...``; and the chart's ownership lookup fails when the parent
Kubernetes app still manages a nodeGroup of the pool's name (the parent chart's default ``md0``
unless its ``nodeGroups`` delete it). Each of those is ``InvalidPoolName``, field
``metadata.name`` (``metadata.namespace`` for the namespace); the last two are resolution's
(:func:`workerclass.resolve.checks.check_node_group_collision`), on every path.

Messages quote a name only when it is a DNS label (a name that is not may hold anything).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..api.patterns import DNS_1035
from ..api.resources import RELEASE_PREFIX
from ..chart.checks import is_foreign_pool
from ..resolve import chart_checks
from ..rules.pools import shown_name
from ..state import PoolRecord, State
from ..violations import Violation

__all__ = ["MAX_POOL_NAME", "name_violations", "shown_name"]

#: ``kubernetes-nodes-`` + name within Helm's 53-character release names
MAX_POOL_NAME = 53 - len(RELEASE_PREFIX)


def _for_release(message: str) -> str:
    """A chart message about the release name, told to a HelmRelease writer: the HelmRelease
    itself is what to rename (its name is the release name)."""
    return message.replace(
        "name the KubernetesNodes <cluster>-<pool>", "name the HelmRelease kubernetes-nodes-<cluster>-<pool>"
    )


def name_violations(state: State, record: PoolRecord, obj: Mapping[str, Any]) -> list[Violation]:
    """Every naming rule a pool CREATE breaks; ``[]`` for ComputePlane groups (not pools here).

    The API's own rule (DNS-1035, length) is checked here; the chart's release-name rule comes
    from the chart's checks (:func:`~workerclass.resolve.chart_checks`). The namespace rule and
    the collisions with the parent's node groups are left to resolution, which reports them on
    every operation and every path (the chart fails to render such a pool).
    """
    if record.kind not in ("KubernetesNodes", "HelmRelease"):
        return []
    out: list[Violation] = []
    if record.kind == "KubernetesNodes" and (len(record.name) > MAX_POOL_NAME or not DNS_1035.fullmatch(record.name)):
        out.append(
            Violation(
                "InvalidPoolName",
                "metadata.name",
                "a KubernetesNodes name must be a DNS-1035 label (lowercase letters, digits and '-', starting with "
                f"a letter, not ending with '-') of at most {MAX_POOL_NAME} characters, named <cluster>-<pool>",
            )
        )
    for failure in chart_checks(state, record):
        # The tenant namespace rule and a MachineDeployment another release owns are render
        # failures: resolution reports them on every operation.
        if failure.code != "InvalidPoolName" or failure.field == "metadata.namespace" or is_foreign_pool(failure):
            continue
        if record.kind == "HelmRelease":
            failure = Violation(failure.code, failure.field, _for_release(failure.message))
        out.append(failure)
    return out
