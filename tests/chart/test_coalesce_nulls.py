"""Helm deletes a user ``null`` only where the chart's defaults have that key (coalesceTablesFullKey):
a null directly under ``talos.registryMirrors`` (defaults ``{}``) stays, and the Job's machine
config renders ``a.io: null`` as Helm does."""

from __future__ import annotations

from typing import Any

import pytest

from workerclass.chart import chart_defaults, chart_input, coalesce, render_chart

from .oracle import ABSENT, available, get_oracle

#: these tests render the talos-reconcile Job, the chart's own text: the mirror's chart is given
pytestmark = pytest.mark.usefixtures("chart_text")

RELEASE, NAMESPACE = "kubernetes-nodes-c-p", "tenant-x"

CASES: list[tuple[str, dict[str, Any]]] = [
    ("mirror-null", {"cluster": "c", "talos": {"registryMirrors": {"a.io": None}}}),
    (
        "mirror-null-beside-one",
        {"cluster": "c", "talos": {"registryMirrors": {"a.io": None, "b.io": {"endpoints": ["https://x"]}}}},
    ),
    ("endpoints-null", {"cluster": "c", "talos": {"registryMirrors": {"a.io": {"endpoints": None}}}}),
    ("unknown-kubelet-key-null", {"cluster": "c", "kubelet": {"foo": None}}),
]


def test_a_null_stays_where_the_defaults_lack_the_key() -> None:
    values = coalesce({"talos": {"registryMirrors": {"a.io": None}}}, chart_defaults())
    assert values["talos"]["registryMirrors"] == {"a.io": None}


def test_a_null_removes_a_default_key() -> None:
    values = coalesce({"talos": {"registryMirrors": None, "version": None}}, chart_defaults())
    assert "registryMirrors" not in values["talos"]
    assert "version" not in values["talos"]
    assert "schematicID" in values["talos"]


def test_the_job_renders_the_null_mirror() -> None:
    objects = render_chart(chart_input(CASES[0][1], namespace=NAMESPACE, release=RELEASE))
    job = next(obj for obj in objects if obj["kind"] == "Job")
    assert "a.io: null" in str(job)


@pytest.mark.skipif(not available(), reason=ABSENT)
@pytest.mark.parametrize("values", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_nulls_render_as_the_oracle_renders(values: dict[str, Any]) -> None:
    result = get_oracle().render(values, release=RELEASE, namespace=NAMESPACE)
    assert result.ok
    assert render_chart(chart_input(values, namespace=NAMESPACE, release=RELEASE)) == result.objects
