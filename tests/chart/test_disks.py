"""Class-era disk sources against the reference suites' expectations.

PR 3294 (``reference/pr3294/.../tests/worker_image_source_test.yaml``): an HTTP import keeps the
``usePopulator: "false"`` annotation and the factory URL (mirror/schematic/version overrides go
into the URL); a builtin clone has ``source.pvc`` ``cozy-public``/``talos-worker-<schematicID>-<version>``
and no ``metadata.annotations``. PR 3797 (``reference/pr3797/.../tests/talos_image_factory_ca_test.yaml``):
no CA -> no ``certConfigMap`` and no ConfigMap; whitespace-only is unset; a CA -> the ConfigMap
``<name>-talos-factory-ca`` with ``data["ca.pem"]`` the PEM, and ``certConfigMap`` naming it beside
the unchanged URL; a private key or a non-PEM is refused. The pool-side name is
``kubernetes-<cluster>-<pool>-talos-factory-ca`` (the parent's ``<release>-talos-factory-ca``,
with the pool's objects' name for the release).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest

from workerclass.chart import (
    ChartRefused,
    Disk,
    chart_input,
    factory_disk,
    golden_disk,
    kubevirtmachinetemplate,
    kubevirtmachinetemplate_text,
    render_chart,
    sizing,
)
from workerclass.chart.source import ChartSource

DEFAULT_SCHEMATIC = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
CERT = (
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBkDCCATWgAwIBAgIUYQvjA+rtcpuJZ414ETcZjPLYYHEwCgYIKoZIzj0EAwIw\n"
    "HDEaMBgGA1UEAwwRY296eXN0YWNrLXRlc3QtY2EwIBcNMjYwODEzMTQzNTM4WhgP\n"
    "uDdynL2YtgHPfcQVfBb98CKq7yI=\n"
    "-----END CERTIFICATE-----\n"
)
INP = chart_input(
    {"cluster": "example", "instanceType": "u1.medium", "diskSize": "20Gi", "roles": ["ingress-nginx"]},
    namespace="tenant-test",
    release="kubernetes-nodes-example-md0",
)
DV = "spec.template.spec.virtualMachineTemplate.spec.dataVolumeTemplates"


def _dv(kmt: dict[str, Any]) -> dict[str, Any]:
    dv: dict[str, Any] = kmt["spec"]["template"]["spec"]["virtualMachineTemplate"]["spec"]["dataVolumeTemplates"][0]
    return dv


def test_no_disk_and_the_default_factory_disk_are_the_chart_bytes() -> None:
    size = sizing(INP)
    chart = kubevirtmachinetemplate_text(INP, size)
    assert kubevirtmachinetemplate_text(INP, size, factory_disk(INP)) == chart
    assert kubevirtmachinetemplate_text(INP, size, Disk.http(factory_disk(INP).url)) == chart
    dv = _dv(kubevirtmachinetemplate(INP, size))
    assert dv["metadata"]["annotations"] == {"cdi.kubevirt.io/storage.usePopulator": "false"}
    assert dv["spec"]["source"] == {
        "http": {"url": f"https://factory.talos.dev/image/{DEFAULT_SCHEMATIC}/v1.13.6/openstack-amd64.raw.xz"}
    }


def test_factory_overrides_go_into_the_url() -> None:
    url = "https://mirror.internal/image/deadbeef/v1.14.0/openstack-amd64.raw.xz"
    kmt = kubevirtmachinetemplate(INP, sizing(INP), Disk.http(url))
    assert _dv(kmt)["spec"]["source"]["http"]["url"] == url
    assert kmt["metadata"]["name"] != kubevirtmachinetemplate(INP, sizing(INP))["metadata"]["name"]


def test_builtin_clone_of_the_default_golden_omits_use_populator() -> None:
    disk = golden_disk(DEFAULT_SCHEMATIC, "v1.13.6")
    assert disk == Disk.pvc("cozy-public", f"talos-worker-{DEFAULT_SCHEMATIC}-v1.13.6")
    kmt = kubevirtmachinetemplate(INP, sizing(INP), disk)
    dv = _dv(kmt)
    assert dv["spec"]["source"] == {
        "pvc": {"namespace": "cozy-public", "name": f"talos-worker-{DEFAULT_SCHEMATIC}-v1.13.6"}
    }
    assert "annotations" not in dv["metadata"]
    assert dv["metadata"] == {"name": "disk-system"}
    assert dv["spec"]["storage"] == {"resources": {"requests": {"storage": "20Gi"}}, "storageClassName": "replicated"}
    text = kubevirtmachinetemplate_text(INP, sizing(INP), disk)
    assert "usePopulator" not in text and "http:" not in text
    assert kmt["metadata"]["name"] == f"kubernetes-example-md0-{kmt['metadata']['name'][-6:]}"


def test_builtin_clone_with_explicit_schematic_and_version() -> None:
    kmt = kubevirtmachinetemplate(INP, sizing(INP), golden_disk("importing", "v1.0.0"))
    assert _dv(kmt)["spec"]["source"]["pvc"]["name"] == "talos-worker-importing-v1.0.0"


def _kinds(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def test_no_ca_renders_no_configmap_and_no_cert_config_map() -> None:
    for ca in (None, "", "  \n  "):
        objects = render_chart(INP, image_factory_ca=ca, chart_text=False)
        assert not _kinds(objects, "ConfigMap")
        assert "certConfigMap" not in _dv(_kinds(objects, "KubevirtMachineTemplate")[0])["spec"]["source"]["http"]


def test_a_ca_renders_the_configmap_and_points_the_data_volume_at_it(chart_text: ChartSource) -> None:
    objects = render_chart(dataclasses.replace(INP, chart=chart_text), image_factory_ca=CERT)
    (cm,) = _kinds(objects, "ConfigMap")
    assert cm["metadata"]["name"] == "kubernetes-example-md0-talos-factory-ca"
    assert cm["metadata"]["namespace"] == "tenant-test"
    assert re.search(r"^-----BEGIN CERTIFICATE-----", cm["data"]["ca.pem"])
    assert re.search(r"-----END CERTIFICATE-----\s*$", cm["data"]["ca.pem"])
    assert cm["metadata"]["labels"]["app.kubernetes.io/instance"] == "kubernetes-nodes-example-md0"
    http = _dv(_kinds(objects, "KubevirtMachineTemplate")[0])["spec"]["source"]["http"]
    assert http["certConfigMap"] == "kubernetes-example-md0-talos-factory-ca"
    assert http["url"].endswith("openstack-amd64.raw.xz")
    # the ConfigMap comes after the Job's file (templates/talos/... sorts after talos-reconcile-job.yaml)
    kinds = [o["kind"] for o in objects]
    assert kinds.index("ConfigMap") > kinds.index("Job")


def test_a_chain_of_two_certificates_is_one_configmap() -> None:
    objects = render_chart(INP, image_factory_ca=CERT + CERT, chart_text=False)
    assert len(_kinds(objects, "ConfigMap")) == 1


@pytest.mark.parametrize(
    "ca",
    [
        "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEexample\n-----END EC PRIVATE KEY-----\n",
        CERT + "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n",
        "not a certificate",
        CERT + "trailing text",
    ],
)
def test_a_private_key_or_non_pem_is_refused_without_quoting_it(ca: str) -> None:
    with pytest.raises(ChartRefused) as info:
        render_chart(INP, image_factory_ca=ca, chart_text=False)
    (failure,) = info.value.failures
    assert failure.code == "Invalid" and failure.field == "spec.talos.imageFactoryCA"
    assert (
        "MHcC" not in failure.message and "MIIE" not in failure.message and "not a certificate" not in failure.message
    )


def test_a_ca_on_a_clone_disk_adds_nothing() -> None:
    disk = golden_disk(DEFAULT_SCHEMATIC, "v1.13.6")
    objects = render_chart(INP, disk=disk, image_factory_ca=CERT, chart_text=False)
    assert not _kinds(objects, "ConfigMap")
    assert "http" not in _dv(_kinds(objects, "KubevirtMachineTemplate")[0])["spec"]["source"]
