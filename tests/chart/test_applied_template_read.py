"""The TalosConfigTemplate's heredoc, read once per body for every pool, reads as each pool's own text.

:func:`load_expanded` reads a body with stand-ins for the shell's pool names and fills the names
into that reading; it must equal the reading of the pool's own expanded text for any names,
including names that read as something else alone (``123``, ``1e5``, ``y``, ``null``), and for
bodies where a stand-in would not come through as written (a key, a comment, a quoted escape).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workerclass.chart import talos_job
from workerclass.chart.kubeyaml import k8s_load
from workerclass.chart.talos_job import expand_heredoc, load_expanded
from workerclass.chart.talos_job_spec import _HEREDOC

from ..shared import given_chart

_names = st.one_of(
    st.sampled_from(["123", "1e5", "0x1f", "y", "on", "null", "017", "1.5", "kubernetes-a", "a.b-c", "p0", "1-2"]),
    st.from_regex(r"[a-z0-9][a-z0-9.-]{0,12}", fullmatch=True),
    st.text("aZ0 :#'\"-.$\\{}", min_size=1, max_size=6),  # not a name: read from its own text
)
_envs = st.fixed_dictionaries({"RELEASE": _names, "NS": _names, "GROUP_NAME": _names})

_BODIES = [
    "metadata:\n  name: ${RELEASE}-${GROUP_NAME}\n  namespace: ${NS}\nspec:\n  data: |\n    at ${RELEASE}.${NS}\n",
    "a: ${GROUP_NAME}\nb: '${NS}'\nc: \"${RELEASE}\"\nd: [${NS}, x]\n",
    "${NS}: key\nv: 1\n",  # a stand-in in a key
    "v: x # ${GROUP_NAME}\n",  # a stand-in in a comment
    'v: "\\\\${NS}"\n',  # a quoted escape before the name
    "v: $GROUP_NAME and \\$NS\n",
    "v: [unclosed ${NS}\n",  # text YAML refuses
]


def _own(body: str, env: dict[str, str]) -> tuple[str, Any]:
    try:
        return "read", k8s_load(expand_heredoc(body, env))
    except yaml.YAMLError:
        return "refused", None


def _filled(body: str, env: dict[str, str]) -> tuple[str, Any]:
    try:
        return "read", load_expanded(body, env)
    except yaml.YAMLError:
        return "refused", None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.sampled_from(_BODIES), env=_envs)
def test_a_body_read_once_reads_as_each_pools_own_text(body: str, env: dict[str, str]) -> None:
    assert _filled(body, env) == _own(body, env)


@pytest.mark.parametrize("name", ["main", "pr3571"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(env=_envs, mirrors=st.sampled_from(["", "docker.io:\n  endpoints:\n  - https://m.example\n"]))
def test_the_charts_heredoc_reads_as_its_own_text(name: str, env: dict[str, str], mirrors: str) -> None:
    chart = given_chart(name)
    text = chart.text("templates/talos-reconcile-job.yaml", what="this test")
    match = _HEREDOC.search(text.replace("\n              ", "\n"))
    assert match is not None  # the template's heredoc, its template actions still in it
    body = match.group(1) + "\n" + mirrors
    assert _filled(body, env) == _own(body, env)


def test_each_pool_gets_its_own_copy_and_one_reading_serves_a_body() -> None:
    body = _BODIES[0]
    talos_job._READ.pop(body, None)
    first = load_expanded(body, {"RELEASE": "kubernetes-a", "NS": "tenant-a", "GROUP_NAME": "p1"})
    first["metadata"]["name"] = "changed"
    second = load_expanded(body, {"RELEASE": "kubernetes-a", "NS": "tenant-b", "GROUP_NAME": "p2"})
    assert second["metadata"] == {"name": "kubernetes-a-p2", "namespace": "tenant-b"}
    assert second["spec"]["data"] == "at kubernetes-a.tenant-b\n"
    assert body in talos_job._READ
