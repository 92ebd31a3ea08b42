"""The upstream README's mapping of the chart's render-time failures to admission codes.

Written from ``upstream-cozystack/README.md`` ("Each failure's admission code"): the chart's
``fail`` message (or the oracle's ``values schema:`` report) in, the API.md section 3 code out.
"""

from __future__ import annotations

import re

#: (pattern over the chart's message, code), first match wins
MAPPING: list[tuple[re.Pattern[str], str]] = [
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
    # the rendered YAML. API.md section 3 gives any other malformed value Invalid.
    (re.compile(r"nil pointer evaluating|wrong type for value|^YAML parse error"), "Invalid"),
]


def code_for(message: str) -> str:
    """The admission code of one chart failure message; ``?`` when the README has none."""
    for pattern, code in MAPPING:
        if pattern.search(message):
            return code
    return "?"
