"""Kubernetes quantities and Go durations, converted where a CRD wants plain integers.

Pure. The model has already checked the formats (``QUANTITY``, ``DURATION`` in
:mod:`workerclass.model.reader`); these functions only convert, and raise
:class:`~workerclass.render.errors.RenderError` on text the model would have refused.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

from .errors import RenderError

__all__ = ["cpu_cores", "duration_seconds", "gibibytes", "mebibytes", "quantity_bytes"]

_SUFFIX = {
    "": Decimal(1),
    "m": Decimal("0.001"),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(m|k|Ki|Mi|Gi|Ti|Pi|Ei|M|G|T|P|E)?$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_DURATION_UNIT = {
    "ns": Decimal("1e-9"),
    "us": Decimal("1e-6"),
    "µs": Decimal("1e-6"),
    "ms": Decimal("1e-3"),
    "s": Decimal(1),
    "m": Decimal(60),
    "h": Decimal(3600),
}


def _quantity(text: str) -> Decimal:
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise RenderError(f"{text!r} is not a Kubernetes quantity")
    try:
        return Decimal(match.group(1)) * _SUFFIX[match.group(2) or ""]
    except InvalidOperation as error:  # pragma: no cover - the pattern admits only decimals
        raise RenderError(f"{text!r} is not a Kubernetes quantity") from error


def quantity_bytes(text: str) -> int:
    """``8Gi`` -> 8589934592, rounded up to a whole byte."""
    return math.ceil(_quantity(text))


def mebibytes(text: str) -> int:
    """Memory in MiB, rounded up."""
    return math.ceil(_quantity(text) / _SUFFIX["Mi"])


def gibibytes(text: str) -> int:
    """Disk size in GiB, rounded up (Proxmox sizes disks in whole GiB)."""
    return math.ceil(_quantity(text) / _SUFFIX["Gi"])


def cpu_cores(text: str) -> int:
    """Whole guest vCPUs for a CPU quantity: ``500m`` -> 1, ``4`` -> 4."""
    return max(1, math.ceil(_quantity(text)))


def duration_seconds(text: str) -> int:
    """A Go duration (``20m``, ``1h30m``, ``300s``) in whole seconds, rounded up."""
    compact = text.strip()
    position, total = 0, Decimal(0)
    for match in _DURATION_PART.finditer(compact):
        if match.start() != position:
            break
        total += Decimal(match.group(1)) * _DURATION_UNIT[match.group(2)]
        position = match.end()
    if position != len(compact) or not compact:
        raise RenderError(f"{text!r} is not a duration like 20m or 300s")
    return math.ceil(total)
