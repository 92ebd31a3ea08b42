"""A Kairos pool's bootstrap data Secret (the data-secret path): the cloud-config as Kairos's kubeadm
provider reads it (:mod:`tests.render.provider_kubeadm`, after its source), the join inputs filled in
structurally, the CA pinned, the token never in what ``render`` prints, and the name that rolls."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.kairos_join import TOKEN, ca_certificate, join_input_secrets, kubeadm_hash
from workerclass.render.kairos_bootstrap import (
    CA_HASH_PLACEHOLDER,
    TOKEN_PLACEHOLDER,
    JoinInputsInvalid,
    ca_cert_hashes,
    with_join_inputs,
)

from .builders import FIXED_REFERENCE, SSH_KEY, by_kind, pool, render_pool, worker_class
from .provider_kubeadm import ProviderStops, read_join, transform_token

#: these tests render through the chart's port; the mirror's chart is given where Talos needs it
pytestmark = pytest.mark.usefixtures("chart_text")


def _secret(**spec: Any) -> dict[str, Any]:
    return by_kind(render_pool(pool("kairos", workerClassName="kairos", **spec)))["Secret"]


def _filled(secret: dict[str, Any], token: str = TOKEN, ca: bytes | None = None) -> str:
    joined = with_join_inputs(secret, token=token, ca_pem=ca if ca is not None else ca_certificate())
    return base64.b64decode(joined["data"]["value"]).decode()


def test_the_secret_is_bootstrap_data_cluster_api_hands_to_the_vm() -> None:
    objects = by_kind(render_pool(pool("kairos", workerClassName="kairos")))
    secret = objects["Secret"]
    assert secret["type"] == "cluster.x-k8s.io/secret"
    assert set(secret["stringData"]) == {"value"}
    assert secret["stringData"]["value"].startswith("#cloud-config\n")
    machine = objects["MachineDeployment"]["spec"]["template"]["spec"]
    assert machine["bootstrap"] == {"dataSecretName": secret["metadata"]["name"]}
    assert secret["metadata"]["labels"] == {"cluster.x-k8s.io/cluster-name": "kubernetes-example"}
    joined = with_join_inputs(secret, token=TOKEN, ca_pem=ca_certificate())
    assert set(joined) == {"apiVersion", "kind", "metadata", "type", "data"}  # stringData gone
    assert joined["metadata"] == secret["metadata"]  # the name is the render's: the inputs do not rename it


def test_the_provider_joins_the_pool_as_a_worker_with_the_ca_pinned() -> None:
    join = read_join(_filled(_secret(sshKeys=[SSH_KEY])))
    assert join.role == "worker"
    assert join.kubernetes_version == "v1.35.6"  # the platform map's patch for v1.35
    assert join.api_version == "kubeadm.k8s.io/v1beta4"
    assert join.bootstrap_token == {
        "apiServerEndpoint": "kubernetes-example.tenant-example.svc:6443",
        "token": TOKEN,  # the real token, not the provider's hash of cluster_token
        "caCertHashes": [kubeadm_hash(ca_certificate())],
        "unsafeSkipCAVerification": False,
    }
    assert join.pins_the_ca


def test_cluster_token_is_no_secret_and_not_the_join_token() -> None:
    document = yaml.safe_load(_filled(_secret()))
    cluster_token = document["cluster"]["cluster_token"]
    assert cluster_token == "tenant-example/kubernetes-example-kairos"
    assert TOKEN not in cluster_token and transform_token(cluster_token) != TOKEN


def test_a_cloud_config_without_discovery_would_skip_ca_verification() -> None:
    """The provider's trap (stages/join.go:108-115): take our discovery out and the provider joins
    with the hashed cluster_token and UnsafeSkipCAVerification. Our render never does."""
    document = yaml.safe_load(_filled(_secret()))
    config = yaml.safe_load(document["cluster"]["config"])
    del config["joinConfiguration"]["discovery"]
    document["cluster"]["config"] = yaml.safe_dump(config)
    stripped = read_join("#cloud-config\n" + yaml.safe_dump(document))
    assert stripped.bootstrap_token["unsafeSkipCAVerification"] is True
    assert stripped.bootstrap_token["token"] == transform_token(document["cluster"]["cluster_token"])
    assert not stripped.pins_the_ca
    assert read_join(_filled(_secret())).pins_the_ca


def test_the_provider_stops_without_the_kubernetes_version() -> None:
    document = yaml.safe_load(_filled(_secret()))
    config = yaml.safe_load(document["cluster"]["config"])
    del config["clusterConfiguration"]["kubernetesVersion"]
    document["cluster"]["config"] = yaml.safe_dump(config)
    with pytest.raises(ProviderStops, match="failed to parse kubernetes version"):
        read_join("#cloud-config\n" + yaml.safe_dump(document))


def test_users_zero_or_one_key_a_sudo_capable_user_and_no_password() -> None:
    with_key = yaml.safe_load(_filled(_secret(sshKeys=[SSH_KEY])))["users"]
    without = yaml.safe_load(_filled(_secret(sshKeys=[])))["users"]
    assert with_key == [{"name": "kairos", "groups": ["admin"], "lockPasswd": True, "ssh_authorized_keys": [SSH_KEY]}]
    assert without == [{"name": "kairos", "groups": ["admin"], "lockPasswd": True}]  # nobody logs in


def test_the_name_follows_the_content_and_a_change_renames_it() -> None:
    base = _secret()["metadata"]["name"]
    assert base.startswith("kubernetes-example-kairos-") and len(base.rsplit("-", 1)[1]) == 6
    assert _secret()["metadata"]["name"] == base  # deterministic
    assert _secret(sshKeys=[SSH_KEY])["metadata"]["name"] != base
    assert _secret(minReplicas=3, maxReplicas=7)["metadata"]["name"] == base  # not bootstrap: in place
    fixed = worker_class(
        "kairos-fixed-r1", bootstrap="kairos", image={"kubernetesVersion": "v1.34.9", "reference": FIXED_REFERENCE}
    )
    other = by_kind(render_pool(pool("kairos", workerClassName="kairos-fixed-r1", version="v1.34"), fixed))
    assert other["Secret"]["metadata"]["name"] != base
    assert "kubernetesVersion: v1.34.9" in other["Secret"]["stringData"]["value"]


def test_the_rendered_secret_carries_placeholders_never_a_token() -> None:
    text = _secret()["stringData"]["value"]
    assert TOKEN_PLACEHOLDER in text and CA_HASH_PLACEHOLDER in text
    assert TOKEN not in text


def test_a_hostile_key_comment_is_never_filled_in() -> None:
    """The inputs are set at their fields, not substituted in the text: a key whose comment spells a
    placeholder keeps it literally."""
    key = SSH_KEY.split()[0] + " " + SSH_KEY.split()[1] + " ${BOOTSTRAP_TOKEN}"
    secret = _secret()
    document = yaml.safe_load(secret["stringData"]["value"])
    document["users"][0]["ssh_authorized_keys"] = [key]
    hostile = copy.deepcopy(secret)
    hostile["stringData"]["value"] = "#cloud-config\n" + yaml.safe_dump(document)
    filled = yaml.safe_load(_filled(hostile))
    assert filled["users"][0]["ssh_authorized_keys"] == [key]
    assert read_join(_filled(hostile)).bootstrap_token["token"] == TOKEN


def test_the_ca_hash_is_kubeadms_for_each_certificate_of_a_bundle() -> None:
    first, second = ca_certificate("kubernetes"), ca_certificate("kubernetes-next")
    assert ca_cert_hashes(first) == [kubeadm_hash(first)]
    assert ca_cert_hashes(first + second) == [kubeadm_hash(first), kubeadm_hash(second)]
    assert ca_cert_hashes(first + first) == [kubeadm_hash(first)]


@pytest.mark.parametrize(
    ("token", "ca", "says"),
    [
        ("Not-A.Token", None, "not a kubeadm bootstrap token"),
        ("abcdef.0123456789abcdeg0", None, "not a kubeadm bootstrap token"),
        (None, b"", "holds no PEM certificate"),
        (None, b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "not an X.509 certificate"),
        (None, b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n", "not valid base64"),
    ],
    ids=["token-shape", "token-length", "no-ca", "not-x509", "not-base64"],
)
def test_unusable_inputs_are_refused_without_quoting_them(token: str | None, ca: bytes | None, says: str) -> None:
    secret = _secret()
    with pytest.raises(JoinInputsInvalid) as refused:
        with_join_inputs(secret, token=token or TOKEN, ca_pem=ca if ca is not None else ca_certificate())
    assert says in str(refused.value)
    assert (token or TOKEN) not in str(refused.value) and "AAAA" not in str(refused.value)


# --------------------------------------------------------------------------- what render prints


def _state_with_join_inputs(tmp_path: Path) -> Path:
    """The examples beside the parent's join input Secrets, as a hoster's GitOps folder may hold them."""
    from tests.cli.test_render_plan import EXAMPLES

    state = tmp_path / "state"
    state.mkdir()
    for source in EXAMPLES.rglob("*.yaml"):
        target = state / source.relative_to(EXAMPLES)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source.read_text())
    (state / "join-inputs.yaml").write_text(yaml.safe_dump_all(join_input_secrets("tenant-example", "example")))
    return state


@pytest.mark.parametrize("output", ["yaml", "json"])
def test_render_prints_the_secret_with_its_token_redacted(tmp_path: Path, output: str) -> None:
    from tests.cli.test_render_plan import run

    result = run("render", str(_state_with_join_inputs(tmp_path)), "-o", output)
    assert result.exit_code == 0, result.stderr
    assert TOKEN not in result.stdout and TOKEN not in result.stderr
    assert "not-for-print" not in result.stdout + result.stderr
    if output == "json":
        items = json.loads(result.stdout)["items"]
    else:
        items = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    secrets = [item for item in items if item["kind"] == "Secret"]
    assert secrets and all(TOKEN_PLACEHOLDER in item["stringData"]["value"] for item in secrets)
