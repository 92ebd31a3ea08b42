"""Whether the cluster's Kairos bootstrap provider can take a Kairos pool's render (``distribution:
kubeadm`` in ``bootstrap.cluster.x-k8s.io/v1beta2``): the check the worker controller makes before it
applies a Kairos pool, and ``preflight`` warns with."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from tests.shared import require
from workerclass.ops.providers import kairos_kubeadm


def crd(*, enum: list[str] | None = ("k0s", "k3s"), version: str = "v1beta2", served: bool = True,  # type: ignore[assignment]
        field: bool = True) -> dict[str, Any]:  # fmt: skip
    distribution: dict[str, Any] = {"type": "string", "default": "k0s"}
    if enum is not None:
        distribution["enum"] = list(enum)
    template_spec: dict[str, Any] = {"type": "object", "properties": {"role": {"type": "string"}}}
    if field:
        template_spec["properties"]["distribution"] = distribution
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {"template": {"type": "object", "properties": {"spec": template_spec}}},
            }
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "kairosconfigtemplates.bootstrap.cluster.x-k8s.io"},
        "spec": {
            "group": "bootstrap.cluster.x-k8s.io",
            "versions": [{"name": version, "served": served, "storage": True, "schema": {"openAPIV3Schema": schema}}],
        },
    }


@pytest.mark.parametrize(
    ("definition", "supported", "says"),
    [
        (crd(enum=["k0s", "k3s", "kubeadm"]), True, ""),
        (crd(enum=None), True, ""),
        (crd(), False, "allows spec.template.spec.distribution k0s, k3s only, not kubeadm"),
        (crd(field=False), False, "has no spec.template.spec.distribution field"),
        (crd(enum=["kubeadm"], version="v1beta1"), False, "does not serve bootstrap.cluster.x-k8s.io/v1beta2"),
        (crd(enum=["kubeadm"], served=False), False, "does not serve bootstrap.cluster.x-k8s.io/v1beta2"),
        (None, False, "the cluster has no kairosconfigtemplates.bootstrap.cluster.x-k8s.io CRD"),
    ],
    ids=["kubeadm-listed", "no-enum", "upstream-enum", "no-field", "other-version", "not-served", "no-crd"],
)
def test_the_provider_must_take_the_kubeadm_path(definition: dict[str, Any] | None, supported: bool, says: str) -> None:
    verdict = kairos_kubeadm(definition)
    assert verdict.supported is supported
    assert says in verdict.message
    assert bool(verdict.message) is not supported


def test_the_upstream_provider_lacks_kubeadm_and_the_widened_one_has_it() -> None:
    """The real CRD of the upstream Kairos provider: refused today; with ``kubeadm`` added to its enum
    (what a provider with the kubeadm path serves, and what the e2e tier installs) accepted. When
    upstream lists kubeadm this test fails: then the README's provider note goes."""
    path = require("upstream-crds", "bootstrap.cluster.x-k8s.io_kairosconfigtemplates.yaml")
    upstream = yaml.safe_load(path.read_text())
    assert not kairos_kubeadm(upstream).supported
    widened = copy.deepcopy(upstream)
    for version in widened["spec"]["versions"]:
        node = version["schema"]["openAPIV3Schema"]
        for key in ("spec", "template", "spec", "distribution"):
            node = node["properties"][key]
        node["enum"].append("kubeadm")
    assert kairos_kubeadm(widened).supported
