"""Shared test material for the chart port: the README's message -> code mapping, a hypothesis
strategy over the chart's value space, and helpers to build inputs and compare objects."""

from __future__ import annotations

import copy
import hashlib
import re
from typing import Any

import yaml
from hypothesis import strategies as st

from workerclass.chart import ChartInput, chart_input

NODEGROUP_KINDS = ("KubevirtMachineTemplate", "MachineDeployment", "MachineHealthCheck", "WorkloadMonitor")

# upstream-cozystack/README.md "Each failure's admission code", keyed on the message the oracle reports
# (the chart's ``fail`` text, or ``values schema: ...``); first match wins. The one map of the tests.
MESSAGE_CODES: tuple[tuple[re.Pattern[str], str], ...] = (
    # A values-schema violation is Invalid whatever field it names (a null podCpuLimit is not one of
    # InvalidPodCPU's rules), but for the version enum, which is UnsupportedVersion.
    (re.compile(r"^values schema.*at '/version'", re.S), "UnsupportedVersion"),
    (re.compile(r"^values schema"), "Invalid"),
    (re.compile(r"\.Values\.cluster is required"), "Invalid"),
    (re.compile(r"release name .* must start with"), "InvalidPoolName"),
    (re.compile(r"already managed by release"), "InvalidPoolName"),
    (re.compile(r"is not a valid tenant identifier"), "InvalidPoolName"),
    (re.compile(r"must be a whole number of s, m or h"), "InvalidDuration"),
    (re.compile(r"Kubernetes version .* is not supported, allowed versions"), "UnsupportedVersion"),
    (re.compile(r"is not supported by Talos"), "TalosKubernetesIncompatible"),
    (re.compile(r"set both resources\.cpu and resources\.memory"), "IncompleteResources"),
    (re.compile(r"podCpu(Limit|Request)"), "InvalidPodCPU"),
    (re.compile(r"specified instanceType .* not found"), "InstanceTypeNotFound"),
    (re.compile(r"maxUnhealthy must be"), "InvalidMaxUnhealthy"),
    (re.compile(r"invalid kernelModules"), "InvalidKernelModule"),
    (re.compile(r"invalid schematicID"), "Invalid"),
    (
        re.compile(
            r"Reserved(Cpu|Memory)|eviction(Hard|Soft)Memory|total reserved|kubelet memory reservations"
            r"|kubelet CPU reservations|must be a positive value"
        ),
        "InvalidKubeletReservation",
    ),
    # Not in the README's table: a template reading a value a null removed, and a value that breaks
    # the rendered YAML. The contract gives any other malformed value Invalid.
    (re.compile(r"nil pointer evaluating|wrong type for value|^YAML parse error"), "Invalid"),
)


def code_of_message(message: str) -> str:
    """The admission code the README maps the oracle's failure message to ("Unknown" if none)."""
    for pattern, code in MESSAGE_CODES:
        if pattern.search(message):
            return code
    return "Unknown"


INSTANCETYPES = ["u1.nano", "u1.micro", "u1.small", "u1.medium", "u1.large", "u1.2xlarge", "gn1.xlarge", "cx1.medium"]
CPUS: list[Any] = [1, 2, 4, "100m", "500m", "2", "1.5", "16", "250m", "3"]
MEMORIES: list[Any] = ["512Mi", "1Gi", "4Gi", "8Gi", "64Gi", "1.5Gi", 4294967296, "100M", "2G", "1Ti", "600Mi"]
POD_CPUS: list[Any] = ["0", 0, "1", 1, "3", "1500m", "-1", "2.5", "500m", 2, "0.5", "-100m", "4", 3, "2"]
KUBELET_MEMORY = ["256Mi", "1Gi", "0", "1.5Gi", "1GB", "500e6", "2048Mi", "1e9", "0Mi", "128Mi", "3Gi"]
KUBELET_CPU = ["100m", "0.5", "1", "1.5m", "0", "2", "0m", "250m", "50m", "4"]
EVICTION_HARD = ["7%", "5%", "12%", "0%", "150%", "x%", "500Mi", "100Mi", "500MB", "1Gi", "10.5%", "99%"]
EVICTION_SOFT = ["10%", "15%", "5%", "1Gi", "2Gi", "200Mi", "abc", "100%", "11%"]
MAX_UNHEALTHY = ["50%", "0", "1", "0%", "12.5%", "", "100%", "x", "3"]
DURATIONS = ["30m", "1h30m", "20m0s", "30", "0s", "-5m", "30min", "9999999h", "5m", "10m", "1h0m0s", "100000s"]
CONSTRAINTS = [
    "topologySpreadConstraints:\n- maxSkew: 1\n  topologyKey: topology.kubernetes.io/zone\n"
    "  whenUnsatisfiable: ScheduleAnyway\n",
    "topologySpreadConstraints:\n- maxSkew: 2\n  topologyKey: kubernetes.io/hostname\n"
    "  whenUnsatisfiable: DoNotSchedule\n  nodeTaintsPolicy: Honor\n",
]


def _optional(strategy: st.SearchStrategy[Any], absent: int = 1) -> st.SearchStrategy[Any]:
    """``strategy`` or absent; ``absent`` is the weight of absence (out of ``absent + 1``)."""
    return st.integers(0, absent).flatmap(lambda i: st.just(_ABSENT) if i else strategy)


_ABSENT = object()


@st.composite
def pools(draw: st.DrawFn) -> tuple[dict[str, Any], str, str, dict[str, Any] | None]:
    """(pool values, release, namespace, platform values) over the chart's value space."""
    values: dict[str, Any] = {}

    def put(key: str, strategy: st.SearchStrategy[Any], target: dict[str, Any] | None = None, absent: int = 1) -> None:
        v = draw(_optional(strategy, absent))
        if v is not _ABSENT:
            (values if target is None else target)[key] = v

    cluster = draw(st.sampled_from(["example"] * 14 + ["demo", "demo", "demo", ""]))
    if cluster or draw(st.booleans()):
        values["cluster"] = cluster
    pool = draw(st.sampled_from(["md1", "gpu", "a-b"]))
    release = draw(
        st.sampled_from([f"kubernetes-nodes-{cluster}-{pool}"] * 20 + ["kubernetes-nodes-other-md1", "example-legacy"])
    )
    namespace = draw(st.sampled_from(["tenant-x"] * 20 + ["tenant-root", "default"]))
    sizing_mode = draw(
        st.sampled_from(["instancetype"] * 3 + ["resources"] * 2 + ["resources-only"] * 3 + ["half", "none"])
    )
    if sizing_mode == "instancetype":
        put("instanceType", st.sampled_from([*INSTANCETYPES, "zz.huge"]))
    elif sizing_mode in ("resources", "resources-only"):
        values["resources"] = {"cpu": draw(st.sampled_from(CPUS)), "memory": draw(st.sampled_from(MEMORIES))}
        if sizing_mode == "resources-only":
            values["instanceType"] = ""
        else:
            put("instanceType", st.sampled_from(INSTANCETYPES))
    elif sizing_mode == "half":
        key = draw(st.sampled_from(["cpu", "memory"]))
        values["resources"] = {key: draw(st.sampled_from(CPUS if key == "cpu" else MEMORIES))}
        put("instanceType", st.sampled_from(["", "u1.medium", "u1.large"]))
    else:
        values["instanceType"] = ""
    rare = 2 if sizing_mode.startswith("resources") else 10
    put("podCpuLimit", st.sampled_from(POD_CPUS), absent=rare)
    put("podCpuRequest", st.sampled_from(POD_CPUS), absent=rare)
    put("gpus", st.sampled_from([[], [{"name": "nvidia.com/AD102GL_L40S"}], [{"name": "a/x"}, {"name": "b/y"}]]))
    kubelet: dict[str, Any] = {}
    for key in ("systemReservedMemory", "kubeReservedMemory"):
        if draw(st.integers(0, 7)) == 0:
            kubelet[key] = draw(st.sampled_from(KUBELET_MEMORY))
    for key in ("systemReservedCpu", "kubeReservedCpu"):
        if draw(st.integers(0, 7)) == 0:
            kubelet[key] = draw(st.sampled_from(KUBELET_CPU))
    if draw(st.integers(0, 5)) == 0:
        kubelet["evictionHardMemory"] = draw(st.sampled_from(EVICTION_HARD))
    if draw(st.integers(0, 5)) == 0:
        kubelet["evictionSoftMemory"] = draw(st.sampled_from(EVICTION_SOFT))
    keep_empty: bool = draw(st.booleans())
    if kubelet or keep_empty:
        values["kubelet"] = kubelet
    put("logSerialConsole", st.booleans())
    put("roles", st.sampled_from([[], ["ingress-nginx"], ["a", "b"]]))
    put("maxUnhealthy", st.sampled_from(MAX_UNHEALTHY), absent=3)
    for key in ("maxNodeProvisionTime", "readyUnknownTimeout", "readyFalseTimeout"):
        if draw(st.integers(0, 5)) == 0:
            values[key] = draw(st.sampled_from(DURATIONS))
    put("nodeStartupTimeout", st.sampled_from(["20m", "10", "", "1h"]))
    put("minReplicas", st.sampled_from([0, 1, 3]))
    put("maxReplicas", st.sampled_from([1, 10, 1000000, 123456]))
    put("storageClass", st.sampled_from(["replicated", "", "local"]))
    put("diskSize", st.sampled_from(["20Gi", "50Gi", "1Ti", "30G"]))
    put("version", st.sampled_from(["v1.35", "v1.34", "v1.33", "v1.32", "v1.31"]))
    talos: dict[str, Any] = {}
    put("version", st.sampled_from(["v1.13.6", "v1.12.0", "v1.13.0"]), talos)
    put(
        "schematicID",
        st.sampled_from(["abc123", "613e1592b2da41ae5e265e8789429f22e121aab91cb4deb6bc3c0b6262961245"]),
        talos,
    )
    put("imageFactoryURL", st.sampled_from(["https://factory.talos.dev", "https://f.local/", "http://x//"]), talos)
    put("registryMirrors", st.sampled_from([{}, {"ghcr.io": {"endpoints": ["https://m.local"]}}]), talos)
    if talos:
        values["talos"] = talos
    platform: dict[str, Any] | None = None
    if draw(st.integers(0, 2)) == 0:
        cl: dict[str, Any] = {"cluster-domain": "cozy.local"}
        if draw(st.booleans()):
            cl["scheduling"] = {"globalAppTopologySpreadConstraints": draw(st.sampled_from(CONSTRAINTS))}
        ratio = draw(_optional(st.sampled_from(["8", 10, "40", "3"])))
        if ratio is not _ABSENT:
            cl["ephemeral-storage-allocation-ratio"] = ratio
        platform = {"_cluster": cl}
    return values, release, namespace, platform


def make_input(
    values: dict[str, Any], release: str, namespace: str, platform: dict[str, Any] | None = None
) -> ChartInput:
    return chart_input(values, namespace=namespace, release=release, cluster_values=platform)


def pool_release(pool: str = "md1", cluster: str = "example") -> str:
    return f"kubernetes-nodes-{cluster}-{pool}"


# Free-form strings for the second property test: any quantity the schema's pattern admits, and
# duration / percentage / reservation shapes near the chart's rules.
QUANTITY = st.from_regex(
    r"\A[+-]?([0-9]{1,4}(\.[0-9]{0,2})?|\.[0-9]{1,2})(Ki|Mi|Gi|Ti|[numkMGTPE]|[eE][+-]?[0-9]{1,2})?\Z", fullmatch=True
)
POSITIVE_QUANTITY = st.from_regex(r"\A([1-9][0-9]{0,3}(\.[0-9]{1,2})?)(Ki|Mi|Gi|m|k|M|G|e[0-9])?\Z", fullmatch=True)
DURATION_ISH = st.from_regex(r"\A-?[0-9]{1,7}(\.[0-9])?(s|m|h|ms|min|ns|)([0-9]{1,6}[smhd]){0,3}\Z", fullmatch=True)
PERCENT_ISH = st.from_regex(r"\A[0-9]{0,3}(\.[0-9]{1,2})?%?\Z", fullmatch=True)
RESERVATION_ISH = st.one_of(
    st.from_regex(r"\A[0-9]{1,4}(\.[0-9]{1,2})?([eE][+-]?[0-9])?(Ki|Mi|Gi|m|k|M|G|GB|%|)\Z", fullmatch=True),
    st.sampled_from(["x%", "abc", "1.5.5", " 1Gi", "1Gi\n"]),
)


@st.composite
def free_pools(draw: st.DrawFn) -> tuple[dict[str, Any], str, str, dict[str, Any] | None]:
    """Pools with free-form strings in the fields the chart checks (names kept valid)."""
    values: dict[str, Any] = {"cluster": "example"}
    mode = draw(st.sampled_from(["instancetype", "resources", "resources-only"]))
    if mode == "instancetype":
        values["instanceType"] = draw(st.sampled_from(INSTANCETYPES))
    else:
        values["resources"] = {
            "cpu": draw(st.one_of(st.integers(1, 64), st.sampled_from(["2", "1500m", "0.5", "4"]), POSITIVE_QUANTITY)),
            "memory": draw(
                st.one_of(
                    st.sampled_from(["4Gi", "8Gi", "16Gi", "64Gi", "3.5Gi", "6000M", "1.5Ti", "2e10", "3e+09"]),
                    st.integers(2**31, 2**40),
                    st.integers(2**31, 2**40).map(str),
                    QUANTITY,
                )
            ),
        }
        if mode == "resources-only":
            values["instanceType"] = ""
    for key in ("podCpuLimit", "podCpuRequest"):
        if mode != "instancetype" and draw(st.integers(0, 2)) == 0:
            values[key] = draw(st.one_of(st.integers(-2, 8), QUANTITY))
    kubelet = {}
    for key in (
        "systemReservedMemory",
        "kubeReservedMemory",
        "systemReservedCpu",
        "kubeReservedCpu",
        "evictionHardMemory",
        "evictionSoftMemory",
    ):
        if draw(st.integers(0, 12)) == 0:
            kubelet[key] = draw(RESERVATION_ISH)
    if kubelet:
        values["kubelet"] = kubelet
    for key in ("maxNodeProvisionTime", "readyUnknownTimeout", "readyFalseTimeout"):
        if draw(st.integers(0, 6)) == 0:
            values[key] = draw(DURATION_ISH)
    if draw(st.integers(0, 4)) == 0:
        values["maxUnhealthy"] = draw(PERCENT_ISH)
    if draw(st.booleans()):
        values["maxReplicas"] = draw(st.integers(0, 10**7))
    if draw(st.booleans()):
        values["diskSize"] = draw(QUANTITY)
    return values, pool_release(), "tenant-x", None


# ------------------------------------------------------------------ golden files without the chart's text


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def chart_text_free(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rendered objects as the golden files keep them: without the chart's own text.

    The repository holds no upstream text, and a render carries some: a Job's shell script (its
    container's ``command`` and ``args`` lines that span several lines) is kept as its sha256, and
    the machine config a TalosConfigTemplate carries (``spec.template.spec.data``, whose comments
    are the chart's prose) as the data it parses to. Both sides of a comparison go through this, so
    the comparison is as exact as before: the Job's name already hashes the whole script."""
    out = copy.deepcopy(objects)
    for obj in out:
        if obj.get("kind") == "Job":
            for container in obj.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
                for key in ("command", "args"):
                    if key in container:
                        container[key] = [
                            _digest(item) if isinstance(item, str) and "\n" in item else item for item in container[key]
                        ]
        elif obj.get("kind") == "TalosConfigTemplate":
            spec = obj.get("spec", {}).get("template", {}).get("spec", {})
            if isinstance(spec.get("data"), str):
                spec["data"] = yaml.safe_load(spec["data"])
    return out


def chart_message_free(message: str) -> str:
    """A refusal of the chart as the golden files keep it: its sha256, not its prose."""
    return _digest(message)
