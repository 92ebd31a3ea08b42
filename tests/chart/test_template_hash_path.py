"""``template_hash(effective)`` builds only the infrastructure template (the chart's KMT text for
Talos on KubeVirt, the Kairos KMT for Kairos): it equals the hash in the name of the template the
full render names, and refuses with the same error, for every family the examples state holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from workerclass.adapters.folder import load_state
from workerclass.render import RenderError, render, template_hash, template_suffix
from workerclass.resolve import resolve_pool

#: these tests render the talos-reconcile Job, the chart's own text: the mirror's chart is given
pytestmark = pytest.mark.usefixtures("chart_text")

ROOT = Path(__file__).resolve().parents[2]
SCHEMATIC = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"  # the examples' golden

REFUSED_BY_THE_CHART: dict[str, Any] = {"kubelet": {"evictionHardMemory": "20%", "evictionSoftMemory": "10%"}}
SPECS: list[tuple[str, dict[str, Any]]] = [
    ("classless", {}),
    ("classless-resources", {"instanceType": "", "resources": {"cpu": "4", "memory": "8Gi"}, "podCpuLimit": "2"}),
    (
        "classless-gpu-mirrors",
        {"gpus": [{"name": "nvidia.com/AD102GL_L40S"}], "talos": {"registryMirrors": {"a.io": None}}},
    ),
    ("classless-refused", REFUSED_BY_THE_CHART),
    ("talos-class", {"workerClassName": "talos"}),
    ("talos-custom", {"workerClassName": "talos-example-r1", "kernelModules": [{"name": "nvme_tcp"}]}),
    (
        "talos-golden",
        {
            "workerClassName": "talos",
            "kubevirt": {"osImage": {"builtin": {"version": "v1.13.6", "schematicID": SCHEMATIC}}},
        },
    ),
    ("kairos", {"workerClassName": "kairos", "version": "v1.35"}),
    ("kairos-fixed", {"workerClassName": "kairos-example-v1-35-6-r1", "version": "v1.35"}),
]


@pytest.mark.parametrize("spec", [s for _, s in SPECS], ids=[i for i, _ in SPECS])
def test_template_hash_is_the_rendered_templates(spec: dict[str, Any], tmp_path: Path) -> None:
    pool = {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": "example-hashed", "namespace": "tenant-example"},
        "spec": {"cluster": "example", "version": "v1.35", "minReplicas": 0, "maxReplicas": 3, **spec},
    }
    (tmp_path / "pool.yaml").write_text(yaml.safe_dump(pool))
    state = load_state([ROOT / "examples", tmp_path])
    record = next(r for r in state.sorted_pools() if r.name == "example-hashed")
    effective, denials, _ = resolve_pool(state, record)
    if spec is REFUSED_BY_THE_CHART:
        # resolution runs the chart's refusals first: no hash is asked of a pool it denies
        assert effective is None and [d.code for d in denials] == ["InvalidKubeletReservation"]
        return
    assert effective is not None, denials
    try:
        expected: str | None = template_suffix(render(effective))
        error = None
    except RenderError as exc:
        expected, error = None, str(exc)
    if error is not None:
        with pytest.raises(RenderError) as raised:
            template_hash(effective)
        assert str(raised.value) == error
    else:
        assert template_hash(effective) == expected
