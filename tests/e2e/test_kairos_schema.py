"""The bootstrap data of a Kairos pool judged by Kairos's own code: kairos-sdk v0.0.21's ``schema``
package (what Kairos's agent validates a cloud-config with) and its ``clusterplugin`` types (what a
cluster provider is handed), in our program ``tests/e2e/kairos_schema`` the test bed builds
(``scripts/testbed.py``, component ``kairos-schema``).

Every Kairos variant of the renderer, filled with join inputs as the controller fills them, must be
valid, and its ``cluster:`` block must reach the provider as rendered. Cloud-configs Kairos refuses
(no users, no header, a wrong type) are refused by the program too: it is not a rubber stamp.
"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.kairos_join import TOKEN, ca_certificate
from tests.render.variants import rendered, variants
from workerclass.render.kairos_bootstrap import with_join_inputs

from .conftest import _unavailable
from .testbed import _script_module

#: the Kairos variants render the talos-reconcile Job of no pool, but the builders want the chart's text
pytestmark = pytest.mark.usefixtures("chart_text")

KAIROS_VARIANTS = sorted(name for name in variants() if name.startswith("kairos"))


@pytest.fixture(scope="module")
def kairos_schema() -> Path:
    script = _script_module()
    gover = script.go_version()
    if gover is None:
        _unavailable("Go is not installed, so the kairos-schema program cannot be built")
    path = Path(script.binaries(gover)["kairos-schema"])
    if not path.exists():
        _unavailable(f"the kairos-schema program is not built ({path}): run 'make testbed'")
    return path


def judge(program: Path, folder: Path, texts: dict[str, str]) -> dict[str, dict[str, Any]]:
    paths = []
    for name, text in texts.items():
        path = folder / f"{name}.yaml"
        path.write_text(text)
        paths.append(str(path))
    out = subprocess.run([str(program), *paths], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode in (0, 1), out.stderr
    verdicts = [json.loads(line) for line in out.stdout.splitlines()]
    return {Path(verdict["file"]).stem: verdict for verdict in verdicts}


def joined(name: str) -> str:
    (secret,) = [obj for obj in rendered(name) if obj["kind"] == "Secret"]
    filled = with_join_inputs(secret, token=TOKEN, ca_pem=ca_certificate())
    return base64.b64decode(filled["data"]["value"]).decode()


@pytest.mark.parametrize("name", KAIROS_VARIANTS, ids=KAIROS_VARIANTS)
def test_the_bootstrap_data_is_a_valid_kairos_cloud_config(kairos_schema: Path, tmp_path: Path, name: str) -> None:
    text = joined(name)
    verdict = judge(kairos_schema, tmp_path, {name: text})[name]
    assert verdict["valid"], verdict.get("error")
    document = yaml.safe_load(text)
    cluster = verdict["cluster"]  # as clusterplugin.Cluster holds it: what provider-kubeadm is handed
    assert cluster["role"] == "worker"
    assert cluster["control_plane_host"] == document["cluster"]["control_plane_host"]
    assert cluster["cluster_token"] == document["cluster"]["cluster_token"]
    assert cluster["config"] == document["cluster"]["config"]  # the kubeadm config, text for text
    discovery = yaml.safe_load(cluster["config"])["joinConfiguration"]["discovery"]["bootstrapToken"]
    assert discovery["token"] == TOKEN and discovery["caCertHashes"] and not discovery["unsafeSkipCAVerification"]


def test_kairos_refuses_what_kairos_refuses(kairos_schema: Path, tmp_path: Path) -> None:
    text = joined("kairos-platform")
    document = yaml.safe_load(text)
    no_users = {key: value for key, value in document.items() if key != "users"}
    wrong_type = {**document, "users": [{**document["users"][0], "lockPasswd": "yes"}]}
    verdicts = judge(
        kairos_schema,
        tmp_path,
        {
            "ours": text,
            "no-header": text.removeprefix("#cloud-config\n"),
            "no-users": "#cloud-config\n" + yaml.safe_dump(no_users),
            "wrong-type": "#cloud-config\n" + yaml.safe_dump(wrong_type),
        },
    )
    assert {name: verdict["valid"] for name, verdict in verdicts.items()} == {
        "ours": True,
        "no-header": False,
        "no-users": False,
        "wrong-type": False,
    }
    assert "missing #cloud-config header" in verdicts["no-header"]["error"]
    assert "users" in verdicts["no-users"]["error"]
    assert TOKEN not in json.dumps({name: verdict.get("error") for name, verdict in verdicts.items()})
