"""A pool on a Proxmox cluster: an osImage is refused (a source conflict beside it too), and gpus
and storageClass, which the Proxmox machine template has no field for, are warned about.
"""

from __future__ import annotations

from tests.builders import make_pool, make_state, pairs, refused
from workerclass.admission import admit


def test_builtin_and_factory_together_are_refused_on_proxmox_too() -> None:
    pool = make_pool(
        cluster="pve", proxmox={"templateTags": ["talos"]}, kubevirt={"osImage": {"builtin": {}, "factory": {}}}
    )
    found = pairs(refused(make_state(), pool))
    assert ("OsImageOnProxmox", "spec.kubevirt.osImage") in found
    assert ("OsImageSourceConflict", "spec.kubevirt.osImage") in found


def test_gpus_and_storage_class_on_proxmox_are_warned_about() -> None:
    pool = make_pool(
        cluster="pve", proxmox={"templateTags": ["talos"]}, gpus=[{"name": "nvidia.com/GA100"}], storageClass="fast"
    )
    decision = admit(make_state(), "CREATE", pool)
    assert decision.allowed, [str(v) for v in decision.denials]
    assert any("gpus are not attached on Proxmox" in warning for warning in decision.warnings)
    assert any("storageClass is not used on Proxmox" in warning for warning in decision.warnings)
