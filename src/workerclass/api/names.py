"""The closed sets of names: bootstrap families, infrastructures, image sources.

``Literal`` types for signatures and the tuples they are checked against at the edge (parsing);
inside the core a value of one of these types is always one of its members.
"""

from __future__ import annotations

from typing import Literal, TypeGuard, get_args

__all__ = [
    "FAMILIES",
    "IMAGE_SOURCES",
    "INFRASTRUCTURES",
    "Family",
    "ImageSource",
    "Infrastructure",
    "is_family",
    "is_infrastructure",
]

#: the bootstrap family of a class (``spec.bootstrap``); a pool without a class is Talos
Family = Literal["talos", "kairos"]
FAMILIES: tuple[Family, ...] = get_args(Family)

#: where the workers run (the pool's ``infrastructure``... as Cozystack's chart calls its providers)
Infrastructure = Literal["kubevirt", "proxmox"]
INFRASTRUCTURES: tuple[Infrastructure, ...] = get_args(Infrastructure)

#: where a pool's disk comes from: an Image Factory URL imported by CDI (``factory``), a clone of a
#: builtin golden DataVolume (``builtin``), a Proxmox template (``proxmox``), a class's pinned Kairos
#: container disk (``fixed``), the platform's Kairos disk for the pool's minor (``platform``)
ImageSource = Literal["factory", "builtin", "proxmox", "fixed", "platform"]
IMAGE_SOURCES: tuple[ImageSource, ...] = get_args(ImageSource)


def is_family(value: object) -> TypeGuard[Family]:
    return value in FAMILIES


def is_infrastructure(value: object) -> TypeGuard[Infrastructure]:
    return value in INFRASTRUCTURES
