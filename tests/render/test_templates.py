"""The templates no chart renders (Kairos, Talos on Proxmox): their names, hashes and conventions.

The golden hashes below pin :mod:`workerclass.render.hash`'s rule for these families: a template's
name carries the first 6 hex of the sha256 of its canonical text. A change that alters one of them
would rename running pools' templates: bump ``HASH_VERSION`` (so running templates are kept and
re-stamped, ``tests/render/test_hash.py``), update the hashes here in the same commit and say what
changed in ``render/hash.py``'s history. The Talos KubeVirt hashes pinned here are the chart's (the
parity tests prove them against the oracle).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from workerclass.chart import chart_hash
from workerclass.render import HASH_VERSION, canonical_text, content_hash, template_suffix
from workerclass.render.templates import KAIROS_DATA_SECRET_PATH, KAIROS_PATHS, KAIROS_PROVIDER_PATH

from .builders import FIXED_REFERENCE, SSH_KEY, by_kind, pool, render_pool, worker_class
from .variants import rendered, variants

#: these tests render the talos-reconcile Job, the chart's own text: the mirror's chart is given
pytestmark = pytest.mark.usefixtures("chart_text")

#: variant -> (infrastructure template hash, KairosConfigTemplate hash or None).
GOLDEN_HASHES: dict[str, tuple[str, str | None]] = {
    "classless-minimal": ("9c1806", None),
    "classless-helmrelease": ("69af1a", None),
    "classless-resources-gpu": ("2ed0b2", None),
    "talos-class": ("9c1806", None),
    "talos-kernel-modules": ("9c1806", None),
    "talos-nvidia-rule": ("795b3c", None),
    "talos-factory-ca": ("159551", None),
    "talos-factory-endpoint": ("3dd5a8", None),
    "talos-builtin": ("f0d92d", None),
    "talos-proxmox": ("f5f41d", None),
    "talos-proxmox-resources": ("80c108", None),
    "kairos-platform": ("ad35fa", "99e0e1"),
    "kairos-fixed-ssh": ("7c2f4d", "05eb65"),
}


#: variant -> the hash in the name of its bootstrap data Secret (the data-secret path: the default).
GOLDEN_SECRET_HASHES: dict[str, str] = {
    "kairos-platform": "8af31b",
    "kairos-fixed-ssh": "5ee10f",
}


def _kairos_hash(objects: list[dict[str, Any]], kind: str = "KairosConfigTemplate") -> str | None:
    for obj in objects:
        if obj["kind"] == kind:
            return str(obj["metadata"]["name"]).rsplit("-", 1)[1]
    return None


def test_every_variant_has_a_golden_hash() -> None:
    assert set(GOLDEN_HASHES) == set(variants())
    assert HASH_VERSION == "v2"


@pytest.mark.parametrize("name", sorted(GOLDEN_HASHES), ids=sorted(GOLDEN_HASHES))
def test_golden_hashes(name: str) -> None:
    objects = rendered(name, kairos_path=KAIROS_PROVIDER_PATH)
    assert (template_suffix(objects), _kairos_hash(objects)) == GOLDEN_HASHES[name]


@pytest.mark.parametrize("name", sorted(GOLDEN_SECRET_HASHES), ids=sorted(GOLDEN_SECRET_HASHES))
def test_golden_bootstrap_secret_hashes(name: str) -> None:
    objects = rendered(name)
    assert template_suffix(objects) == GOLDEN_HASHES[name][0]  # the machine template is the same on both paths
    assert _kairos_hash(objects) is None
    assert _kairos_hash(objects, "Secret") == GOLDEN_SECRET_HASHES[name]


@pytest.mark.parametrize("name", ["kairos-platform", "kairos-fixed-ssh", "talos-proxmox"])
def test_own_templates_are_named_by_the_hash_of_their_canonical_text(name: str) -> None:
    for obj in rendered(name):
        if obj["kind"] in ("KubevirtMachineTemplate", "ProxmoxMachineTemplate", "KairosConfigTemplate"):
            suffix = str(obj["metadata"]["name"]).rsplit("-", 1)[1]
            assert suffix == content_hash(obj["spec"]["template"])
            assert suffix == chart_hash(canonical_text(obj["spec"]["template"]))
        if obj["kind"] == "Secret":  # the bootstrap data, named by its redacted text
            suffix = str(obj["metadata"]["name"]).rsplit("-", 1)[1]
            assert suffix == content_hash({"value": obj["stringData"]["value"]})


def test_canonical_text_is_key_order_free() -> None:
    assert canonical_text({"b": 1, "a": [1, {"d": 2, "c": 3}]}) == '{"a":[1,{"c":3,"d":2}],"b":1}'


# --------------------------------------------------------------------------- Kairos conventions


def _kairos(kairos_path: str = KAIROS_DATA_SECRET_PATH, **spec: Any) -> list[dict[str, Any]]:
    return render_pool(pool("kairos", workerClassName="kairos", **spec), kairos_path=kairos_path)


def _talos(**spec: Any) -> list[dict[str, Any]]:
    return render_pool(pool("kairos", **spec))


def _bootstrap_reference(kairos: dict[str, dict[str, Any]], kairos_path: str) -> dict[str, Any]:
    """What the MachineDeployment's ``bootstrap`` must be on each path."""
    if kairos_path == KAIROS_PROVIDER_PATH:
        return {
            "configRef": {
                "apiVersion": "bootstrap.cluster.x-k8s.io/v1beta2",
                "kind": "KairosConfigTemplate",
                "name": kairos["KairosConfigTemplate"]["metadata"]["name"],
                "namespace": "tenant-example",
            }
        }
    return {"dataSecretName": kairos["Secret"]["metadata"]["name"]}


@pytest.mark.parametrize("kairos_path", KAIROS_PATHS, ids=KAIROS_PATHS)
def test_kairos_follows_the_charts_machine_deployment_health_check_and_monitor(kairos_path: str) -> None:
    spec = {"minReplicas": 1, "maxReplicas": 4, "maxUnhealthy": "1", "instanceType": "u1.large"}
    kairos, talos = by_kind(_kairos(kairos_path, **spec)), by_kind(_talos(**spec))
    assert kairos["MachineHealthCheck"] == talos["MachineHealthCheck"]
    assert kairos["WorkloadMonitor"] == talos["WorkloadMonitor"]
    md, chart_md = copy.deepcopy(kairos["MachineDeployment"]), copy.deepcopy(talos["MachineDeployment"])
    machine = md["spec"]["template"]["spec"]
    assert machine["bootstrap"] == _bootstrap_reference(kairos, kairos_path)
    assert machine["infrastructureRef"]["name"] == kairos["KubevirtMachineTemplate"]["metadata"]["name"]
    for side in (md, chart_md):
        del side["spec"]["template"]["spec"]["bootstrap"], side["spec"]["template"]["spec"]["infrastructureRef"]
    assert md == chart_md  # annotations, strategy, selector, labels, version: the chart's


@pytest.mark.parametrize("kairos_path", KAIROS_PATHS, ids=KAIROS_PATHS)
def test_kairos_names(kairos_path: str) -> None:
    objects = by_kind(_kairos(kairos_path))
    for kind in ("MachineDeployment", "MachineHealthCheck", "WorkloadMonitor"):
        assert objects[kind]["metadata"]["name"] == "kubernetes-example-kairos"
    bootstrap = "KairosConfigTemplate" if kairos_path == KAIROS_PROVIDER_PATH else "Secret"
    assert ("KairosConfigTemplate" in objects) == (kairos_path == KAIROS_PROVIDER_PATH)
    assert ("Secret" in objects) == (kairos_path == KAIROS_DATA_SECRET_PATH)
    for kind in ("KubevirtMachineTemplate", bootstrap):
        base, digest = str(objects[kind]["metadata"]["name"]).rsplit("-", 1)
        assert base == "kubernetes-example-kairos" and len(digest) == 6


@pytest.mark.parametrize("kairos_path", KAIROS_PATHS, ids=KAIROS_PATHS)
def test_a_kairos_bootstrap_change_changes_the_bootstrap_reference(kairos_path: str) -> None:
    # The page: Kairos bootstrap changes require replacement workers.
    before = by_kind(_kairos(kairos_path))["MachineDeployment"]["spec"]["template"]["spec"]["bootstrap"]
    after = by_kind(_kairos(kairos_path, sshKeys=[SSH_KEY]))["MachineDeployment"]["spec"]["template"]["spec"]
    assert before != after["bootstrap"]


def test_a_kairos_image_change_renames_the_machine_template() -> None:
    fixed = worker_class(
        "kairos-fixed-r1", bootstrap="kairos", image={"kubernetesVersion": "v1.35.6", "reference": FIXED_REFERENCE}
    )
    platform = template_suffix(_kairos())
    custom = template_suffix(render_pool(pool("kairos", workerClassName="kairos-fixed-r1"), fixed))
    assert platform != custom


def test_kairos_replicas_and_health_change_no_template() -> None:
    def templates(objects: list[dict[str, Any]]) -> list[str]:
        return [
            obj["metadata"]["name"] for obj in objects if obj["kind"].endswith("Template") or obj["kind"] == "Secret"
        ]

    assert templates(_kairos()) == templates(_kairos(minReplicas=2, maxReplicas=9, maxUnhealthy="1"))


def test_kairos_data_disk_takes_the_pools_disk_settings() -> None:
    objects = by_kind(_kairos(diskSize="50Gi", storageClass="local"))
    vm = objects["KubevirtMachineTemplate"]["spec"]["template"]["spec"]["virtualMachineTemplate"]["spec"]
    (volume,) = vm["dataVolumeTemplates"]
    assert volume["metadata"]["name"] == "disk-data"
    assert volume["spec"]["source"] == {"blank": {}}
    assert volume["spec"]["storage"]["resources"]["requests"]["storage"] == "50Gi"
    assert volume["spec"]["storage"]["storageClassName"] == "local"
    disks = [disk["name"] for disk in vm["template"]["spec"]["domain"]["devices"]["disks"]]
    assert disks == ["system", "data"]


def test_a_kairos_template_changes_no_container_the_chart_s_holds_twice() -> None:
    """A chart read by YAML may hold one container in two places (an alias): the Kairos template
    adds its data disk and volumes to copies of the containers it changes, not to the chart's."""
    from workerclass.render.templates import _kairos_machine_template

    (chart_kmt,) = [obj for obj in _talos() if obj["kind"] == "KubevirtMachineTemplate"]
    guest = chart_kmt["spec"]["template"]["spec"]["virtualMachineTemplate"]["spec"]["template"]["spec"]
    disks, volumes = guest["domain"]["devices"]["disks"], guest["volumes"]
    guest["aliased"] = {"disks": disks, "guest": dict(guest)}  # the alias a YAML anchor makes
    before = copy.deepcopy(guest["aliased"])
    kairos = _kairos_machine_template(chart_kmt, FIXED_REFERENCE)
    made = kairos["spec"]["template"]["spec"]["virtualMachineTemplate"]["spec"]["template"]["spec"]
    assert [disk["name"] for disk in made["domain"]["devices"]["disks"]] == ["system", "data"]
    assert guest["aliased"] == before and guest["volumes"] is volumes and [d["name"] for d in disks] == ["system"]
