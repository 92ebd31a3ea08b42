"""The chart's own helm-unittest suites as facts: their value sets in, pass or fail out.

The suites are read with Cozystack's chart (``kubernetes-nodes/tests/*_test.yaml`` of main
3c780acd4, from the upstream mirror or a Cozystack checkout: ``tests/shared.py``): without it the
module skips, and fails under ``CI=true``. Each test's values (the suite's ``set`` under the test's)
become a pool of the suite's release: a direct HelmRelease (classless) and, where the release is named
``kubernetes-nodes-<cluster>-<pool>``, a KubernetesNodes CREATE (classified by the default class).
A test that asserts ``failedTemplate`` must be denied, with the code the README maps its message
to; every other test's values must be admitted (the classified form may meet only the class
era's Talos value patterns on top).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from tests.chart.cases import code_of_message
from tests.shared import chart_path
from workerclass import State, admit

SUITES = chart_path("main", module=True) / "tests"
PREFIX = "kubernetes-nodes-"


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _cases() -> list[Any]:
    out = []
    for path in sorted(SUITES.glob("*_test.yaml")):
        for suite in yaml.safe_load_all(path.read_text()):
            if not suite:
                continue
            for test in suite["tests"]:
                values = _merge(suite.get("set") or {}, test.get("set") or {})
                release = {**(suite.get("release") or {}), **(test.get("release") or {})}
                failure = next((a["failedTemplate"] for a in test["asserts"] if "failedTemplate" in a), None)
                message = None
                if failure is not None:
                    message = failure.get("errorMessage") or failure.get("errorPattern") or ""
                case_id = f"{path.stem}:{test['it'][:60]}"
                out.append(pytest.param(values, release, message, id=case_id))
    return out


CASES = _cases()


def _state(namespace: str, cluster: str, platform_values: dict[str, Any]) -> State:
    parent = {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "Kubernetes",
        "metadata": {"name": cluster, "namespace": namespace},
        # the suites' pool is md0: the parent must not keep its own default md0
        "spec": {"version": "v1.35", "nodeGroups": {"md0": None}},
    }
    state = State.from_objects([parent] if cluster else [])
    assert dict(state.platform.cluster_values) == platform_values  # the suites' _cluster is Cozystack's default
    return state


def test_the_suites_are_all_read() -> None:
    assert len(CASES) == 52  # the chart's own count (main 52/52 through Helm's engine)


@pytest.mark.parametrize(("values", "release", "message"), CASES)
def test_chart_suite_values(values: dict[str, Any], release: dict[str, str], message: str | None) -> None:
    values = dict(values)
    platform_values = values.pop("_cluster", {})
    namespace, name = release.get("namespace", "tenant-test"), release.get("name", f"{PREFIX}x-md0")
    cluster = values.get("cluster") if isinstance(values.get("cluster"), str) else ""
    state = _state(namespace, cluster or "myk8s", platform_values)
    objects = [
        {
            "apiVersion": "helm.toolkit.fluxcd.io/v2",
            "kind": "HelmRelease",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {"apps.cozystack.io/application.kind": "KubernetesNodes"},
            },
            "spec": {"values": values},
        }
    ]
    if name.startswith(PREFIX):
        objects.append(
            {
                "apiVersion": "apps.cozystack.io/v1alpha1",
                "kind": "KubernetesNodes",
                "metadata": {"name": name.removeprefix(PREFIX), "namespace": namespace},
                "spec": values,
            }
        )
    for obj in objects:
        decision = admit(state, "CREATE", obj)
        denials = [str(v) for v in decision.denials]
        if message is None and obj["kind"] == "KubernetesNodes":
            # classified by the CREATE's default class: the class era's value patterns on Talos
            # settings apply on top of the chart (registry mirror endpoints must be http(s) URLs)
            assert all(v.code == "Invalid" and v.field.startswith("spec.talos.") for v in decision.denials), denials
        elif message is None:
            assert decision.allowed, (obj["kind"], denials)
        else:
            assert not decision.allowed, obj["kind"]
            expected = code_of_message(message)
            assert expected != "Unknown", message
            assert any(v.code == expected for v in decision.denials), (obj["kind"], expected, denials)
