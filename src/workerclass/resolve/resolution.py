"""The working space of one resolution, and the small helpers every resolution module shares.

:class:`Resolution` collects denials, warnings and the origin of every value while a pool (or a
class baseline) resolves; :func:`shown_cluster_name` and :func:`class_origin` word resolution's messages;
:func:`infrastructure_of` is where a pool's workers run.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..api.names import Infrastructure, is_infrastructure
from ..api.patterns import DNS_LABEL
from ..model import Cluster
from ..state import ClassRecord
from ..violations import Violation
from .effective import CheckedInput

__all__ = ["Resolution", "class_origin", "infrastructure_of", "shown_cluster_name"]


def shown_cluster_name(name: str) -> str:
    """A name quoted when it is a DNS label; anything else may hold anything and is not shown.

    Resolution's wording (``ClusterNotFound``); admission's pool-change rules word it their own
    way (:func:`workerclass.rules.pools.shown_name`), and both messages are pinned.
    """
    return repr(name) if DNS_LABEL.fullmatch(name) and len(name) <= 63 else "(name not shown)"


@dataclass(slots=True)
class Resolution:
    """Working space of one resolution: denials and warnings collected together."""

    denials: list[Violation]
    warnings: list[str]
    origins: dict[str, str]
    #: only the verdict (denials, warnings) is wanted: no :class:`Effective` is built (admission)
    verdict: bool = False
    #: the chart input the chart's checks passed on, for the pool's render (see
    #: :attr:`~.effective.Effective.chart_input`)
    chart_input: CheckedInput | None = None

    def deny(self, code: str, field: str, message: str) -> None:
        self.denials.append(Violation(code, field, message))


def class_origin(record: ClassRecord | None) -> str:
    """The origin of a value a class supplied: ``class <name>``."""
    return f"class {record.name}" if record is not None else "class"


def infrastructure_of(cluster: Cluster | None) -> Infrastructure:
    """Where a pool's workers run: its parent cluster's infrastructure; KubeVirt without one."""
    if cluster is None:
        return "kubevirt"
    infrastructure = cluster.infrastructure
    return infrastructure if is_infrastructure(infrastructure) else "kubevirt"  # the model reads no other
