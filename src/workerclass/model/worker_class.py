"""WorkerClass: its spec (the bootstrap family, the shared OS settings, a fixed Kairos image) and
its parser. Image rules beyond shape (pinning, family) live in the rules above.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..api.frozen import fast_init
from ..api.names import Family, is_family
from ..api.schema import CLASS_IMAGE, CLASS_SPEC
from ..violations import Violation
from .reader import Reader
from .settings import OsSettings, parse_os

__all__ = ["FixedImage", "WorkerClassSpec", "parse_class_spec"]

_CLASS_KEYS = CLASS_SPEC.keys
_IMAGE_KEYS = CLASS_IMAGE.keys
_IMAGE_VERSION = CLASS_IMAGE.string("kubernetesVersion")


@fast_init
@dataclass(frozen=True, slots=True)
class FixedImage:
    kubernetes_version: str | None = None
    reference: str | None = None


@fast_init
@dataclass(frozen=True, slots=True)
class WorkerClassSpec:
    #: ``""`` when ``spec.bootstrap`` could not be read (the parser said why)
    bootstrap: Family | Literal[""]
    os: OsSettings = field(default_factory=OsSettings)
    image: FixedImage | None = None

    @property
    def fixed_image(self) -> FixedImage | None:
        """The fixed custom image when both fields are set."""
        image = self.image
        if image is not None and image.kubernetes_version and image.reference:
            return image
        return None


def parse_class_spec(spec: object, field: str = "spec") -> tuple[WorkerClassSpec, list[Violation]]:
    """Parse a WorkerClass ``spec``; image rules beyond shape live in admission."""
    reader = Reader()
    data = reader.mapping(spec if spec is not None else {}, field) or {}
    reader.only(data, _CLASS_KEYS, field)
    text = reader.string(data, "bootstrap", field, required=True) or ""
    bootstrap: Family | Literal[""] = ""
    if is_family(text):
        bootstrap = text
    elif text:
        reader.invalid(f"{field}.bootstrap", "is not a bootstrap family; expected talos or kairos")
    image: FixedImage | None = None
    if "image" in data:
        raw = reader.mapping(data["image"] if data["image"] is not None else {}, f"{field}.image")
        if raw is not None:
            reader.only(raw, _IMAGE_KEYS, f"{field}.image")
            image = FixedImage(
                kubernetes_version=reader.string(
                    raw,
                    "kubernetesVersion",
                    f"{field}.image",
                    pattern=_IMAGE_VERSION.pattern,
                    what=_IMAGE_VERSION.what,
                ),
                reference=reader.string(raw, "reference", f"{field}.image"),
            )
    return WorkerClassSpec(bootstrap=bootstrap, os=parse_os(reader, data, field), image=image), reader.violations
