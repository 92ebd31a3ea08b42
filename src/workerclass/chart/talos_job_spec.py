"""The ``kubernetes-nodes.talos-reconcile-job-spec`` define: the exact text Helm renders for a pool.

The talos-reconcile Job's name ends in ``sha256(job spec text)[:6]``, so the define's text must be the
chart's own, byte for byte. It is not kept here: :func:`job_spec_text` reads the define from
``templates/talos-reconcile-job.yaml`` of the chart in effect (:class:`~.source.ChartSource`; without
the chart's files :class:`~.source.ChartTextMissing` says how to give it), compiles it once per chart
(:mod:`.gotext`) and renders it with the template's ``$jobContext`` (:class:`JobContext`, computed by
:mod:`.talos_job` as the chart computes it). Two class-era inputs change what the chart prints:
PR 3294's installer image takes the place of the whole value of the install image line (the line
whose action reads ``.Values.talos.installerRepository``), and PR 3571's kernel modules are printed
after the block that reads ``.group.gpus``, where PR 3571's chart prints them.

Also owns the Job's name (:func:`job_name`) and the container's command script cut from the text
as YAML reads it (:func:`command_script`). Its edge: a :class:`JobContext` and the chart in, text out.

The define is compiled cut in two where the command script starts (:func:`job_spec`,
:class:`JobSpec`): the text before it names the pool and is rendered per pool; the script and what
follows read only the pool's versions, reservations, GPUs and Talos settings (the paths
:func:`~.gotext.data_read` finds in those nodes), so they are rendered, encoded and cut once per
distinct value of those paths and shared by the pools that agree on them. A define whose rest reads
a variable set before the cut, or the whole data, is not cut.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import yaml

from ..api.caching import short_cache
from ..api.frozen import fast_init
from .gotext import (
    SPRIG,
    Action,
    Block,
    DataPath,
    Node,
    Template,
    TemplateError,
    Text,
    compile_define,
    data_read,
    read_value,
)
from .kubeyaml import k8s_load
from .nodegroup import HASH_LENGTH, chart_hash
from .quantity import nindent
from .source import ChartSource, ChartTextMissing

__all__ = [
    "JOB_SPEC_DEFINE",
    "JOB_TEMPLATE",
    "POD_CIDR",
    "SERVICE_CIDR",
    "TENANT_CLUSTER_DOMAIN",
    "JobContext",
    "JobSpec",
    "command_script",
    "heredoc_body",
    "image_scalar",
    "job_name",
    "job_spec",
    "job_spec_text",
]

#: ``$podCIDR``, ``$serviceCIDR`` and ``kubernetes.tenantClusterDomain``: fixed in the chart.
POD_CIDR = "10.243.0.0/16"
SERVICE_CIDR = "10.95.0.0/16"
TENANT_CLUSTER_DOMAIN = "cluster.local"

#: Where the define lives in the chart, and its name.
JOB_TEMPLATE = "templates/talos-reconcile-job.yaml"
JOB_SPEC_DEFINE = "kubernetes-nodes.talos-reconcile-job-spec"


@fast_init
@dataclass(frozen=True, slots=True)
class JobContext:
    """``$jobContext``: every value the job-spec define reads (``values`` is the pool's ``.Values``)."""

    release: str
    namespace: str
    cluster_name: str
    group_name: str
    kubectl_image: str
    kubelet_version: str
    talos_version: str
    mgmt_cluster_domain: str
    gpus: Any  # the group's ``gpus`` (the define tests its truth)
    system_reserved_cpu: str
    system_reserved_memory: str
    kube_reserved_cpu: str
    kube_reserved_memory: str
    eviction_hard_memory: str
    eviction_soft_memory: str
    values: Mapping[str, Any]
    #: PR 3294's installer image, escaped for the heredoc (None: the chart's own)
    installer_image: str | None = None
    #: toYaml of PR 3571's modules list ("" when none)
    kernel_modules_yaml: str = ""
    dns_domain: str = TENANT_CLUSTER_DOMAIN
    pod_cidr: str = POD_CIDR
    service_cidr: str = SERVICE_CIDR

    def data(self) -> dict[str, Any]:
        """The define's ``.`` (and ``$``), keyed as the chart sets ``$jobContext``."""
        return {
            "Release": {"Name": self.release, "Namespace": self.namespace},
            "Values": self.values,
            "group": {"gpus": self.gpus},
            "groupName": self.group_name,
            "clusterName": self.cluster_name,
            "kubeletVersion": self.kubelet_version,
            "talosVersion": self.talos_version,
            "podCIDR": self.pod_cidr,
            "serviceCIDR": self.service_cidr,
            "dnsDomain": self.dns_domain,
            "mgmtClusterDomain": self.mgmt_cluster_domain,
            "systemReservedCpu": self.system_reserved_cpu,
            "systemReservedMemory": self.system_reserved_memory,
            "kubeReservedCpu": self.kube_reserved_cpu,
            "kubeReservedMemory": self.kube_reserved_memory,
            "evictionHardMemory": self.eviction_hard_memory,
            "evictionSoftMemory": self.eviction_soft_memory,
            "kubectlImage": self.kubectl_image,
        }


@fast_init
@dataclass(frozen=True, slots=True)
class _Compiled:
    template: Template
    #: the install image line's nodes, from the action that reads the installer repository to the line's end
    install_image: tuple[Node, ...]
    #: the block that tests ``.group.gpus`` (the kernel modules follow it)
    gpu_block: Block
    #: that block alone, rendered to print the kernel modules after it
    gpu_template: Template
    #: the define cut where the command script starts (None: rendered whole for every pool)
    split: _Split | None = None


#: Texts after the cut kept per chart, one per distinct value of what they read (each about 40 KB
#: with its bytes and script): the most recently used.
RESTS_KEPT = 256


@fast_init
@dataclass(frozen=True, slots=True)
class _Split:
    """The define as the text before the command script, which names the pool (its labels, account,
    environment and secrets), and the text from the script on, which reads only the paths
    :attr:`reads` (:func:`~.gotext.data_read`): the pool's versions, reservations, GPUs and Talos
    settings. Pools that agree on those share the rest's text, its bytes and its script: it is
    rendered once per distinct value of what it reads (the :data:`RESTS_KEPT` most recently used)."""

    head: Template
    rest: Template
    reads: tuple[DataPath, ...]
    rests: OrderedDict[tuple[Any, ...], SpecRest]

    def rest_for(self, data: Mapping[str, Any], replace: Mapping[int, str]) -> SpecRest:
        key = _read_key(data, self.reads, replace)
        if key is None:  # not one value per text: rendered for this pool alone
            return SpecRest(self.rest.render(data, functions=SPRIG, replace=replace))
        rest = self.rests.get(key)
        if rest is not None:
            try:  # noqa: SIM105 - every hit takes this path: a try costs nothing, a suppress two calls
                self.rests.move_to_end(key)  # the most recently used kept last
            except KeyError:  # another thread may have evicted it meanwhile
                pass
            return rest
        rest = self.rests[key] = SpecRest(self.rest.render(data, functions=SPRIG, replace=replace))
        if len(self.rests) > RESTS_KEPT:
            with contextlib.suppress(KeyError):
                self.rests.popitem(last=False)
        return rest


def _read_key(
    data: Mapping[str, Any], reads: tuple[DataPath, ...], replace: Mapping[int, str]
) -> tuple[Any, ...] | None:
    """One key per distinct value of what the rest reads (and of the nodes a class-era input
    replaces), or None when the values are not plain JSON data or would read ambiguously (a null
    below the top of a path, a NaN: orjson writes both as ``null``)."""
    top = data.__class__ is dict
    values = [data.get(path[0]) if top and len(path) == 1 else read_value(data, path) for path in reads]
    absent = 0
    for index, value in enumerate(values):
        if value is None:
            absent |= 1 << index
            values[index] = 0
        elif value.__class__ not in _SCALARS and not _plain(value):
            return None  # orjson writes a tuple as a list, an enum as its value: they print otherwise
    try:
        text = orjson.dumps(values)
    except TypeError:  # an integer past 64 bits
        return None
    if b"null" in text:
        return None
    return (absent, text, tuple(sorted(replace.items())) if replace else ())


#: the types of JSON's scalars as the values hold them (a subclass is none of them)
_SCALARS = frozenset({str, int, float, bool})


def _plain(value: Any) -> bool:
    """Whether ``value`` is JSON data of the exact built-in types (dicts with string keys, lists)."""
    if value.__class__ is dict:
        return all(key.__class__ is str and _plain(item) for key, item in value.items())
    if value.__class__ is list:
        return all(_plain(item) for item in value)
    return value is None or value.__class__ in _SCALARS


def _split(template: Template) -> _Split | None:
    """The define cut before the top-level text where the command script starts, when what follows
    reads only paths of the data (none of its variables set before the cut, not the whole data),
    and nothing in the define sets ``$`` (the rest is rendered with ``$`` its data)."""
    if template.find(lambda node: isinstance(node, Action) and node.variable == "$"):
        return None
    for index, node in enumerate(template.nodes):
        if not isinstance(node, Text) or _SCRIPT_START not in node.text:
            continue
        cut = node.text.index(_SCRIPT_START)
        head = (*template.nodes[:index], Text(node.text[:cut]))
        rest = (Text(node.text[cut:]), *template.nodes[index + 1 :])
        reads = data_read(rest)
        if reads is None or () in reads:
            return None
        return _Split(Template(template.name, head), Template(template.name, rest), reads, OrderedDict())
    return None


class SpecRest:
    """The define's text from the cut on, with (once asked) its UTF-8 bytes, its command script and
    the script's heredoc."""

    __slots__ = ("_data", "_heredoc", "_script", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._data: bytes | None = None
        self._script: str | None = None
        self._heredoc: tuple[str | None] | None = None

    @property
    def data(self) -> bytes:
        """The text's UTF-8 bytes (``UnicodeEncodeError`` for a lone surrogate in it)."""
        if self._data is None:
            self._data = self.text.encode("utf-8")
        return self._data

    @property
    def script(self) -> str:
        """:func:`command_script` of the text (it starts where the script does)."""
        if self._script is None:
            self._script = command_script(self.text)
        return self._script

    @property
    def heredoc(self) -> str | None:
        """:func:`heredoc_body` of the script."""
        if self._heredoc is None:
            self._heredoc = (heredoc_body(self.script),)
        return self._heredoc[0]


_NO_REST = SpecRest("")


class JobSpec:
    """The define's text for one pool: the text before the cut and the (shared) rest
    (:class:`SpecRest`; none when the define is not cut, or for a text given whole)."""

    __slots__ = ("head", "rest")

    def __init__(self, head: str, rest: SpecRest = _NO_REST) -> None:
        self.head, self.rest = head, rest

    @property
    def text(self) -> str:
        """The whole text, as Helm renders it."""
        return self.head + self.rest.text if self.rest.text else self.head

    @property
    def name_hash(self) -> str:
        """:func:`~.nodegroup.chart_hash` of the text: the hash in the Job's name."""
        try:
            digest = hashlib.sha256(self.head.encode("utf-8"))
            digest.update(self.rest.data)
        except UnicodeEncodeError:  # a lone surrogate: the whole text's own error, as chart_hash raises it
            return chart_hash(self.text)
        return digest.hexdigest()[:HASH_LENGTH]

    @property
    def script(self) -> str:
        """:func:`command_script` of the text: the rest's own when the script starts in it."""
        return self.rest.script if self._script_in_rest() else command_script(self.text)

    @property
    def heredoc(self) -> str | None:
        """:func:`heredoc_body` of the script: the rest's own when the script starts in it."""
        return self.rest.heredoc if self._script_in_rest() else heredoc_body(self.script)

    def _script_in_rest(self) -> bool:
        """Whether the script starts in the rest: it does unless the text before the cut already
        holds the script's start (whole, or with the rest's first line break)."""
        return bool(self.rest.text) and _SCRIPT_START not in self.head + _SCRIPT_START[:-1]


def as_spec(spec: str | JobSpec) -> JobSpec:
    """A define's text given whole, as a :class:`JobSpec`."""
    return spec if isinstance(spec, JobSpec) else JobSpec(spec)


_COMPILED: dict[str, _Compiled] = {}


def _reads(node: Node, path: str) -> bool:
    return not isinstance(node, Text) and path in node.source


def _line_ends_in(node: Node) -> bool:
    return isinstance(node, Text) and "\n" in node.text


def _install_image_nodes(template: Template) -> tuple[Node, ...]:
    """The first action reading the installer repository and its siblings up to the end of the line."""

    def siblings(nodes: tuple[Node, ...]) -> tuple[Node, ...] | None:
        for index, node in enumerate(nodes):
            if isinstance(node, Action) and _reads(node, ".Values.talos.installerRepository"):
                end = index + 1
                while end < len(nodes) and not _line_ends_in(nodes[end]):
                    end += 1
                after = nodes[end] if end < len(nodes) else None
                if isinstance(after, Text) and not after.text.startswith("\n"):
                    return None  # more of the line after the value: not the line the port knows
                return nodes[index:end]
            if isinstance(node, Block):
                found = siblings(node.body) or siblings(node.otherwise)
                if found:
                    return found
        return None

    found = siblings(template.nodes)
    if not found:
        raise TemplateError(f"{template.name}: no install image line reading .Values.talos.installerRepository")
    return found


_WHAT = "the talos-reconcile Job (its name hashes the chart's text)"


def _compiled(chart: ChartSource) -> _Compiled:
    if not chart.given:  # the same digest may have been compiled from another source's files
        raise ChartTextMissing(_WHAT)
    cached = _COMPILED.get(chart.digest)
    if cached is None:
        text = chart.text(JOB_TEMPLATE, what=_WHAT)
        template = compile_define(text, JOB_SPEC_DEFINE, JOB_TEMPLATE)
        gpu_blocks = template.find(lambda node: isinstance(node, Block) and _reads(node, ".group.gpus"))
        if len(gpu_blocks) != 1:
            raise TemplateError(f"{template.name}: {len(gpu_blocks)} blocks test .group.gpus, the port knows one")
        gpu_block = gpu_blocks[0]
        assert isinstance(gpu_block, Block)
        cached = _Compiled(
            template, _install_image_nodes(template), gpu_block, Template(template.name, (gpu_block,)), _split(template)
        )
        if len(_COMPILED) >= 16:  # a few charts per process at most
            _COMPILED.clear()
        _COMPILED[chart.digest] = cached
    return cached


def job_spec_text(ctx: JobContext, chart: ChartSource) -> str:
    """``include "kubernetes-nodes.talos-reconcile-job-spec" $jobContext``: the exact text Helm renders.

    Raises :class:`~.source.ChartTextMissing` when only the shipped facts are at hand."""
    return job_spec(ctx, chart).text


def job_spec(ctx: JobContext, chart: ChartSource) -> JobSpec:
    """:func:`job_spec_text` as a :class:`JobSpec`: the text before the cut rendered for the pool,
    the rest shared with the pools whose values it reads are the same."""
    compiled = _compiled(chart)
    replace: dict[int, str] = {}
    if ctx.installer_image is not None:
        first, *rest = compiled.install_image
        replace[id(first)] = ctx.installer_image
        replace.update((id(node), "") for node in rest)
    data = ctx.data()
    if ctx.kernel_modules_yaml:
        gpus = compiled.gpu_template.render(data, functions=SPRIG)
        kernel = "\n" + " " * 24 + "kernel:\n" + " " * 26 + "modules:" + nindent(ctx.kernel_modules_yaml, 28)
        replace[id(compiled.gpu_block)] = gpus + kernel
    split = compiled.split
    if split is None:
        return JobSpec(compiled.template.render(data, functions=SPRIG, replace=replace))
    return JobSpec(split.head.render(data, functions=SPRIG, replace=replace), split.rest_for(data, replace))


#: an image that reads as itself in the double-quoted scalar: printable ASCII but ``"`` and ``\\``
_IMAGE_AS_WRITTEN = re.compile(r"[\x20\x21\x23-\x5b\x5d-\x7e]*")


@short_cache(maxsize=256)
def image_scalar(image: str) -> str | None:
    """What the container's ``image: "<image>"`` line holds once read (a double-quoted YAML scalar:
    its escapes apply, line breaks fold), or None when the value breaks that scalar or closes it
    early and writes keys of its own (Helm refuses such a manifest, or renders other keys)."""
    if _IMAGE_AS_WRITTEN.fullmatch(image):
        return image
    probe = (
        "spec:\n  template:\n    spec:\n      containers:\n        - name: kubectl\n"
        f'          image: "{image}"\n          env: []\n'
    )
    try:
        loaded = k8s_load(probe)
        container = loaded["spec"]["template"]["spec"]["containers"][0]
    except (yaml.YAMLError, KeyError, IndexError, TypeError):
        return None
    if not isinstance(container, dict) or set(container) != {"name", "image", "env"} or container["env"] != []:
        return None
    read = container["image"]
    return read if isinstance(read, str) else None


def job_name(release: str, group_name: str, spec: str | JobSpec) -> str:
    """``<release>-talos-reconcile-<pool>`` cut to 56 (one trailing dash trimmed), ``-<sha256[:6]>``."""
    base = f"{release}-talos-reconcile-{group_name}"[:56].removesuffix("-")
    return f"{base}-{spec.name_hash if isinstance(spec, JobSpec) else chart_hash(spec)}"


#: The TalosConfigTemplate the script applies: an unquoted heredoc piped to ``kubectl apply``.
_HEREDOC = re.compile(r"cat <<EOF \| kubectl apply -f -\n(.*?)\nEOF\n", re.S)


def heredoc_body(script: str) -> str | None:
    """The TalosConfigTemplate heredoc's body in the script, with the newline before ``EOF`` (the
    shell passes it: the ``data: |`` block keeps it), or None. kubectl reads it as go-yaml v2 does
    (a mirror's 1e+20 is a number, not text)."""
    match = _HEREDOC.search(script)
    return None if match is None else match.group(1) + "\n"


_SCRIPT_INDENT = 14


_SCRIPT_START = "\n" + " " * 12 + "- |\n"
_SCRIPT_END = "\n" + " " * 10 + "resources:\n"
_SCRIPT_LINE_START = "\n" + " " * _SCRIPT_INDENT
_SHORT_LINE = re.compile(rf"\n(?! {{{_SCRIPT_INDENT}}})[^\n]")


def command_script(spec_text: str) -> str:
    """The ``- |`` block of the container's command, as YAML reads it (indent 14, clip chomping).

    Every line of the block is either empty or indented by at least 14 (the template's script
    lines, and the toYaml lines ``nindent`` pads), so cutting 14 characters is YAML's reading."""
    start = spec_text.index(_SCRIPT_START) + len(_SCRIPT_START)
    block = "\n" + spec_text[start : spec_text.index(_SCRIPT_END, start)]
    if _SHORT_LINE.search(block) is None:
        # every line empty or indented by at least 14: cutting 14 from each is one replace
        return block.replace(_SCRIPT_LINE_START, "\n")[1:].rstrip("\n") + "\n"
    body = [line[_SCRIPT_INDENT:] for line in block[1:].split("\n")]
    while body and not body[-1]:
        body.pop()
    return "\n".join(body) + "\n"
