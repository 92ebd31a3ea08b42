"""The Talos-only settings a class and a pool share: the ``talos`` block, ``kernelModules``,
``kubevirt.osImage`` and ``proxmox.templateTags`` (API.md section 1), their values and parsers.

Key sets and value patterns come from the declarations (:mod:`workerclass.api.schema`), which
the CRDs are generated from. Its edge: one block of one object; family rules are the caller's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..api import schema
from ..api.frozen import fast_init
from ..api.patterns import HTTP_URL, URL_CREDENTIALS
from .reader import (
    CREDENTIALS_MESSAGE,
    Reader,
    key_path,
    looks_private,
)

__all__ = [
    "PEM_CERTIFICATE",
    "PEM_CERTIFICATES",
    "ImageSource",
    "KernelModule",
    "OsImage",
    "OsSettings",
    "TalosSettings",
    "parse_os",
]

# --------------------------------------------------------------------------- Talos settings


@fast_init
@dataclass(frozen=True, slots=True)
class TalosSettings:
    """The ``talos`` block a class and a pool share. ``None`` = absent, ``""`` = supplied empty."""

    version: str | None = None
    schematic_id: str | None = None
    image_factory_url: str | None = None
    image_factory_ca: str | None = None
    installer_repository: str | None = None
    registry_mirrors: Mapping[str, tuple[str, ...]] | None = None

    def nonempty_fields(self) -> list[str]:
        """The camelCase names of settings with a nonempty value."""
        out = [
            name
            for name, value in (
                ("version", self.version),
                ("schematicID", self.schematic_id),
                ("imageFactoryURL", self.image_factory_url),
                ("imageFactoryCA", self.image_factory_ca),
                ("installerRepository", self.installer_repository),
            )
            if value
        ]
        if self.registry_mirrors:
            out.append("registryMirrors")
        return out


@fast_init
@dataclass(frozen=True, slots=True)
class KernelModule:
    name: str
    parameters: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "parameters": list(self.parameters)}


@fast_init
@dataclass(frozen=True, slots=True)
class ImageSource:
    """A builtin golden or an Image Factory source; empty values fall back to effective Talos."""

    version: str | None = None
    schematic_id: str | None = None
    endpoint: str | None = None


@fast_init
@dataclass(frozen=True, slots=True)
class OsImage:
    """``kubevirt.osImage``: at most one of ``builtin`` / ``factory``; ``{}`` = default factory."""

    builtin: ImageSource | None = None
    factory: ImageSource | None = None

    @property
    def empty(self) -> bool:
        return self.builtin is None and self.factory is None


@fast_init
@dataclass(frozen=True, slots=True)
class OsSettings:
    """Every Talos-only setting, at the same paths in a class and in a pool."""

    talos: TalosSettings | None = None
    kernel_modules: tuple[KernelModule, ...] | None = None
    os_image: OsImage | None = None
    template_tags: tuple[str, ...] | None = None

    def nonempty_paths(self, prefix: str) -> list[str]:
        """Field paths of nonempty Talos-only settings (refused on Kairos)."""
        out: list[str] = []
        if self.talos is not None:
            out.extend(f"{prefix}.talos.{name}" for name in self.talos.nonempty_fields())
        if self.kernel_modules:
            out.append(f"{prefix}.kernelModules")
        if self.os_image is not None and not self.os_image.empty:
            out.append(f"{prefix}.kubevirt.osImage")
        if self.template_tags:
            out.append(f"{prefix}.proxmox.templateTags")
        return out


# --------------------------------------------------------------------------- parsers


def _pattern(node: schema.String) -> tuple[re.Pattern[str], str]:
    """A declared string field's pattern and the noun of its message."""
    if node.pattern is None:
        raise TypeError("declared without a pattern")
    return node.pattern, node.what


_TALOS_KEYS = schema.TALOS.keys
_OS_KEYS = schema.OS_KEYS
#: the ``talos`` fields read as one pattern each (``imageFactoryCA`` and ``registryMirrors`` have their own rules)
_TALOS_PATTERNS = tuple(
    (key, *_pattern(schema.TALOS.string(key)))
    for key in ("version", "schematicID", "imageFactoryURL", "installerRepository")
)
_KERNEL_MODULE_KEYS = schema.KERNEL_MODULE.keys
_MODULE_NAME, _MODULE_WHAT = _pattern(schema.KERNEL_MODULE.string("name"))
_BUILTIN_KEYS = schema.BUILTIN_SOURCE.keys
_FACTORY_KEYS = schema.FACTORY_SOURCE.keys
_SOURCE_VERSION, _SOURCE_VERSION_WHAT = _pattern(schema.FACTORY_SOURCE.string("version"))
_SOURCE_SCHEMATIC, _SOURCE_SCHEMATIC_WHAT = _pattern(schema.FACTORY_SOURCE.string("schematicID"))
_SOURCE_ENDPOINT, _SOURCE_ENDPOINT_WHAT = _pattern(schema.FACTORY_SOURCE.string("endpoint"))
_ENDPOINT = schema.values_of(schema.TALOS.map("registryMirrors")).array("endpoints").items
assert isinstance(_ENDPOINT, schema.String)
_MIRROR_ENDPOINT, _MIRROR_ENDPOINT_WHAT = _pattern(_ENDPOINT)
_KUBEVIRT_KEYS = schema.KUBEVIRT.keys
_OS_IMAGE_KEYS = schema.CLASS_OS_IMAGE.keys
_PROXMOX_KEYS = schema.PROXMOX.keys
PEM_CERTIFICATE = "-----BEGIN CERTIFICATE-----"
#: ``imageFactoryCA``: one or more PEM certificate blocks and whitespace, nothing else.
PEM_CERTIFICATES = re.compile(
    r"^\s*(-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\r\n]+?-----END CERTIFICATE-----\s*)+$"
)


#: a line break or another control character, which no Talos version, schematic, URL or repository holds
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_CONTROL_MESSAGE = (
    "holds a line break or another control character: the chart writes this value into the "
    "talos-reconcile Job's shell script, where a line break would end its heredoc (the value is not shown)"
)


def _talos(reader: Reader, value: object, field: str, strict: Reader) -> TalosSettings | None:
    """The ``talos`` block. Types go to ``reader``; value patterns the chart lacks go to ``strict``.

    A class passes the same reader twice; a pool passes a second one whose violations refuse
    only a classified pool (the chart renders any string there).
    """
    if value is None:
        return TalosSettings()
    data = reader.mapping(value, field)
    if data is None:
        return None
    reader.only(data, _TALOS_KEYS, field)
    ca = reader.string(data, "imageFactoryCA", field)
    if ca and not looks_private(ca) and not PEM_CERTIFICATES.fullmatch(ca):
        reader.invalid(
            f"{field}.imageFactoryCA",
            "must hold PEM certificates (-----BEGIN CERTIFICATE----- blocks) and nothing else; the value is not shown",
        )
        ca = None
    values: dict[str, str | None] = {}
    for key, pattern, what in _TALOS_PATTERNS:
        text = reader.string(data, key, field)
        if text and _CONTROL.search(text):
            # Refused for every pool, classless too: the chart writes these values into the
            # talos-reconcile Job's script, where a line break ends its unquoted heredoc and the
            # lines after it run as shell in the management cluster (or break the Job's YAML).
            reader.invalid(f"{field}.{key}", _CONTROL_MESSAGE)
            values[key] = None
            continue
        if text and not pattern.fullmatch(text):
            path = f"{field}.{key}"
            if pattern is HTTP_URL and URL_CREDENTIALS.match(text):
                strict.invalid(path, CREDENTIALS_MESSAGE)
            elif not looks_private(text):
                strict.invalid(path, f"is not {what} (the value is not shown)")
            if strict is reader:
                text = None
        values[key] = text
    return TalosSettings(
        version=values["version"],
        schematic_id=values["schematicID"],
        image_factory_url=values["imageFactoryURL"],
        image_factory_ca=ca,
        installer_repository=values["installerRepository"],
        registry_mirrors=_mirrors(reader, data, f"{field}.registryMirrors", strict),
    )


def _mirrors(reader: Reader, data: Mapping[str, Any], field: str, strict: Reader) -> dict[str, tuple[str, ...]] | None:
    """Talos ``machine.registries.mirrors``: ``{host: {endpoints: [url], skipFallback, ...}}``.

    The chart passes the map through (``x-kubernetes-preserve-unknown-fields``); only its shape
    is read here: a mapping per host, ``endpoints`` a list of strings when given. Those shapes are
    ``strict`` rules (classified pools): a classless pool's map is carried through untouched.
    """
    if "registryMirrors" not in data:
        return None
    value = data["registryMirrors"]
    if value is None:
        return {}
    mirrors = reader.mapping(value, field)
    if mirrors is None:
        return None
    out: dict[str, tuple[str, ...]] = {}
    for registry, entry in mirrors.items():
        path = key_path(field, registry)
        # The chart's schema preserves the map's unknown fields: the shape of an entry is a rule of
        # classified pools only (``strict``), where resolution reads the endpoints.
        body = strict.mapping(entry, path)
        if body is None:
            continue
        endpoints = strict.string_list(body, "endpoints", path) or ()
        for index, endpoint in enumerate(endpoints):
            if not _MIRROR_ENDPOINT.fullmatch(endpoint) and not looks_private(endpoint):
                message = CREDENTIALS_MESSAGE if URL_CREDENTIALS.match(endpoint) else f"is not {_MIRROR_ENDPOINT_WHAT}"
                strict.invalid(f"{path}.endpoints[{index}]", message)
        out[str(registry)] = endpoints
    return out


def _kernel_modules(reader: Reader, data: Mapping[str, Any], field: str) -> tuple[KernelModule, ...] | None:
    items = reader.object_list(data, "kernelModules", field)
    if items is None:
        return None
    out: list[KernelModule] = []
    for path, item in items:
        reader.only(item, _KERNEL_MODULE_KEYS, path)
        name = reader.string(item, "name", path)
        if (name is not None and not _MODULE_NAME.fullmatch(name)) or "name" not in item:
            # PR 3571's chart refuses it at render time (its module name rule; an empty or missing
            # name fails it too: the chart's failure table maps each to InvalidKernelModule)
            shown = "is required" if "name" not in item else "must not be empty" if not name else "not shown"
            reader.add("InvalidKernelModule", f"{path}.name", f"is not {_MODULE_WHAT}; {shown}")
            name = None
        parameters = reader.string_list(item, "parameters", path) or ()
        if name:
            out.append(KernelModule(name, parameters))
    return tuple(out)


def _source(reader: Reader, value: object, field: str, *, factory: bool) -> ImageSource | None:
    data = reader.mapping(value if value is not None else {}, field)
    if data is None:
        return None
    reader.only(data, _FACTORY_KEYS if factory else _BUILTIN_KEYS, field)
    return ImageSource(
        version=reader.string(data, "version", field, pattern=_SOURCE_VERSION, what=_SOURCE_VERSION_WHAT),
        schematic_id=reader.string(data, "schematicID", field, pattern=_SOURCE_SCHEMATIC, what=_SOURCE_SCHEMATIC_WHAT),
        endpoint=reader.string(data, "endpoint", field, pattern=_SOURCE_ENDPOINT, what=_SOURCE_ENDPOINT_WHAT)
        if factory
        else None,
    )


def parse_os(reader: Reader, data: Mapping[str, Any], field: str, strict: Reader | None = None) -> OsSettings:
    """The Talos-only settings of a class or a pool (``strict``: see :func:`_talos`)."""
    talos = _talos(reader, data["talos"], f"{field}.talos", strict or reader) if "talos" in data else None
    os_image: OsImage | None = None
    if "kubevirt" in data:
        kubevirt = reader.mapping(data["kubevirt"] if data["kubevirt"] is not None else {}, f"{field}.kubevirt")
        if kubevirt is not None:
            reader.only(kubevirt, _KUBEVIRT_KEYS, f"{field}.kubevirt")
            if "osImage" in kubevirt:
                path = f"{field}.kubevirt.osImage"
                raw = reader.mapping(kubevirt["osImage"] if kubevirt["osImage"] is not None else {}, path)
                if raw is not None:
                    reader.only(raw, _OS_IMAGE_KEYS, path)
                    os_image = OsImage(
                        builtin=_source(reader, raw["builtin"], f"{path}.builtin", factory=False)
                        if "builtin" in raw
                        else None,
                        factory=_source(reader, raw["factory"], f"{path}.factory", factory=True)
                        if "factory" in raw
                        else None,
                    )
    template_tags: tuple[str, ...] | None = None
    if "proxmox" in data:
        proxmox = reader.mapping(data["proxmox"] if data["proxmox"] is not None else {}, f"{field}.proxmox")
        if proxmox is not None:
            reader.only(proxmox, _PROXMOX_KEYS, f"{field}.proxmox")
            template_tags = reader.string_list(proxmox, "templateTags", f"{field}.proxmox")
    return OsSettings(
        talos=talos,
        kernel_modules=_kernel_modules(reader, data, field),
        os_image=os_image,
        template_tags=template_tags,
    )
