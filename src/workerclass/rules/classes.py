"""The rules of one WorkerClass on its own and of its changes: none of them needs a resolution.

- :func:`class_spec_violations`: a class's spec on its own (the built-in names keep their family,
  no private key material, a Kairos class carries no Talos-only settings, a fixed image is a
  Kairos one and complete and pinned, one osImage source).
- :func:`spec_changed`: whether an UPDATE changes a class's spec (metadata is no change).
- :func:`class_immutable`: a class's spec never changes (``ClassImmutable``).
- :func:`class_being_deleted`: a class that is being deleted is selected by no new pool.
- :data:`BUILTIN_FAMILIES`: the built-in class names, each bound to its family.
- :func:`reference_problem`: an image reference is pinned, well formed and carries no credentials.

The baseline of a class against the platform (its disk and installer agree) needs the resolved
Talos settings and is resolution's (:func:`workerclass.resolve.classes.class_rule_violations`,
which adds it to these). A class that breaks them can still reach a State (a GitOps folder, or a
cluster whose class webhook was unavailable); pools that select it then fail closed instead of
resolving with the bad values dropped or passed through.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..api.names import Family
from ..api.patterns import CREDENTIALS, DIGEST_SUFFIX, REFERENCE
from ..model import WorkerClassSpec
from ..violations import Violation
from .keys import private_key_paths

__all__ = [
    "BUILTIN_FAMILIES",
    "class_being_deleted",
    "class_immutable",
    "class_spec_violations",
    "reference_problem",
    "spec_changed",
]


def reference_problem(reference: str, field: str, what: str) -> Violation | None:
    """``ImageNotPinned`` for a reference without a digest, ``Invalid`` for one that is not a reference.

    The reference is not quoted in the ``Invalid`` message: a malformed one may carry credentials.
    """
    if CREDENTIALS.match(reference):
        return Violation(
            "Invalid",
            field,
            "must not carry credentials (user:password@): references are public; configure registry "
            "authentication on the platform side (the value is not shown)",
        )
    if not DIGEST_SUFFIX.search(reference):
        return Violation(
            "ImageNotPinned",
            field,
            f"the reference is not pinned (not shown): use <repository>@sha256:<64 hex digest> of {what}",
        )
    if not REFERENCE.match(reference):
        return Violation(
            "Invalid",
            field,
            "is not an image reference ([registry[:port]/]repository[:tag]@sha256:<digest>, lower-case "
            "repository, no credentials)",
        )
    return None


#: The built-in class names, each bound to its own bootstrap family (a folder may redefine the
#: class, not turn ``talos`` into a Kairos offer or the reverse).
BUILTIN_FAMILIES: dict[str, Family] = {"talos": "talos", "kairos": "kairos"}


def class_spec_violations(
    spec: WorkerClassSpec, raw: Any, field: str = "spec", *, name: str | None = None
) -> list[Violation]:
    """The rules of one WorkerClass spec on its own (``raw``: the spec as written), in this order."""
    denials: list[Violation] = []
    family = BUILTIN_FAMILIES.get(name or "")
    if family is not None and spec.bootstrap and spec.bootstrap != family:
        denials.append(
            Violation(
                "Invalid",
                f"{field}.bootstrap",
                f"the built-in class name {name!r} is the {family} offer and must keep bootstrap {family}; "
                f"publish a {spec.bootstrap} class under another name",
            )
        )
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
        # IncompleteImage: exactly one of the two fields absent or empty; a malformed one that is
        # set is the reader's Invalid (API.md section 3), not a missing one.
        raw_image = raw.get("image") if isinstance(raw, dict) else None
        supplied = {
            key: isinstance(raw_image, dict) and raw_image.get(key) not in (None, "")
            for key in ("kubernetesVersion", "reference")
        }
        if supplied["kubernetesVersion"] != supplied["reference"]:
            missing = "reference" if supplied["kubernetesVersion"] else "kubernetesVersion"
            denials.append(
                Violation(
                    "IncompleteImage",
                    f"{field}.image.{missing}",
                    "image.kubernetesVersion and image.reference are required together: set both or neither",
                )
            )
        problem = (
            reference_problem(image.reference, f"{field}.image.reference", "a verified, publicly pullable disk")
            if image.reference
            else None
        )
        if problem is not None:
            denials.append(problem)
    os_image = spec.os.os_image
    if (
        spec.bootstrap == "talos"
        and os_image is not None
        and os_image.builtin is not None
        and os_image.factory is not None
    ):
        denials.append(
            Violation(
                "OsImageSourceConflict",
                f"{field}.kubevirt.osImage",
                "set builtin or factory, not both: osImage selects exactly one disk source",
            )
        )
    return denials


def spec_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether ``new`` (a WorkerClass object) changes ``old``'s spec. Metadata is no change (labels,
    finalizers, the controller's bookkeeping); an absent or null spec is the empty one."""
    return (new.get("spec") or {}) != (old.get("spec") or {})


def class_immutable(name: str) -> Violation:
    """``ClassImmutable``: an UPDATE that changes a class's spec (metadata-only UPDATEs are not one)."""
    return Violation(
        "ClassImmutable",
        "spec",
        f"the spec of WorkerClass {name} is immutable: publish another class (for example {name}-r2) "
        "for another baseline or fixed image, and select it from the pools",
    )


def class_being_deleted(name: str, field: str) -> Violation:
    """``ClassNotFound`` for a pool that newly selects a class carrying a deletion timestamp."""
    return Violation("ClassNotFound", field, f"WorkerClass {name} is being deleted: select another class")
