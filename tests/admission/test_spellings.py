"""Every spelling of a pool's values is judged as the chart judges it, both ways.

Each case is a classless pool's values (written as STATE text, read as kubectl reads it, or as
JSON a webhook receives): admission allows it exactly when the real chart (the oracle) renders
it, and a refusal carries the code the upstream README maps the chart's failure to. A classified
pool (the built-in ``talos`` class) gets the same answer where the class adds no rule.
The cases are the classes of mismatch found by hand: YAML 1.1 against go-yaml v2 spellings,
explicit nulls (Helm validates its schema with them present), whole-number floats, the Job's
double-quoted kubectl image, values the chart renders that the parser refused.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.chart.cases import code_of_message
from tests.chart.oracle import get_oracle, need_oracle, oracle_read
from workerclass import State, admit
from workerclass.adapters.folder import parse_documents

NAMESPACE = "tenant-example"
PARENT = {
    "apiVersion": "apps.cozystack.io/v1alpha1",
    "kind": "Kubernetes",
    "metadata": {"name": "example", "namespace": NAMESPACE},
    "spec": {},
}
STATE = State.from_objects([PARENT])

#: STATE text under ``spec.values:`` of a pool HelmRelease, read as ``workerclass check`` reads it
TEXT_CASES = {
    "y-boolean": "logSerialConsole: y",
    "exponent-integer": "maxReplicas: 1e2",
    "date-as-text": "nodeStartupTimeout: 2001-12-14",
    "boolean-role": "roles: [x, y]",
    "sexagesimal": "maxReplicas: 1:30",
    "empty-talos": "talos:",
    "null-images": "images: null",
    "null-pod-cpu-limit": "podCpuLimit: null",
    "null-pod-cpu-request": "podCpuRequest: ~",
    "null-eviction": "kubelet: {evictionHardMemory: null}",
    "null-talos-version": "talos: {version: null}",
    "null-registry-mirrors": "talos: {registryMirrors: null}",
    "null-resource": "instanceType: ''\n    resources: {cpu: null, memory: 4Gi}",
    "null-gpu-name": "gpus: [{name: null}]",
    "null-role": "roles: [null]",
    "null-kubectl": "images: {kubectl: null}",
    "null-kubelet": "kubelet: null",
    "null-unknown-key": "someOldKey: null",
    "null-mirror-host": "talos: {registryMirrors: {a.io: null}}",
    "empty-gpu-name": "gpus: [{name: ''}]",
    "duration-with-newline": "nodeStartupTimeout: |\n      20m",
    "label-name-roles": "roles: [ingress_nginx, A]",
    "kubectl-escape": 'images: {kubectl: "reg.example/kubectl\\\\tv1"}',
    "kubectl-bad-escape": "images: {kubectl: 'reg.example/kubectl\\qv1'}",
    "kubectl-quote": "images: {kubectl: 'reg.example/kube\"ctl'}",
}
#: cases where a classified pool meets a rule of its own (a mirror entry must be a mapping: the
#: resolver reads its endpoints; the Job's image is the platform's, PlatformImageOverride), so only
#: the classless pool is held to the chart's answer
CLASS_RULES = {"null-mirror-host", "kubectl-escape", "kubectl-bad-escape", "kubectl-quote"}
#: values as JSON holds them (a webhook's body): numbers kubectl would have read from YAML as floats
JSON_CASES: dict[str, dict[str, Any]] = {
    "whole-float-replicas": {"minReplicas": 1.0, "maxReplicas": 3.0},
    "whole-float-cpu": {"instanceType": "", "resources": {"cpu": 2.0, "memory": "4Gi"}},
    "whole-float-disk": {"diskSize": 21474836480.0},
    "fraction-cpu": {"instanceType": "", "resources": {"cpu": 2.5, "memory": "4Gi"}},
    "fraction-replicas": {"maxReplicas": 2.5},
}


def _release(values: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {
            "name": "kubernetes-nodes-example-md1",
            "namespace": NAMESPACE,
            "labels": {"apps.cozystack.io/application.kind": "KubernetesNodes"},
        },
        "spec": {"values": values},
    }


def _from_text(line: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The values of a HelmRelease in STATE text as workerclass reads them, and as the oracle
    (Kubernetes' reading) reads the same text."""
    text = (
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\n"
        f"metadata:\n  name: kubernetes-nodes-example-md1\n  namespace: {NAMESPACE}\n"
        "  labels: {apps.cozystack.io/application.kind: KubernetesNodes}\n"
        f"spec:\n  values:\n    cluster: example\n    {line}\n"
    )
    (document,) = parse_documents(text, "pool.yaml")
    (theirs,) = oracle_read(text)
    return document.obj["spec"]["values"], theirs["spec"]["values"]


def _judged_as_the_chart_judges(
    values: dict[str, Any], theirs: dict[str, Any] | None = None, *, classified_too: bool = True
) -> None:
    """Admission allows ``values`` exactly when the chart renders ``theirs`` (the same values, as
    the oracle read them: ``values`` when they came as JSON)."""
    need_oracle()
    values = {"version": "v1.35", **values}  # a classified pool names its minor
    theirs = {"version": "v1.35", **(values if theirs is None else theirs)}
    rendered = get_oracle().render(theirs, release="kubernetes-nodes-example-md1", namespace=NAMESPACE)
    for classified in (False, True) if classified_too else (False,):
        obj = _release({**values, "workerClassName": "talos"} if classified else values)
        decision = admit(STATE, "CREATE", obj)
        shown = (classified, rendered.error[:240], [str(v) for v in decision.denials])
        assert decision.allowed is rendered.ok, shown
        if not rendered.ok:
            assert code_of_message(rendered.error) in {v.code for v in decision.denials}, shown


@pytest.mark.parametrize(("case", "line"), TEXT_CASES.items(), ids=TEXT_CASES.keys())
def test_state_text_is_judged_as_the_chart_judges_it(case: str, line: str) -> None:
    ours, theirs = _from_text(line)
    _judged_as_the_chart_judges(ours, theirs, classified_too=case not in CLASS_RULES)


@pytest.mark.parametrize("values", JSON_CASES.values(), ids=JSON_CASES.keys())
def test_json_numbers_are_judged_as_the_chart_judges_them(values: dict[str, Any]) -> None:
    _judged_as_the_chart_judges({"cluster": "example", **values})


def test_an_empty_kernel_module_name_is_the_kernel_module_code_pr3571_maps_it_to() -> None:
    need_oracle()
    values = {"cluster": "example", "version": "v1.35", "kernelModules": [{"name": ""}]}
    rendered = get_oracle().render(values, release="kubernetes-nodes-example-md1", namespace=NAMESPACE, chart="pr3571")
    assert not rendered.ok
    for obj in (_release(values), _release({**values, "workerClassName": "talos"})):
        codes = {(v.code, v.field) for v in admit(STATE, "CREATE", obj).denials}
        assert (code_of_message(rendered.error), "spec.values.kernelModules[0].name") in codes, codes
