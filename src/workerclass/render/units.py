"""Quantities as the whole numbers the Proxmox machine template wants (cores, MiB, GiB).

Pure. There is one quantity grammar in workerclass, the chart's: admission checks a value against
the chart's values schema (``QUANTITY`` in :mod:`workerclass.api.patterns`) and the chart sizes it
with ``cozy-lib.resources.toFloat`` (:func:`workerclass.chart.quantity.to_float`); these functions
read the value with that same ``toFloat``, so every spelling ``check`` admits (``2e10``, ``+20Gi``,
``.5Ti``, ``20.Gi``) renders, to the number the chart would compute. They only round; they raise
:class:`~workerclass.render.errors.RenderError` for a negative size, which the chart passes through
to KubeVirt unchecked (a spelling Go's float64 cannot hold is 0 to ``toFloat``, as to the chart).
"""

from __future__ import annotations

import math
from typing import Any

from ..chart.quantity import to_float
from .errors import RenderError

__all__ = ["cpu_cores", "gibibytes", "mebibytes"]

_MEBI = float(2**20)
_GIBI = float(2**30)


def _size(value: Any, what: str) -> float:
    number = to_float(value)
    if not math.isfinite(number) or number < 0:
        # The value itself is not echoed: it is the user's text (API.md: messages name fields).
        raise RenderError(f"the {what} is not a size a Proxmox VM can have (a quantity of 0 or more)")
    return number


def mebibytes(value: Any) -> int:
    """Memory in MiB, rounded up."""
    return math.ceil(_size(value, "memory") / _MEBI)


def gibibytes(value: Any) -> int:
    """Disk size in GiB, rounded up (Proxmox sizes disks in whole GiB)."""
    return math.ceil(_size(value, "disk size") / _GIBI)


def cpu_cores(value: Any) -> int:
    """Whole guest vCPUs for a CPU quantity: ``500m`` -> 1, ``4`` -> 4, ``1e0`` -> 1."""
    return max(1, math.ceil(_size(value, "CPU")))
