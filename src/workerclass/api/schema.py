"""The declarations of the specs we own: WorkerClass and WorkerPlatform (and the Talos/OS blocks a
class and a pool share), one table read twice.

The parser (:mod:`workerclass.model`) takes its key sets (unknown-field detection), value patterns
and the nouns of its messages from here; :mod:`workerclass.crds` generates the OpenAPI schemas
from the same nodes, with the CEL rules declared beside the fields they span. So a field, a
pattern or a rule cannot be in one and not the other (issue 13: the CRD once let a non-numeric
URL port through that the parser refused).

A node says what one object can: its type, pattern, enum, whether it is required, nullable or may
be supplied empty, a description, CEL rules with their messages, whether unknown fields are kept.
What spans objects (a class against the platform, pools against classes) is not declared here:
it lives in the rules above. Its edge: plain frozen data, nothing is parsed or emitted here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from .frozen import fast_init
from .names import FAMILIES
from .patterns import (
    HTTP_URL,
    KUBERNETES_MINOR,
    KUBERNETES_PATCH,
    MODULE_NAME,
    NAME,
    PINNED,
    REPOSITORY,
    SCHEMATIC_ID,
    TALOS_VERSION,
)

__all__ = [
    "BUILTIN_SOURCE",
    "CLASS_ERA_KEYS",
    "CLASS_IMAGE",
    "CLASS_OS_IMAGE",
    "CLASS_SPEC",
    "FACTORY_SOURCE",
    "KERNEL_MODULE",
    "KUBEVIRT",
    "OS_KEYS",
    "PLATFORM_KAIROS",
    "PLATFORM_SINGLETON",
    "PLATFORM_SPEC",
    "PLATFORM_TALOS",
    "PROXMOX",
    "TALOS",
    "Array",
    "Boolean",
    "Map",
    "Node",
    "Object",
    "Rule",
    "String",
    "values_of",
]

_T = TypeVar("_T")


@fast_init
@dataclass(frozen=True, slots=True)
class Rule:
    """A CEL rule (``x-kubernetes-validations``) the API server evaluates on the node it sits on."""

    rule: str
    message: str


@fast_init
@dataclass(frozen=True, slots=True)
class String:
    """A string field.

    ``nullable``: YAML's ``key:`` (null) is accepted; the parser reads it as supplied and empty.
    ``empty``: ``""`` is "supplied empty" (API.md section 2), not a format error: the CRD's pattern
    gets a ``^$|`` alternative. ``what`` is the noun of the parser's "is not ..." message.
    """

    pattern: re.Pattern[str] | None = None
    description: str | None = None
    what: str = ""
    enum: tuple[str, ...] = ()
    nullable: bool = True
    empty: bool = True


@fast_init
@dataclass(frozen=True, slots=True)
class Boolean:
    description: str | None = None


@fast_init
@dataclass(frozen=True, slots=True)
class Array:
    items: Node
    description: str | None = None


@fast_init
@dataclass(frozen=True, slots=True)
class Map:
    """An object with free keys (``additionalProperties``); ``key_pattern`` is the parser's alone:
    a structural schema cannot constrain keys (the parser refuses a key that does not match)."""

    values: Node | None = None
    description: str | None = None
    key_pattern: re.Pattern[str] | None = None
    key_what: str = ""
    preserve_unknown: bool = False


@fast_init
@dataclass(frozen=True, slots=True)
class Object:
    """An object with known fields; any other field is unknown (the parser's ``Invalid``, the API
    server prunes it)."""

    properties: Mapping[str, Node]
    required: tuple[str, ...] = ()
    nullable: bool = False
    description: str | None = None
    rules: tuple[Rule, ...] = ()
    preserve_unknown: bool = False
    #: the field names, computed once: the parser's unknown-field check reads it on every call
    keys: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "keys", frozenset(self.properties))

    def __getitem__(self, key: str) -> Node:
        return self.properties[key]

    def string(self, key: str) -> String:
        """The declaration of string field ``key`` (a ``TypeError`` if it is not one: a table bug)."""
        return _typed(self.properties[key], String)

    def map(self, key: str) -> Map:
        return _typed(self.properties[key], Map)

    def array(self, key: str) -> Array:
        return _typed(self.properties[key], Array)


def _typed(node: object, kind: type[_T]) -> _T:
    if not isinstance(node, kind):
        raise TypeError(f"declared {type(node).__name__}, read as {kind.__name__}")
    return node


def values_of(node: Map | Array) -> Object:
    """The object declaration of a map's values or a list's items."""
    return _typed(node.values if isinstance(node, Map) else node.items, Object)


Node = String | Boolean | Array | Map | Object

# --------------------------------------------------------------------------- Talos, shared

_VERSION = "a Talos version (vX.Y.Z)"
_SCHEMATIC = "an Image Factory schematic ID (64 hex)"
_URL = "an http(s) URL"

#: the ``talos`` block a class and a pool share (API.md section 1)
TALOS = Object(
    {
        "version": String(TALOS_VERSION, "Talos version (vX.Y.Z)", _VERSION),
        "schematicID": String(SCHEMATIC_ID, "Image Factory schematic ID (64 hex)", _SCHEMATIC),
        "imageFactoryURL": String(HTTP_URL, "Image Factory endpoint, without credentials", _URL),
        "installerRepository": String(
            REPOSITORY, "installer image repository, without tag", "an image repository without tag"
        ),
        # PEM blocks: checked by the parser (a multi-line block's whitespace classes differ between
        # Python's re and RE2, and a private key there has its own code, PrivateKeyMaterial)
        "imageFactoryCA": String(description="PEM CA certificate(s) of a private Image Factory"),
        "registryMirrors": Map(
            Object(
                {
                    "endpoints": Array(String(HTTP_URL, what=_URL, nullable=False, empty=False)),
                    "skipFallback": Boolean(),
                },
                required=("endpoints",),
                preserve_unknown=True,
            ),
            "registry -> mirror endpoints; replaced whole, never merged",
        ),
    }
)

KERNEL_MODULE = Object(
    {
        "name": String(MODULE_NAME, what="a kernel module name ([a-z0-9_-]+)", nullable=False, empty=False),
        "parameters": Array(String(nullable=False)),
    },
    required=("name",),
)

BUILTIN_SOURCE = Object(
    {"version": String(TALOS_VERSION, what=_VERSION), "schematicID": String(SCHEMATIC_ID, what=_SCHEMATIC)},
    nullable=True,
)
FACTORY_SOURCE = Object({**BUILTIN_SOURCE.properties, "endpoint": String(HTTP_URL, what=_URL)}, nullable=True)

CLASS_OS_IMAGE = Object(
    {"builtin": BUILTIN_SOURCE, "factory": FACTORY_SOURCE},
    nullable=True,
    description="disk source: at most one of builtin and factory; {} = the default factory path",
    rules=(Rule("!(has(self.builtin) && has(self.factory))", "set builtin or factory, not both"),),
)
KUBEVIRT = Object({"osImage": CLASS_OS_IMAGE})
PROXMOX = Object({"templateTags": Array(String(nullable=False))})

#: the Talos-only settings, at the same paths in a class and in a pool
OS_KEYS = frozenset({"talos", "kernelModules", "kubevirt", "proxmox"})
#: The keys the class era adds to a pool's chart values (API.md section 1, marked ``*``), in the
#: order a restore drops them: the class, the node settings, and the Talos-only blocks but ``talos``
#: (which the chart itself has). The parser accepts them on a pool; the main chart renders none.
CLASS_ERA_KEYS: tuple[str, ...] = (
    "workerClassName",
    "labels",
    "taints",
    "sshKeys",
    "kernelModules",
    "kubevirt",
    "proxmox",
)

# --------------------------------------------------------------------------- WorkerClass

CLASS_IMAGE = Object(
    {
        "kubernetesVersion": String(
            KUBERNETES_PATCH,
            "the exact Kubernetes version the disk carries",
            "an exact Kubernetes version (vX.Y.Z)",
        ),
        # the parser reads any string; admission's reference rule refuses what is not pinned
        "reference": String(PINNED, "<repository>@sha256:<64 hex digest> of a verified, public disk"),
    },
    description="a fixed Kairos disk: both fields or neither",
    rules=(
        Rule(
            "(has(self.kubernetesVersion) && self.kubernetesVersion != '') == "
            "(has(self.reference) && self.reference != '')",
            "image.kubernetesVersion and image.reference are required together",
        ),
    ),
)

CLASS_SPEC = Object(
    {
        "bootstrap": String(description="the bootstrap family", enum=FAMILIES, nullable=False, empty=False),
        "talos": TALOS,
        "kernelModules": Array(KERNEL_MODULE),
        "kubevirt": KUBEVIRT,
        "proxmox": PROXMOX,
        "image": CLASS_IMAGE,
    },
    required=("bootstrap",),
    description="the offer: an OS and bootstrap baseline, and for Kairos an optional fixed image; immutable",
    rules=(
        Rule("self == oldSelf", "the spec of a WorkerClass is immutable: publish another class and select it"),
        Rule(
            "self.bootstrap == 'kairos' || !has(self.image) || "
            "((!has(self.image.reference) || self.image.reference == '') && "
            "(!has(self.image.kubernetesVersion) || self.image.kubernetesVersion == ''))",
            "a fixed image is for Kairos classes",
        ),
    ),
)

# --------------------------------------------------------------------------- WorkerPlatform

_MINOR_KEY = "a minor version (vX.Y)"

PLATFORM_TALOS = Object(
    {
        "version": String(TALOS_VERSION, "Talos version (vX.Y.Z)", "a Talos version"),
        "schematicID": String(SCHEMATIC_ID, "Image Factory schematic ID (64 hex)", "a schematic ID"),
        "imageFactoryURL": String(HTTP_URL, "Image Factory endpoint, without credentials", "a URL"),
        "installerRepository": String(REPOSITORY, "installer image repository, without tag", "a repository"),
        "goldens": Array(
            Object(
                {
                    "version": String(TALOS_VERSION, what="a Talos version", nullable=False, empty=False),
                    "schematicID": String(SCHEMATIC_ID, what="a schematic ID (64 hex)", nullable=False, empty=False),
                },
                required=("version", "schematicID"),
            ),
            "builtin golden disks that exist",
        ),
        "supportMatrix": Map(
            Object(
                {
                    "min": String(KUBERNETES_MINOR, what="a minor (vX.Y)", nullable=False, empty=False),
                    "max": String(KUBERNETES_MINOR, what="a minor (vX.Y)", nullable=False, empty=False),
                },
                required=("min", "max"),
            ),
            "Talos minor -> the Kubernetes minors it runs",
            key_pattern=KUBERNETES_MINOR,
            key_what=_MINOR_KEY,
        ),
    }
)

PLATFORM_KAIROS = Object(
    {
        "images": Map(
            Object(
                {
                    # the parser reads any string; admission's reference rule refuses what is not pinned
                    "reference": String(PINNED, nullable=False, empty=False),
                    "kubernetesVersion": String(KUBERNETES_PATCH, what="a patch version (vX.Y.Z)"),
                },
                required=("reference",),
            ),
            "platform Kairos disks per minor (experimental)",
            key_pattern=KUBERNETES_MINOR,
            key_what=_MINOR_KEY,
        )
    }
)

PLATFORM_SPEC = Object(
    {
        # "" is supplied empty (the platform default class, talos); null is left out
        "defaultWorkerClass": String(
            NAME, "the class new pools get on CREATE", "a class name", nullable=False, empty=True
        ),
        "kubernetesVersions": Map(
            Object({"patch": String(KUBERNETES_PATCH, what="a patch version (vX.Y.Z)")}, required=("patch",)),
            "supported minors -> the exact patch used for platform images",
            key_pattern=KUBERNETES_MINOR,
            key_what=_MINOR_KEY,
        ),
        "talos": PLATFORM_TALOS,
        "clusterValues": Map(
            description="what Cozystack injects as _cluster into every app's values "
            "(default {cluster-domain: cozy.local})",
            preserve_unknown=True,
        ),
        "kairos": PLATFORM_KAIROS,
    },
    required=("defaultWorkerClass",),
)

#: on the whole WorkerPlatform object (it reads ``metadata``)
PLATFORM_SINGLETON = Rule("self.metadata.name == 'default'", "the WorkerPlatform is a singleton named default")
