"""The rules of one WorkerClass spec on its own, shared by class admission and pool resolution.

A class that breaks them can still reach a State (a GitOps folder, or a cluster whose class
webhook was unavailable); pools that select it then fail closed instead of resolving with the
bad values dropped or passed through.
"""

from __future__ import annotations

import re
from typing import Any

from ..model import Platform, WorkerClassSpec
from ..violations import Violation
from .keys import private_key_paths

PINNED = re.compile(r"@sha256:[0-9a-f]{64}$")


def class_rule_violations(platform: Platform, spec: WorkerClassSpec, raw: Any, field: str = "spec") -> list[Violation]:
    """Rules of one WorkerClass spec on its own (and against the platform for its baseline)."""
    denials: list[Violation] = []
    for path in private_key_paths(raw, field):
        denials.append(Violation("PrivateKeyMaterial", path, "private key material must never be put in class values"))
    image = spec.image
    if spec.bootstrap == "kairos":
        for path in spec.os.nonempty_paths(field):
            denials.append(
                Violation(
                    "TalosSettingOnKairos",
                    path,
                    "a Kairos class cannot carry Talos-only settings; they are not interpreted as Kairos configuration",
                )
            )
    elif spec.bootstrap == "talos" and image is not None and (image.kubernetes_version or image.reference):
        denials.append(
            Violation(
                "Invalid",
                f"{field}.image",
                "a fixed image is for Kairos classes; a Talos class selects its disk through talos, kubevirt "
                "and proxmox settings",
            )
        )
    if image is not None:
        if bool(image.kubernetes_version) != bool(image.reference):
            missing = "reference" if image.kubernetes_version else "kubernetesVersion"
            denials.append(
                Violation(
                    "IncompleteImage",
                    f"{field}.image.{missing}",
                    "image.kubernetesVersion and image.reference are required together: set both or neither",
                )
            )
        if image.reference and not PINNED.search(image.reference):
            denials.append(
                Violation(
                    "ImageNotPinned",
                    f"{field}.image.reference",
                    f"{image.reference!r} is not pinned: use <repository>@sha256:<64 hex digest> of a verified, "
                    "publicly pullable disk",
                )
            )
    os_image = spec.os.os_image
    if spec.bootstrap == "talos" and os_image is not None:
        if os_image.builtin is not None and os_image.factory is not None:
            denials.append(
                Violation(
                    "OsImageSourceConflict",
                    f"{field}.kubevirt.osImage",
                    "set builtin or factory, not both: osImage selects exactly one disk source",
                )
            )
        elif not denials:
            # The baseline on its own (a pool that supplies nothing) must resolve to a compatible disk.
            from . import Resolution, resolve_kubevirt_image, resolve_talos

            result = Resolution([], [], {})
            talos = resolve_talos(platform, None, spec.os.talos, baseline_origin="class", origins={})
            if talos.version and talos.schematic_id:
                resolve_kubevirt_image(platform, talos, os_image, field=f"{field}.kubevirt.osImage", result=result)
            denials.extend(result.denials)
    return denials
