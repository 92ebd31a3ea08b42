"""The chart's values: defaults, Helm's coalesce, the chart's data, and building a ChartInput.

Owns what the templates read besides the pool's values, from the generated facts
(:mod:`.facts`): the chart's default values, its Kubernetes version map, the Job's default kubectl
image, ``.Chart.Version`` / ``.Chart.AppVersion``, and the instance types Cozystack ships (as the
objects the chart's lookup finds: name, guest CPU and memory). Each is built once and cached;
callers get deep copies (or read-only data) so nothing cached is mutated.
"""

from __future__ import annotations

import copy
import functools
import math
import re
from collections.abc import Mapping
from typing import Any, TypeGuard

import yaml

from .context import ChartInput, Variant
from .facts import DEFAULT_UPSTREAM, instance_type_sizes, upstream_facts
from .source import ChartSource

#: What the oracle (and Cozystack's tests/render-parity.sh) injects when no platform values are given.
DEFAULT_CLUSTER_VALUES: dict[str, Any] = {"_cluster": {"cluster-domain": "cozy.local"}}


@functools.cache
def _defaults(upstream: str = DEFAULT_UPSTREAM) -> dict[str, Any]:
    loaded = upstream_facts(upstream).get("defaults")
    return copy.deepcopy(loaded) if isinstance(loaded, dict) else {}


def chart_defaults(upstream: str = DEFAULT_UPSTREAM) -> dict[str, Any]:
    """The chart's default values (its ``values.yaml``; a fresh deep copy on every call)."""
    return copy.deepcopy(_defaults(upstream))


_ATOMS = (str, int, float, bool, type(None))


def _copy(value: Any) -> Any:
    """``copy.deepcopy`` for values data (dicts, lists and scalars; anything else is deep-copied)."""
    if type(value) is dict:
        return {k: v if type(v) in _ATOMS else _copy(v) for k, v in value.items()}
    if type(value) is list:
        return [v if type(v) in _ATOMS else _copy(v) for v in value]
    if type(value) in _ATOMS:
        return value
    return copy.deepcopy(value)


def _is_table(v: Any) -> TypeGuard[Mapping[str, Any]]:
    t = type(v)
    return t is dict or (t not in _ATOMS and t is not list and isinstance(v, Mapping))


def _coalesce_tables(dst: dict[str, Any], src: Mapping[str, Any]) -> dict[str, Any]:
    """Helm's coalesceTablesFullKey (dst wins): a null in dst deletes the key where src (the
    defaults) has that key, and only there (a user ``a.io: null`` under ``registryMirrors: {}``
    stays null, as Helm renders it); tables merge."""
    for key, val in src.items():
        if key in dst and dst[key] is None:
            del dst[key]  # the user's null removes the default too
            continue
        if key not in dst:
            dst[key] = _copy(val)
            continue
        dv = dst[key]
        if _is_table(val) and _is_table(dv):
            dst[key] = _coalesce_tables(dict(dv), val)
    return dst


def coalesce(values: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """Helm's coalesce of user values over chart defaults.

    Maps merge recursively; a user ``null`` removes the key (default included) where the defaults
    have that key (elsewhere below the top level it stays null, as in Helm); scalars and lists
    replace. ``values`` is not mutated.
    """
    return _coalesce_owned(_copy(dict(values)), defaults)


def _coalesce_owned(out: dict[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`coalesce` into ``out``, a fresh tree the caller owns (it is changed in place)."""
    for key, val in defaults.items():
        if key in out:
            uv = out[key]
            if uv is None:
                del out[key]
            elif _is_table(uv) and _is_table(val):
                out[key] = _coalesce_tables(dict(uv), val)
        else:
            out[key] = _copy(val)
    # A top-level null the defaults do not know stays nil in Helm; nil and absent read the same
    # in every template expression, so it is dropped.
    for key in [k for k, v in out.items() if v is None]:
        del out[key]
    return out


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """Flux's values merge (valuesFrom underneath, spec.values on top): maps merge, the rest replaces."""
    out: dict[str, Any] = _copy(dict(base))
    for k, v in over.items():
        cur = out.get(k)
        if _is_table(v) and _is_table(cur):
            out[k] = deep_merge(cur, v)
        else:
            out[k] = _copy(v)
    return out


@functools.cache
def _version_map(upstream: str = DEFAULT_UPSTREAM) -> dict[str, str]:
    loaded = upstream_facts(upstream).get("versionMap")
    return {str(k): str(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}


def version_map(upstream: str = DEFAULT_UPSTREAM) -> dict[str, str]:
    """The chart's version map (``files/versions.yaml``): Kubernetes minor -> patch (``v1.35`` -> ``v1.35.6``)."""
    return dict(_version_map(upstream))


@functools.cache
def kubectl_image(upstream: str = DEFAULT_UPSTREAM) -> str:
    """The talos-reconcile Job's default image (the chart's ``images/kubectl.tag``)."""
    return str(upstream_facts(upstream).get("kubectlImage", ""))


def chart_version(chart: ChartSource | None = None) -> str:
    """``.Chart.Version``: the given chart's, else the version the facts' chart carries (``0.0.0``)."""
    return (chart or ChartSource.shipped()).version


def app_version(upstream: str = DEFAULT_UPSTREAM) -> str:
    """``.Chart.AppVersion`` of the upstream chart (it counts towards the digest: the same for a known chart)."""
    meta = upstream_facts(upstream).get("chart")
    return str(meta.get("appVersion", "")) if isinstance(meta, Mapping) else ""


#: The apiVersion and kind of the instance types the chart looks up.
INSTANCETYPE_API_VERSION = "instancetype.kubevirt.io/v1beta1"
INSTANCETYPE_KIND = "VirtualMachineClusterInstancetype"


@functools.cache
def _instancetypes() -> dict[str, dict[str, Any]]:
    """The shipped instance types as the objects the chart's lookup reads (its guest CPU and memory)."""
    return {
        name: {
            "apiVersion": INSTANCETYPE_API_VERSION,
            "kind": INSTANCETYPE_KIND,
            "metadata": {"name": name},
            "spec": {"cpu": {"guest": size.get("cpu")}, "memory": {"guest": size.get("memory")}},
        }
        for name, size in instance_type_sizes().items()
    }


def load_instancetypes() -> dict[str, Any]:
    """The VirtualMachineClusterInstancetype objects Cozystack ships, by name (shared, read-only)."""
    return dict(_instancetypes())


def chart_input(
    pool_values: Mapping[str, Any],
    *,
    namespace: str,
    release: str,
    cluster_values: Mapping[str, Any] | None = None,
    instancetypes: Mapping[str, Mapping[str, Any]] | None = None,
    variant: Variant = "main",
    existing_machinedeployment_release: str | None = None,
    existing_machinedeployment_cluster: str | None = None,
    parent_control_plane_version: str | None = None,
    chart: ChartSource | None = None,
) -> ChartInput:
    """The values the templates see: pool values over the platform's, coalesced over defaults.

    ``cluster_values`` is ``{"_cluster": {...}, "_namespace": {...}}`` (default
    :data:`DEFAULT_CLUSTER_VALUES`, as the oracle); ``instancetypes`` defaults to the shipped set;
    ``existing_machinedeployment_release`` feeds the chart's foreign-pool lookup (None: none known),
    ``existing_machinedeployment_cluster`` and ``parent_control_plane_version`` PR 3315's lookups;
    ``chart`` is the chart in effect (default: the one the shipped facts describe), whose defaults
    are coalesced under the values.
    """
    chart = chart or ChartSource.shipped()
    platform = DEFAULT_CLUSTER_VALUES if cluster_values is None else cluster_values
    merged = deep_merge(platform, pool_values)  # a fresh tree: coalesced in place
    supplied = {} if chart.known else _copy(merged)  # Helm's engine coalesces a chart the port does not know
    values = _coalesce_owned(merged, _defaults(chart.upstream))
    return ChartInput(
        values=values,
        release=release,
        namespace=namespace,
        instancetypes=load_instancetypes() if instancetypes is None else instancetypes,
        variant=variant,
        existing_machinedeployment_release=existing_machinedeployment_release,
        existing_machinedeployment_cluster=existing_machinedeployment_cluster,
        parent_control_plane_version=parent_control_plane_version,
        supplied_values=supplied,
        chart=chart,
    )


# ------------------------------------------------------------------ YAML as the chart's tools read it
# (Helm's toYaml, the writer, is go-yaml v2: workerclass.chart.goyaml.to_yaml, the package's one writer)

_NULLS = frozenset({"~", "null", "Null", "NULL", ""})
_TRUE = frozenset({"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})
_FALSE = frozenset({"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})
_SPECIAL_FLOATS: dict[str, float] = {
    **{
        f"{sign}.{word}": (-math.inf if sign == "-" else math.inf)
        for sign in ("", "+", "-")
        for word in ("inf", "Inf", "INF")
    },
    ".nan": math.nan,
    ".NaN": math.nan,
    ".NAN": math.nan,
}
_GO_INT = re.compile(r"^[-+]?(?:0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$")
_GO_YAML_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")


def _json_number(v: float) -> int | float:
    if math.isfinite(v) and v.is_integer() and abs(v) < 1e21:
        return int(v)
    return v


def plain_scalar(s: str) -> Any:
    """A plain (unquoted) YAML scalar as Kubernetes reads it (go-yaml v2, then JSON)."""
    if s in _NULLS:
        return None
    if s in _TRUE:
        return True
    if s in _FALSE:
        return False
    if s[0] not in "-+.0123456789":
        return s
    if s in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[s]
    if s[0] == ".":
        try:
            return _json_number(float(s))
        except ValueError:
            return s
    plain = s.replace("_", "")
    if _GO_INT.match(plain):
        sign = -1 if plain[0] == "-" else 1
        body = plain.lstrip("+-")
        if body[:2] in ("0x", "0X"):
            iv = int(body[2:], 16)
        elif body[:2] in ("0o", "0O"):
            iv = int(body[2:], 8)
        elif body[:2] in ("0b", "0B"):
            iv = int(body[2:], 2)
        elif len(body) > 1 and body[0] == "0":
            iv = int(body, 8)
        else:
            iv = int(body)
        iv *= sign
        if -(1 << 63) <= iv < (1 << 64):
            return iv
    if _GO_YAML_FLOAT.match(plain):
        return _json_number(float(plain))
    return s


@functools.cache
def _k8s_loader() -> type[yaml.SafeLoader]:
    class Loader(yaml.SafeLoader):
        pass

    Loader.yaml_implicit_resolvers = {}
    Loader.add_implicit_resolver("tag:k8s,plain", re.compile(r"(?s).*"), None)

    def construct_plain(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
        return plain_scalar(loader.construct_scalar(node))

    def construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict[str, Any]:
        loader.flatten_mapping(node)
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if isinstance(key, bool):
                key = "true" if key else "false"
            elif isinstance(key, (int, float)):
                key = str(key)
            out[str(key)] = loader.construct_object(value_node, deep=deep)
        return out

    Loader.add_constructor("tag:k8s,plain", construct_plain)
    Loader.add_constructor("tag:yaml.org,2002:map", construct_mapping)
    return Loader


def k8s_load(text: str) -> Any:
    """One YAML document parsed as kubectl/Helm send it to the API server (go-yaml v2, JSON numbers)."""
    return yaml.load(text, Loader=_k8s_loader())


def from_yaml(text: str) -> dict[str, Any]:
    """Helm's ``fromYaml`` for a mapping (a non-mapping gives Helm's ``{"Error": ...}`` shape)."""
    try:
        loaded = k8s_load(text)
    except yaml.YAMLError as exc:
        return {"Error": str(exc).splitlines()[0]}
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        return {"Error": "error unmarshaling JSON: cannot unmarshal into a map"}
    return loaded


# ------------------------------------------------------------------ a small reader for text we emit

_ESCAPES = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r", "e": "\x1b"}
_DQ_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)")


def _scalar_text(text: str) -> Any:
    if text.startswith('"') and text.endswith('"') and len(text) >= 2:

        def unescape(m: re.Match[str]) -> str:
            e = m.group(1)
            if e[0] in "xuU" and len(e) > 1:
                return chr(int(e[1:], 16))
            return _ESCAPES.get(e, e)

        return _DQ_ESCAPE.sub(unescape, text[1:-1])
    if text.startswith("'") and text.endswith("'") and len(text) >= 2:
        return text[1:-1].replace("''", "'")
    if text == "{}":
        return {}
    if text == "[]":
        return []
    return plain_scalar(text)


def _split_key(content: str) -> tuple[str, str | None]:
    """``key: value`` / ``key:`` -> (key, value text or None)."""
    if content[:1] in "\"'":
        q = content[0]
        end = content.index(q, 1)
        while q == "'" and content[end + 1 : end + 2] == "'":
            end = content.index(q, end + 2)
        key, rest = str(_scalar_text(content[: end + 1])), content[end + 1 :]
        return key, (rest[2:] if rest.startswith(": ") else None)
    if content.endswith(":"):
        return content[:-1], None
    key, _, value = content.partition(": ")
    return key, value


def block_load(text: str) -> Any:
    """Parse block YAML of the shape this package emits (the KMT define): block mappings and
    sequences, plain/quoted scalars, ``{}``/``[]``. Equal to :func:`k8s_load` on such text (a test
    checks it over the chart's value space); about 50x faster than PyYAML's pure-Python loader."""
    lines = [(len(raw) - len(raw.lstrip(" ")), raw.strip(" ")) for raw in text.split("\n") if raw.strip(" ")]
    node, _ = _block(lines, 0, lines[0][0] if lines else 0)
    return node


def _block(lines: list[tuple[int, str]], i: int, indent: int) -> tuple[Any, int]:
    if i >= len(lines) or lines[i][0] < indent:
        return None, i
    if lines[i][1] == "-" or lines[i][1].startswith("- "):
        seq: list[Any] = []
        while i < len(lines) and lines[i][0] == indent and (lines[i][1] == "-" or lines[i][1].startswith("- ")):
            rest = lines[i][1][2:]
            if not rest:
                item, i = _block(lines, i + 1, indent + 1)
            elif rest.startswith("- ") or (":" in rest and (": " in rest or rest.endswith(":"))):
                lines[i] = (indent + 2, rest)
                item, i = _block(lines, i, indent + 2)
            else:
                item, i = _scalar_text(rest), i + 1
            seq.append(item)
        return seq, i
    mapping: dict[str, Any] = {}
    while i < len(lines) and lines[i][0] == indent and not lines[i][1].startswith("- "):
        key, value = _split_key(lines[i][1])
        i += 1
        if value is not None:
            mapping[key] = _scalar_text(value)
        elif i < len(lines) and (
            lines[i][0] > indent or (lines[i][0] == indent and (lines[i][1].startswith("- ") or lines[i][1] == "-"))
        ):
            mapping[key], i = _block(lines, i, lines[i][0])
        else:
            mapping[key] = None
    return mapping, i
