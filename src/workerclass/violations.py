"""Violations as values: ``Violation(code, field, message)``.

Every door (webhook, controller status, CLI) shows a violation the same way,
``CODE field: message``. The codes are the stable set of the contract's section 3 (``docs/contract.md``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .api.frozen import fast_init

CODES = frozenset(
    {
        "ClassNotFound",
        "ClusterNotFound",
        "BootstrapFamilyChange",
        "SSHKeysOnTalos",
        "TooManySSHKeys",
        "InvalidSSHKey",
        "PrivateKeyMaterial",
        "KairosOnProxmox",
        "TalosSettingOnKairos",
        "IncompleteImage",
        "ImageNotPinned",
        "VersionMismatch",
        "UnsupportedVersion",
        "ControlPlaneTooOld",
        "TalosKubernetesIncompatible",
        "OsImageSourceConflict",
        "GoldenNotFound",
        "ArtifactConflict",
        "EmptyTemplateTags",
        "OsImageOnProxmox",
        "ClassImmutable",
        "ClassInUse",
        "TalosVGPU",
        "InvalidReplicas",
        "NotAllowedInComputePlane",
        "NotAllowedInNodeGroup",
        "InvalidPoolName",
        "InstanceTypeNotFound",
        "IncompleteResources",
        "InvalidPodCPU",
        "InvalidKubeletReservation",
        "InvalidDuration",
        "InvalidMaxUnhealthy",
        "InvalidKernelModule",
        "PoolFieldImmutable",
        "ChartNotGated",
        "PlatformValueInPool",
        "PlatformImageOverride",
        "TenantImageSetting",
        "ObjectTooLarge",
        "Invalid",
    }
)


@fast_init
@dataclass(frozen=True, slots=True)
class Violation:
    """One reason to refuse an object: a stable code, the field path and an actionable message."""

    code: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.code} {self.field}: {self.message}"

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "field": self.field, "message": self.message}

    # Mapping access, as API.md shows denials ({"code", "field", "message"}):
    # ``v["code"]`` and ``dict(v)`` work as on the JSON rows.
    def keys(self) -> tuple[str, str, str]:
        return ("code", "field", "message")

    def __getitem__(self, key: str) -> str:
        if key not in ("code", "field", "message"):
            raise KeyError(key)
        value: str = getattr(self, key)
        return value


class Denied(Exception):
    """Raised by :func:`workerclass.resolve` when a pool cannot be resolved."""

    def __init__(self, violations: list[Violation] | tuple[Violation, ...]) -> None:
        self.violations: tuple[Violation, ...] = tuple(violations)
        super().__init__("; ".join(str(v) for v in self.violations))

    @property
    def denials(self) -> tuple[Violation, ...]:
        """The violations, by the name API.md section 6 gives them (``Denied(denials)``)."""
        return self.violations


def under_values(failures: Iterable[Violation], values: str, *, preface: str = "") -> tuple[Violation, ...]:
    """The chart's failures as one pool's violations: a field the chart names under ``spec`` moved
    under the pool's values ``values`` (``spec.values...`` for a HelmRelease, ``spec...`` for a
    KubernetesNodes), each message after ``preface``; other fields (``metadata...``) as they are.

    The one conversion of chart failures to a pool's denials: resolution and the CLI's render
    refusals both make theirs here."""
    out: list[Violation] = []
    for failure in failures:
        where = failure.field
        if where == "spec" or where.startswith("spec."):
            where = values + where[len("spec") :]
        out.append(Violation(failure.code, where, preface + failure.message))
    return tuple(out)
