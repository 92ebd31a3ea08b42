"""The talos-reconcile Job port against the real chart (``shared/tools/cozystack-render``).

Property test: hypothesis-generated valid classless pools (names, namespace, Talos version,
schematic, installer repository, registry mirrors, kubectl image, kubelet reservations,
instance-type or resources sizing, GPUs, Kubernetes version, the platform's cluster domain)
render to the oracle's objects for every document of ``talos-reconcile-job.yaml``, to the
oracle's TalosConfigTemplate, and to the Job spec's exact text (so the Job's name hash).
``TALOS_JOB_ORACLE_EXAMPLES`` sets the number of examples of each property test (default 30,
about 10 s each through the batched driver). Table tests: the Job name moves exactly when the spec text does, kernel
modules against PR 3571's chart, the installer-image override, toYaml edge cases.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.render.schemas import validation_errors
from workerclass.chart.context import ChartInput
from workerclass.chart.goyaml import to_yaml
from workerclass.chart.kernel_modules import (
    NVIDIA_KERNEL_MODULES,
    InvalidInstallerImage,
    InvalidKernelModule,
    pr3571_kernel_modules,
)
from workerclass.chart.sizing import sizing
from workerclass.chart.talos_job import job_context, render_talos_job, talos_config_template
from workerclass.chart.talos_job_spec import job_name, job_spec_text
from workerclass.chart.values import chart_input

from .oracle import OracleResult, diff_paths, get_oracle, heredoc_newline, oracle_read, require_oracle

#: these tests render the talos-reconcile Job, the chart's own text: the mirror's chart is given
pytestmark = pytest.mark.usefixtures("chart_text")

require_oracle()

EXAMPLES = int(os.environ.get("TALOS_JOB_ORACLE_EXAMPLES", "30"))
JOB_KINDS = ("ServiceAccount", "Role", "CiliumNetworkPolicy", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "Job")


def _input(values: dict[str, Any], release: str, namespace: str, platform: dict[str, Any] | None) -> ChartInput:
    return chart_input(values, namespace=namespace, release=release, cluster_values=platform)


@functools.lru_cache(maxsize=256)
def _render(request: str) -> OracleResult:
    """One oracle render per distinct request (the table tests share their base pools)."""
    args = json.loads(request)
    return get_oracle().render(args.pop("values"), talos_config_template=True, **args)


def _request(values: dict[str, Any], release: str, namespace: str, platform: Any, chart: str) -> str:
    request = {"values": values, "release": release, "namespace": namespace, "cluster_values": platform, "chart": chart}
    return json.dumps(request, sort_keys=True)


def _renders(values: dict[str, Any]) -> bool:
    return _render(_request(values, "kubernetes-nodes-example-md1", "tenant-example", None, "main")).ok


def _oracle(
    values: dict[str, Any],
    release: str = "kubernetes-nodes-example-md1",
    namespace: str = "tenant-example",
    platform: dict[str, Any] | None = None,
    chart: str = "main",
) -> OracleResult:
    result = _render(_request(values, release, namespace, platform, chart))
    assert result.ok, f"the oracle refused: {result.error}; values={values!r}"
    return result


def _job_documents(result: OracleResult) -> list[dict[str, Any]]:
    """The oracle's documents of talos-reconcile-job.yaml, in the chart's order."""
    # The Job's name is cut to 56 characters before its hash, so it may not carry the suffix.
    return [
        o
        for o in result.objects
        if o.get("kind") == "Job" or (o.get("kind") in JOB_KINDS and "-talos-reconcile" in o["metadata"]["name"])
    ]


def _job_text(result: OracleResult) -> str:
    """The Job document's text from ``spec:`` on: what the chart hashes."""
    (text,) = [t for t, o in zip(result.texts, result.objects, strict=True) if o.get("kind") == "Job"]
    return text[text.index("\nspec:\n") + 1 :]


def _data(template: dict[str, Any]) -> str:
    data = template["spec"]["template"]["spec"]["data"]
    assert isinstance(data, str)
    return data


def _compare(
    values: dict[str, Any],
    release: str = "kubernetes-nodes-example-md1",
    namespace: str = "tenant-example",
    platform: dict[str, Any] | None = None,
) -> list[str]:
    """Differences between our render and the oracle's, as field paths (empty when equal)."""
    result = _oracle(values, release, namespace, platform)
    inp = _input(values, release, namespace, platform)
    size = sizing(inp)
    problems = [f"docs{p}" for p in diff_paths(render_talos_job(inp, sizing=size), _job_documents(result))]
    problems += [
        f"tct.{p}" for p in diff_paths(talos_config_template(inp, sizing=size), result.one("TalosConfigTemplate"))
    ]
    ours_text = job_spec_text(job_context(inp, sizing=size), inp.chart)
    if ours_text != _job_text(result):
        problems.append("job spec text differs from the chart's")
    return problems


# ----------------------------------------------------------------------------- the property test

_label = st.text(string.ascii_lowercase + string.digits, min_size=1, max_size=6)
_HOSTS = st.builds(
    lambda name, digits, tld, port: f"{name}{digits}.{tld}{port}",
    st.text(string.ascii_lowercase, min_size=1, max_size=8),
    st.sampled_from(["", "1", "2", "10"]),
    st.sampled_from(["io", "com", "local", "example.org"]),
    st.sampled_from(["", ":5000", ":443"]),
)
_ENDPOINTS = st.lists(
    st.builds(
        lambda scheme, host, path: f"{scheme}://{host}{path}",
        st.sampled_from(["http", "https"]),
        _HOSTS,
        st.sampled_from(["", "/v2", "/mirror/ghcr.io"]),
    ),
    min_size=1,
    max_size=3,
)
_MIRROR = st.fixed_dictionaries(
    {"endpoints": _ENDPOINTS},
    optional={"skipFallback": st.booleans(), "overridePath": st.booleans()},
)
_SCHEMATICS = st.one_of(
    st.text("0123456789abcdef", min_size=64, max_size=64),
    st.sampled_from(["gpu/nvidia-open", "talos-gpu", "odd$x`y\\z"]),
)
_SIZING = st.one_of(
    st.fixed_dictionaries(
        {"instanceType": st.sampled_from(["u1.medium", "u1.large", "u1.xlarge", "cx1.large", "n1.large"])}
    ),
    st.fixed_dictionaries(
        {
            "instanceType": st.sampled_from(["", "u1.medium"]),
            "resources": st.fixed_dictionaries(
                {
                    "cpu": st.sampled_from([2, 4, "2", "1500m", "3.5"]),
                    "memory": st.sampled_from(["4Gi", "8Gi", "6144Mi", 8589934592]),
                }
            ),
        }
    ),
)
_KUBELET = st.fixed_dictionaries(
    {},
    optional={
        "systemReservedMemory": st.sampled_from(["128Mi", "300Mi", "512Mi", "1e8"]),
        "kubeReservedMemory": st.sampled_from(["128Mi", "256Mi", "400M"]),
        "systemReservedCpu": st.sampled_from(["100m", "0.1", "200m"]),
        "kubeReservedCpu": st.sampled_from(["50m", "0.2", "100m"]),
    },
)
_EVICTIONS = st.sampled_from(
    [
        {},
        {"evictionHardMemory": "5%"},
        {"evictionSoftMemory": "15%"},
        {"evictionHardMemory": "100Mi", "evictionSoftMemory": "200Mi"},
    ]
)


@st.composite
def talos_pools(draw: st.DrawFn) -> tuple[dict[str, Any], str, str, dict[str, Any] | None]:
    """(pool values, release, namespace, platform values) for a valid classless pool."""
    cluster = draw(st.builds(lambda a, b: a + b, st.sampled_from(string.ascii_lowercase), _label))
    pool = draw(
        st.builds(
            lambda a, b: a + b,
            st.sampled_from(string.ascii_lowercase),
            st.text(string.ascii_lowercase + string.digits + "-", max_size=24),
        )
    )
    pool = pool.rstrip("-")[: 35 - len(cluster)].rstrip("-") or "p"
    namespace = draw(st.sampled_from(["tenant-root", "tenant-a", "tenant-example", "tenant-a-b-c"]))
    values: dict[str, Any] = {"cluster": cluster, **draw(_SIZING)}
    kubelet = {**draw(_KUBELET), **draw(_EVICTIONS)}
    if kubelet:
        values["kubelet"] = kubelet
    if draw(st.booleans()):
        values["gpus"] = [{"name": "nvidia.com/AD102GL_L40S"}]
    if draw(st.booleans()):
        values["version"] = draw(st.sampled_from(["v1.35", "v1.34", "v1.33", "v1.32", "v1.31"]))
    if draw(st.booleans()):
        values["images"] = {
            "kubectl": draw(st.sampled_from(["", "registry.local/kubectl:1.33", "k8s@sha256:" + "a" * 64]))
        }
    talos: dict[str, Any] = {}
    if draw(st.booleans()):
        talos["version"] = draw(st.sampled_from(["v1.13.6", "v1.13.0", "v1.12.4"]))
    if draw(st.booleans()):
        talos["schematicID"] = draw(_SCHEMATICS)
    if draw(st.booleans()):
        talos["installerRepository"] = draw(
            st.sampled_from(["registry.local:5000/talos/installer", "mirror.io/inst/", "x$y/z"])
        )
    if draw(st.booleans()):
        talos["registryMirrors"] = draw(st.dictionaries(_HOSTS, _MIRROR, max_size=3))
    if talos:
        values["talos"] = talos
    domain = draw(st.sampled_from([None, "cozy.local", "cluster.local", "mgmt.example.org", "", "odd$x.local"]))
    platform = None if domain is None else {"_cluster": {"cluster-domain": domain} if domain else {}}
    return values, f"kubernetes-nodes-{cluster}-{pool}", namespace, platform


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(talos_pools())
def test_job_documents_and_template_match_the_oracle(case: tuple[dict[str, Any], str, str, Any]) -> None:
    values, release, namespace, platform = case
    problems = _compare(values, release, namespace, platform)
    assert not problems, "\n".join(problems[:20]) + f"\nvalues={values!r} release={release} ns={namespace} {platform!r}"


# ----------------------------------------------------------------------------- the Job name hash


def _name(values: dict[str, Any], platform: dict[str, Any] | None = None) -> tuple[str, str]:
    """(our Job name, the oracle's) for a pool of cluster example, pool md1."""
    release = "kubernetes-nodes-example-md1"
    inp = _input(values, release, "tenant-example", platform)
    ours = render_talos_job(inp, sizing=sizing(inp))[-1]["metadata"]["name"]
    return ours, _oracle(values, release, "tenant-example", platform).one("Job")["metadata"]["name"]


BASE: dict[str, Any] = {"cluster": "example"}
TEXT_CHANGES = {
    "talos-version": {"talos": {"version": "v1.13.0"}},
    "schematic": {"talos": {"schematicID": "abc"}},
    "installer-repository": {"talos": {"installerRepository": "mirror.local/installer"}},
    "registry-mirror": {"talos": {"registryMirrors": {"ghcr.io": {"endpoints": ["https://m.local"]}}}},
    "skip-fallback": {
        "talos": {"registryMirrors": {"ghcr.io": {"endpoints": ["https://m.local"], "skipFallback": True}}}
    },
    "kubectl-image": {"images": {"kubectl": "registry.local/kubectl:1"}},
    "kubelet-reservation": {"kubelet": {"systemReservedMemory": "300Mi"}},
    "eviction": {"kubelet": {"evictionHardMemory": "5%"}},
    "gpus": {"gpus": [{"name": "nvidia.com/AD102GL_L40S"}]},
    "kubernetes-version": {"version": "v1.33"},
    "instance-type": {"instanceType": "u1.2xlarge"},
    "resources": {"resources": {"cpu": 4, "memory": "16Gi"}},
}
SAME_TEXT = {
    "replicas": {"minReplicas": 1, "maxReplicas": 3},
    "disk": {"diskSize": "50Gi", "storageClass": "local"},
    "health": {"maxUnhealthy": "0%", "nodeStartupTimeout": "1h"},
    "image-factory": {"talos": {"imageFactoryURL": "https://f.local"}},
    "roles": {"roles": ["ingress-nginx"]},
    "same-reservations-instance-type": {"instanceType": "u1.small"},  # 1 core, 2Gi: the same clamped reservations
}


@pytest.mark.parametrize("change", list(TEXT_CHANGES.values()), ids=list(TEXT_CHANGES))
def test_job_name_moves_when_the_spec_text_does(change: dict[str, Any]) -> None:
    base_ours, base_oracle = _name(BASE)
    ours, oracle = _name({**BASE, **change})
    assert (base_ours, ours) == (base_oracle, oracle)
    assert ours != base_ours


@pytest.mark.parametrize("change", list(SAME_TEXT.values()), ids=list(SAME_TEXT))
def test_job_name_stays_when_the_spec_text_does(change: dict[str, Any]) -> None:
    base_ours, base_oracle = _name(BASE)
    ours, oracle = _name({**BASE, **change})
    assert (base_ours, ours) == (base_oracle, oracle)
    assert ours == base_ours


def test_management_domain_moves_the_name() -> None:
    cozy = _name(BASE, {"_cluster": {"cluster-domain": "cozy.local"}})
    local = _name(BASE, {"_cluster": {"cluster-domain": "cluster.local"}})
    default = _name(BASE, {"_cluster": {}})
    assert cozy[0] == cozy[1] and local[0] == local[1] and default[0] == default[1]
    assert cozy[0] != local[0]
    assert default[0] == cozy[0]  # no cluster-domain falls back to cozy.local


def test_job_name_is_the_truncated_base_and_the_text_hash() -> None:
    inp = _input(BASE, "kubernetes-nodes-example-md1", "tenant-example", None)
    text = job_spec_text(job_context(inp, sizing=sizing(inp)), inp.chart)
    digest = hashlib.sha256(text.encode()).hexdigest()[:6]
    assert render_talos_job(inp, sizing=sizing(inp))[-1]["metadata"]["name"] == (
        f"kubernetes-nodes-example-md1-talos-reconcile-md1-{digest}"
    )


@pytest.mark.parametrize(
    ("cluster", "pool"),
    [("example", "a" * 29), ("c", "p" * 34), ("ab", "pool-" + "x" * 20), ("example", "abcdefghijklmnop-q")],
    ids=["cut-mid-name", "longest", "cut-at-dash", "short"],
)
def test_long_names_are_cut_to_56_as_the_chart_cuts(cluster: str, pool: str) -> None:
    release = f"kubernetes-nodes-{cluster}-{pool}"
    values = {"cluster": cluster}
    ours = render_talos_job(inp := _input(values, release, "tenant-example", None), sizing=sizing(inp))[-1]
    oracle = _oracle(values, release).one("Job")
    assert ours["metadata"]["name"] == oracle["metadata"]["name"]
    assert len(ours["metadata"]["name"].rsplit("-", 1)[0]) <= 56
    assert job_name(release, pool, "x").startswith(f"{release}-talos-reconcile-{pool}"[:56].removesuffix("-") + "-")


# ----------------------------------------------------------------------------- kernel modules (PR 3571)


def _kernel_section(data: str) -> str:
    """The ``machine.kernel`` block of a worker machine config (empty when there is none)."""
    match = re.search(r"^  kernel:\n(?:    .*\n?)*", data, re.M)
    return match.group(0).rstrip("\n") if match else ""


#: pool values -> whether PR 3571 emits a kernel block for them.
KERNEL_CASES: dict[str, tuple[dict[str, Any], bool]] = {
    "unset-no-gpu": ({}, False),
    "unset-nvidia-gpu": ({"gpus": [{"name": "nvidia.com/AD102GL_L40S"}]}, True),
    "unset-other-gpu": ({"gpus": [{"name": "amd.com/mi300"}]}, False),
    "opt-out-on-gpu": ({"gpus": [{"name": "nvidia.com/AD102GL_L40S"}], "kernelModules": []}, False),
    "explicit": (
        {"kernelModules": [{"name": "br_netfilter"}, {"name": "zfs", "parameters": ["zfs_arc_max=1073741824"]}]},
        True,
    ),
    "explicit-replaces-nvidia": ({"gpus": [{"name": "nvidia.com/x"}], "kernelModules": [{"name": "nvidia_uvm"}]}, True),
    "parameters-go-yaml-quotes": (
        {"kernelModules": [{"name": "m", "parameters": ["1", "true", "yes", "0x10", "a;b=c", "k=v:w", "2001-01-01"]}]},
        True,
    ),
    "empty-parameters": ({"kernelModules": [{"name": "m", "parameters": []}]}, True),
}


@pytest.mark.parametrize(("values", "has_block"), list(KERNEL_CASES.values()), ids=list(KERNEL_CASES))
def test_kernel_modules_render_as_pr3571_renders_them(values: dict[str, Any], has_block: bool) -> None:
    pool = {"cluster": "example", **values}
    oracle = _oracle(pool, chart="pr3571").one("TalosConfigTemplate")
    main_values = {k: v for k, v in pool.items() if k != "kernelModules"}
    inp = _input(main_values, "kubernetes-nodes-example-md1", "tenant-example", None)
    ours = talos_config_template(inp, sizing=sizing(inp), kernel_modules=pr3571_kernel_modules(pool))
    assert _kernel_section(_data(ours)) == _kernel_section(_data(oracle))
    assert bool(_kernel_section(_data(ours))) is has_block


@pytest.mark.parametrize(
    "modules",
    [
        [{"name": "bad$(id)"}],
        [{"name": "Upper"}],
        [{"name": "m", "parameters": ["a b"]}],
        [{"name": "m", "parameters": ["x=`id`"]}],
    ],
    ids=["name-substitution", "name-case", "parameter-space", "parameter-backtick"],
)
def test_unsafe_kernel_modules_are_refused_with_the_chart_message(modules: list[dict[str, Any]]) -> None:
    pool = {"cluster": "example", "kernelModules": modules}
    result = get_oracle().render(
        pool, release="kubernetes-nodes-example-md1", namespace="tenant-example", chart="pr3571"
    )
    assert not result.ok
    inp = _input({"cluster": "example"}, "kubernetes-nodes-example-md1", "tenant-example", None)
    with pytest.raises(InvalidKernelModule) as raised:
        render_talos_job(inp, sizing=sizing(inp), kernel_modules=modules)
    assert str(raised.value) == result.error


_MODULES = st.lists(
    st.fixed_dictionaries(
        {"name": st.text(string.ascii_lowercase + string.digits + "_-", min_size=1, max_size=12)},
        optional={
            "parameters": st.lists(
                st.text(string.ascii_letters + string.digits + "=;,:./-_+~#%@!?*&", min_size=1, max_size=16), max_size=3
            )
        },
    ),
    min_size=1,
    max_size=4,
)


@settings(
    max_examples=max(EXAMPLES // 2, 5), deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)
@given(_MODULES)
def test_any_valid_kernel_modules_render_as_pr3571_renders_them(modules: list[dict[str, Any]]) -> None:
    pool = {"cluster": "example", "kernelModules": modules}
    oracle = _oracle(pool, chart="pr3571").one("TalosConfigTemplate")
    inp = _input({"cluster": "example"}, "kubernetes-nodes-example-md1", "tenant-example", None)
    ours = talos_config_template(inp, sizing=sizing(inp), kernel_modules=modules)
    assert _kernel_section(_data(ours)) == _kernel_section(_data(oracle)) != ""


def test_a_pool_schematic_installer_is_pr3571s_install_image() -> None:
    """PR 3571's per-pool schematicID reaches the installer through ``installer_image``."""
    pool = {"cluster": "example", "schematicID": "gpu/nvidia-open", "talos": {"installerRepository": "mirror.local/i/"}}
    oracle = _data(_oracle(pool, chart="pr3571").one("TalosConfigTemplate"))
    inp = _input(
        {k: v for k, v in pool.items() if k != "schematicID"}, "kubernetes-nodes-example-md1", "tenant-example", None
    )
    ours = _data(
        talos_config_template(inp, sizing=sizing(inp), installer_image="mirror.local/i/gpu/nvidia-open:v1.13.6")
    )
    (expected,) = re.findall(r"^  install:\n(?:    .*\n)*", oracle, re.M)
    assert expected in ours
    assert "image: mirror.local/i/gpu/nvidia-open:v1.13.6" in expected


def test_no_kernel_modules_is_exactly_the_main_chart() -> None:
    assert not _compare({"cluster": "example", "gpus": [{"name": "nvidia.com/AD102GL_L40S"}]})
    inp = _input({"cluster": "example"}, "kubernetes-nodes-example-md1", "tenant-example", None)
    assert render_talos_job(inp, sizing=sizing(inp), kernel_modules=[]) == render_talos_job(inp, sizing=sizing(inp))


# ----------------------------------------------------------------------------- installer image (PR 3294)

INSTALLER = "registry.local:5000/talos/installer-custom@sha256:" + "b" * 64


def test_installer_image_replaces_the_factory_installer_only() -> None:
    pool = {"cluster": "example", "talos": {"schematicID": "abc", "installerRepository": "mirror.local/inst"}}
    oracle = _oracle(pool).one("TalosConfigTemplate")
    inp = _input(pool, "kubernetes-nodes-example-md1", "tenant-example", None)
    ours = talos_config_template(inp, sizing=sizing(inp), installer_image=INSTALLER)
    expected = _data(oracle).replace("image: mirror.local/inst/abc:v1.13.6", f"image: {INSTALLER}")
    assert expected != _data(oracle)
    assert _data(ours) == expected
    assert {**ours, "spec": None} == {**oracle, "spec": None}
    job = render_talos_job(inp, sizing=sizing(inp), installer_image=INSTALLER)[-1]
    assert job["metadata"]["name"] != _oracle(pool).one("Job")["metadata"]["name"]  # a new Job re-applies it


@pytest.mark.parametrize("image", ["reg/x:$(id)", "reg/x:`id`", "reg/x y", 'reg/"x"', "reg\\x", ""])
def test_unsafe_installer_images_are_refused(image: str) -> None:
    inp = _input({"cluster": "example"}, "kubernetes-nodes-example-md1", "tenant-example", None)
    with pytest.raises(InvalidInstallerImage):
        render_talos_job(inp, sizing=sizing(inp), installer_image=image)


# ----------------------------------------------------------------------------- toYaml through the chart

TO_YAML_CASES: dict[str, Any] = {
    "quoting": {
        "r.io": {"endpoints": ["", "yes", "1", "1.5", "0x1F", "08", "~", "null", "a: b", "#x", "- x", "it's", "x #y"]}
    },
    "escapes": {
        "r.io": {"endpoints": ["tab\there", '"q"', "back\\slash", "dollar$x", "`tick`", "ü", " lead", "trail "]}
    },
    "literal-blocks": {"r.io": {"endpoints": ["a\nb", "a\nb\n", "a\n\nb\n\n", " a\nb"]}},
    "numbers-and-nesting": {
        "r.io": {"n": 5, "f": 1.5, "big": 1000000, "tiny": 1e-7, "x": None, "t": {"a": [{"b": 1}, [], {}]}}
    },
    "folding": {"r.io": {"endpoints": ["x" * 90 + " y", "word " * 20, "say " * 15 + '"quoted"', "w " * 39 + "  v"]}},
    "folding-quoted": {"r.io": {"endpoints": ["w " * 39 + "  v ", "\t" + "w " * 39 + "  v", "a'b " * 30 + "'"]}},
    "key-order": {
        k: {"endpoints": ["x"]} for k in ["reg10.io", "reg9.io", "reg1.io", "Reg.io", "-r.io", "_r.io", "a.io"]
    },
    "long-key": {"r" * 130 + ".io": {"endpoints": ["x"]}},
}


@pytest.mark.parametrize("mirrors", list(TO_YAML_CASES.values()), ids=list(TO_YAML_CASES))
def test_registry_mirrors_go_through_toyaml_as_helm_writes_them(mirrors: Any) -> None:
    assert not _compare({"cluster": "example", "talos": {"registryMirrors": mirrors}})


def test_to_yaml_of_nothing_readable_is_empty_and_the_block_stays() -> None:
    assert to_yaml({"r.io": {"endpoints": ["\x7f"]}}) == ""
    assert not _compare({"cluster": "example", "talos": {"registryMirrors": {"r.io": {"endpoints": ["\x7f"]}}}})


_SHORT_TEXT = st.text(
    st.one_of(
        st.sampled_from(" \n\t:#-?'\"\\$`{}[],&*!|>%@~"),
        st.characters(codec="ascii", categories=["L", "N", "P", "S"]),
        st.sampled_from("éü中😀"),
    ),
    max_size=40,
)
#: Long texts of words and runs of spaces: go-yaml folds scalars past column 80.
_LONG_TEXT = st.lists(
    st.tuples(st.text(st.sampled_from("ab'\"#:\t-"), min_size=1, max_size=8), st.sampled_from([" ", "  ", "   "])),
    min_size=10,
    max_size=30,
).map(lambda words: "".join(w + sep for w, sep in words).rstrip(" ") + (" " if len(words) % 3 == 0 else ""))
_TEXT = st.one_of(_SHORT_TEXT, _LONG_TEXT)
#: No digits in keys: go-yaml's key order compares digit runs by value and letters after other
#: runes, which is not transitive (``a1b < a9 < a10 < a1b``), so Go's own order for such key sets
#: depends on its map iteration; any consistent order of digit-free keys is the one Helm prints.
_KEYS = st.text(st.sampled_from(string.ascii_letters + " :-_.#'\"/é"), max_size=12)
_JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**12), 10**12),
        st.floats(allow_nan=False, allow_infinity=False),
        _TEXT,
    ),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(_KEYS, children, max_size=3)),
    max_leaves=8,
)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
# A null straight under registryMirrors is left out: Helm keeps it (coalesce deletes a user null only
# where the chart's defaults have that key), chart.values.coalesce drops it (reported to its owner).
@given(st.dictionaries(_KEYS, _JSON.filter(lambda v: v is not None), min_size=1, max_size=3))
def test_registry_mirrors_of_any_json_render_as_helm_writes_them(mirrors: dict[str, Any]) -> None:
    values = {"cluster": "example", "talos": {"registryMirrors": mirrors}}
    assume(_renders(values))  # a value the Job's YAML cannot carry fails the chart itself
    problems = _compare(values)
    assert not problems, "\n".join(problems[:20]) + f"\nmirrors={mirrors!r}"


def test_a_pool_file_renders_as_cozystack_derives_its_release(tmp_path: Path) -> None:
    """A KubernetesNodes file and a platform-values file, read as Kubernetes reads them, rendered as
    Cozystack's application API derives the release (``kubernetes-nodes-<name>`` in the pool's
    namespace, the spec verbatim as values over the platform's)."""
    pool = tmp_path / "pool.yaml"
    pool.write_text(
        "apiVersion: apps.cozystack.io/v1alpha1\nkind: KubernetesNodes\nmetadata:\n  name: example-gpu\n"
        "  namespace: tenant-example\nspec:\n  cluster: example\n  gpus:\n  - name: nvidia.com/AD102GL_L40S\n"
        "  talos:\n    registryMirrors:\n      ghcr.io:\n        endpoints: [https://m.local]\n"
        "        skipFallback: true\n"
    )
    platform = tmp_path / "platform.yaml"
    platform.write_text("_cluster:\n  cluster-domain: mgmt.example.org\n")
    (obj,) = oracle_read(pool.read_text())
    (platform_values,) = oracle_read(platform.read_text())
    printed = get_oracle().render(
        obj["spec"],
        release="kubernetes-nodes-" + obj["metadata"]["name"],
        namespace=obj["metadata"]["namespace"],
        cluster_values=platform_values,
        talos_config_template=True,
    )
    assert printed.ok, printed.error
    values = {
        "cluster": "example",
        "gpus": [{"name": "nvidia.com/AD102GL_L40S"}],
        "talos": {"registryMirrors": {"ghcr.io": {"endpoints": ["https://m.local"], "skipFallback": True}}},
    }
    inp = _input(
        values, "kubernetes-nodes-example-gpu", "tenant-example", {"_cluster": {"cluster-domain": "mgmt.example.org"}}
    )
    theirs = [o for o in printed.objects if o["kind"] in JOB_KINDS and "-talos-reconcile" in o["metadata"]["name"]]
    ours = render_talos_job(inp, sizing=sizing(inp))
    assert not diff_paths(ours, theirs)
    assert not diff_paths(talos_config_template(inp, sizing=sizing(inp)), heredoc_newline(printed.objects[-1]))


@pytest.mark.parametrize(
    "values",
    [
        {"instanceType": "zz.stale", "resources": {"cpu": 4, "memory": "16Gi"}},
        {"instanceType": "u1.nano", "resources": {"cpu": "1500m", "memory": "8Gi"}},
        {"instanceType": "", "resources": {"cpu": 2}},
        {"instanceType": "", "resources": {"memory": "8Gi"}},
        {"instanceType": ""},
    ],
    ids=["stale-type-beside-resources", "resources-win", "cpu-only", "memory-only", "no-size"],
)
def test_the_jobs_own_lookup_agrees_with_nodegroup_sizing(values: dict[str, Any]) -> None:
    """The Job looks the instance type up whenever one is named and tolerates a missing one;
    nodegroup.yaml skips it for a resource-sized pool. Wherever the chart renders, one Sizing serves both."""
    assert not _compare({"cluster": "example", **values})


@pytest.mark.parametrize(
    ("values", "extras"),
    [
        ({}, {}),
        (
            {"gpus": [{"name": "nvidia.com/AD102GL_L40S"}], "talos": {"registryMirrors": TO_YAML_CASES["quoting"]}},
            {"kernel_modules": list(NVIDIA_KERNEL_MODULES), "installer_image": INSTALLER},
        ),
    ],
    ids=["defaults", "gpu-mirrors-modules-installer"],
)
def test_rendered_objects_validate_against_the_shipped_crds(values: dict[str, Any], extras: dict[str, Any]) -> None:
    inp = _input({"cluster": "example", **values}, "kubernetes-nodes-example-md1", "tenant-example", None)
    objects = [
        *render_talos_job(inp, sizing=sizing(inp), **extras),
        talos_config_template(inp, sizing=sizing(inp), **extras),
    ]
    problems = {f"{o['kind']} {o['metadata']['name']}": validation_errors(o) for o in objects}
    assert not {k: v for k, v in problems.items() if v}


#: kubectl images the chart renders whose double-quoted scalar reads as something else than the
#: text written (YAML's escapes), or as itself only because it is plain
KUBECTL_IMAGES = {
    "tab-escape": "registry.example/kubectl\\tv1",
    "unicode-escape": "registry.example/kub\\u00e9ctl:v1",
    "escaped-backslash": "registry.example\\\\kubectl",
    "escaped-slash": "registry.example\\/kubectl:v1",
    "non-ascii": "registry.example/kübectl:v1",
    "single-quote": "registry.example/kube'ctl",
}


@pytest.mark.parametrize("image", KUBECTL_IMAGES.values(), ids=KUBECTL_IMAGES.keys())
def test_the_kubectl_image_is_read_as_its_double_quoted_scalar_reads(image: str) -> None:
    assert not _compare({"cluster": "example", "images": {"kubectl": image}})


def test_a_float_in_registry_mirrors_read_from_state_text_names_the_job_as_the_chart_does() -> None:
    """``1e20`` in a STATE file is a number for kubectl; toYaml writes it as Helm writes a float64."""
    from workerclass.adapters.folder import parse_documents

    text = (
        "apiVersion: apps.cozystack.io/v1alpha1\nkind: KubernetesNodes\n"
        "metadata: {name: example-md1, namespace: tenant-example}\n"
        "spec:\n  cluster: example\n  talos:\n    registryMirrors:\n"
        "      a.io: {endpoints: [https://m.example], x: 1e20, y: 1e2, z: 0x10}\n"
    )
    (document,) = parse_documents(text, "pool.yaml")
    (theirs,) = oracle_read(text)
    result = _oracle(theirs["spec"])  # the oracle reads the text itself, as kubectl would
    inp = _input(document.obj["spec"], "kubernetes-nodes-example-md1", "tenant-example", None)
    size = sizing(inp)
    assert not diff_paths(render_talos_job(inp, sizing=size), _job_documents(result))
    assert job_spec_text(job_context(inp, sizing=size), inp.chart) == _job_text(result)
