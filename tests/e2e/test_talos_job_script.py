"""The talos-reconcile Job's own script, run for real against the test bed's API server.

No pod runs on the test bed, so the Job's container is run as its kubelet would run it: the command
(``sh -ec SCRIPT``, cut from the Job our render gives for a classless pool, which is the chart's own
text) with the Job's environment (the Secret keys resolved from the Secret it names), ``kubectl`` on
``PATH``, and a kubeconfig of the Job's ServiceAccount (a client certificate for
``system:serviceaccount:NS:NAME``: the RBAC the chart renders for it is all it may use). The runtime
inputs it waits for are created as the parent ``kubernetes`` release would have them: the
apiserver Service ``kubernetes-<cluster>`` with a ClusterIP, the Talos CA and Kubernetes CA
Secrets, the talos secrets, the management CoreDNS Service ``kube-system/kube-dns``, and the
KamajiControlPlane (a stand-in CRD: Kamaji's module is not on the bed).

What it shows: the script applies, as that ServiceAccount, exactly the TalosConfigTemplate our
render predicts (run-time inputs substituted) and patches the control plane's certSANs; run again
with a changed machine config it applies the new content under the same name, which is what
``plan`` calls ``TalosConfigImmutable``. Where the bed serves the Talos provider's webhook for
TalosConfigTemplates (CABPT, the issue-27 test bed), that second apply must be refused with the
provider's own message and the live template must keep its first content; without that webhook
the refusal half is skipped with its reason.

``kubectl``: ``$WORKERCLASS_KUBECTL``, else the bed's own (``Binaries.kubectl``, once the bed
builds it), else the test skips with that reason (fails under ``CI=true``, as the CABPT half does).
"""

from __future__ import annotations

import base64
import copy
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import _crd, _unavailable, example_objects, install_crds
from tests.e2e.kube import Kube
from tests.e2e.testbed import ApiServer, Binaries
from tests.ops.test_plan import extra, state
from workerclass.chart.talos_job import expand_heredoc
from workerclass.ops import plan
from workerclass.ops.plan import TALOS_CONFIG_IMMUTABLE
from workerclass.render import render
from workerclass.resolve import resolve_pool
from workerclass.state import State

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("chart_text")]

NS = "tenant-example"
CLUSTER = "kubernetes-example"
POOL = "example-jobrun"
TCT = f"{CLUSTER}-jobrun"
SVC_IP = "10.0.0.117"  # in the bed's service range
COREDNS_IP = "10.0.0.10"
KCP_CRD = _crd("controlplane.cluster.x-k8s.io", "KamajiControlPlane", "kamajicontrolplanes")
CABPT_MESSAGE = "TalosConfigTemplate.Spec is immutable"


def _kubectl(binaries: Binaries) -> str:
    configured = os.environ.get("WORKERCLASS_KUBECTL") or getattr(binaries, "kubectl", None)
    if not configured:
        _unavailable(
            "no kubectl: the test bed does not build one yet (k8s.io/kubernetes/cmd/kubectl); "
            "set WORKERCLASS_KUBECTL to a kubectl binary"
        )
    return str(configured)


def _pool(mirrors: dict[str, Any] | None = None) -> dict[str, Any]:
    (legacy,) = [obj for obj in example_objects("legacy-pool.yaml") if obj["kind"] == "KubernetesNodes"]
    pool = copy.deepcopy(legacy)
    pool["metadata"] = {"name": POOL, "namespace": NS}
    if mirrors:
        pool["spec"]["talos"]["registryMirrors"] = mirrors
    return pool


def _state(pool: dict[str, Any]) -> State:
    """The bundled examples (the parent cluster, the platform) with the pool added."""
    return extra(state(), pool)


def _render(state: State) -> list[dict[str, Any]]:
    (record,) = [record for record in state.sorted_pools() if record.name == POOL]
    effective, denials, _ = resolve_pool(state, record)
    assert effective is not None, denials
    return render(effective, talos_config_template=True)


def _one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [obj for obj in objects if obj["kind"] == kind]
    return found


def _secret(name: str, data: dict[str, str]) -> dict[str, Any]:
    encoded = {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NS}, "data": encoded}


def _service(name: str, namespace: str, ip: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterIP": ip, "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]},
    }


TALOS_SECRETS = {
    "token": "abcdef.0123456789abcdef",
    "clusterId": "cid",
    "clusterSecret": "csecret",
    "bootstrapToken": "b.t",
}


@pytest.fixture(scope="module")
def parent(kube: Kube, request: pytest.FixtureRequest) -> dict[str, str]:
    """The parent release's objects the script reads; returns the values they give the script."""
    install_crds(kube, [KCP_CRD])
    if kube.find("v1", "Namespace", "kube-system") is None:
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}})
    talos_ca, k8s_ca = "-----BEGIN CERTIFICATE-----\nTALOS\n", "-----BEGIN CERTIFICATE-----\nK8S\n"
    objects = [
        _service(CLUSTER, NS, SVC_IP),
        _service("kube-dns", "kube-system", COREDNS_IP),
        _secret(f"{CLUSTER}-talos-ca", {"tls.crt": talos_ca}),
        _secret(f"{CLUSTER}-ca", {"ca.crt": k8s_ca}),
        _secret(f"{CLUSTER}-talos-secrets", TALOS_SECRETS),
        {
            "apiVersion": "controlplane.cluster.x-k8s.io/v1alpha1",
            "kind": "KamajiControlPlane",
            "metadata": {"name": CLUSTER, "namespace": NS},
            "spec": {"network": {"certSANs": [f"{CLUSTER}.{NS}.svc"]}},
        },
    ]
    for obj in objects:
        kube.apply(obj, manager="cozystack-parent")
    request.addfinalizer(lambda: _cleanup(kube, objects))
    kcp = kube.get("controlplane.cluster.x-k8s.io/v1alpha1", "KamajiControlPlane", CLUSTER, NS)
    return {
        "SVC_IP": SVC_IP,
        "COREDNS_IP": COREDNS_IP,
        "TALOS_CA_B64": base64.b64encode(talos_ca.encode()).decode(),
        "K8S_CA_B64": base64.b64encode(k8s_ca.encode()).decode(),
        "KCP_UID": kcp["metadata"]["uid"],
    }


def _cleanup(kube: Kube, objects: list[dict[str, Any]]) -> None:
    tct = {
        "apiVersion": "bootstrap.cluster.x-k8s.io/v1alpha3",
        "kind": "TalosConfigTemplate",
        "metadata": {"name": TCT, "namespace": NS},
    }
    for obj in [tct, *objects]:
        meta = obj["metadata"]
        kube.delete(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))


def _install_rbac(kube: Kube, objects: list[dict[str, Any]]) -> None:
    """The talos-reconcile ServiceAccount and RBAC the chart renders (namespaced ones defaulted into
    the release's namespace, as Helm does)."""
    for obj in objects:
        kinds = ("ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")
        if obj["kind"] in kinds and "-talos-reconcile" in obj["metadata"]["name"]:
            obj = copy.deepcopy(obj)
            if not obj["kind"].startswith("Cluster"):
                obj["metadata"].setdefault("namespace", NS)
            kube.apply(obj, manager="helm-controller")


def _run_job(
    objects: list[dict[str, Any]], cluster: ApiServer, kubectl: str, tmp: Path
) -> subprocess.CompletedProcess[str]:
    """The Job's container, run as its kubelet would: its command, its env, its ServiceAccount."""
    job = _one(objects, "Job")
    spec = job["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    env: dict[str, str] = {}
    for item in container["env"]:
        if "value" in item:
            env[item["name"]] = item["value"]
        else:
            ref = item["valueFrom"]["secretKeyRef"]
            assert ref["name"] == f"{CLUSTER}-talos-secrets"
            env[item["name"]] = TALOS_SECRETS[ref["key"]]
    account = f"system:serviceaccount:{job['metadata']['namespace']}:{spec['serviceAccountName']}"
    # impersonation (a client certificate's CN cannot hold the 84-character name): every request is
    # authorized as the ServiceAccount, with the groups the API server gives one
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    wrapper = bin_dir / "kubectl"
    groups = " ".join(f"--as-group={group}" for group in ("system:serviceaccounts", f"system:serviceaccounts:{NS}"))
    wrapper.write_text(f'#!/bin/sh\nexec {shlex.quote(kubectl)} --as={account} {groups} "$@"\n')
    wrapper.chmod(0o755)
    env.update(
        PATH=f"{bin_dir}:/usr/bin:/bin",
        KUBECONFIG=str(cluster.admin.kubeconfig),
        HOME=str(tmp),
    )
    command = container["command"]
    assert command[:2] == ["sh", "-ec"], command
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)


def _expected(objects: list[dict[str, Any]], inputs: dict[str, str]) -> dict[str, Any]:
    """Our render's TalosConfigTemplate with the run-time inputs as the script fills them in."""
    template = _one(objects, "TalosConfigTemplate")
    env = {**inputs, **{name: TALOS_SECRETS[key] for name, key in _SECRET_VARS}}

    def fill(value: Any) -> Any:
        if isinstance(value, str):
            return expand_heredoc(value.replace("\\", "\\\\").replace("`", "\\`"), env)
        if isinstance(value, dict):
            return {key: fill(item) for key, item in value.items()}
        if isinstance(value, list):
            return [fill(item) for item in value]
        return value

    return fill(template)  # type: ignore[no-any-return]


_SECRET_VARS = (
    ("TALOS_TOKEN", "token"),
    ("CLUSTER_ID", "clusterId"),
    ("CLUSTER_SECRET", "clusterSecret"),
    ("BOOTSTRAP_TOKEN", "bootstrapToken"),
)


def _cabpt_webhook(kube: Kube) -> bool:
    """Whether a validating webhook for talosconfigtemplates is registered (CABPT's)."""
    configs = kube.list("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration")
    for config in configs:
        for hook in config.get("webhooks") or []:
            for rule in hook.get("rules") or []:
                if "talosconfigtemplates" in (rule.get("resources") or []):
                    return True
    return False


def test_the_jobs_script_applies_the_predicted_template_and_a_change_is_what_plan_calls_immutable(
    cluster: ApiServer, kube: Kube, binaries: Binaries, cabpt: object, parent: dict[str, str], tmp_path: Path
) -> None:
    kubectl = _kubectl(binaries)
    before_state, after_state = _state(_pool()), _state(_pool({"docker.io": {"endpoints": ["https://mirror.example"]}}))
    before, after = _render(before_state), _render(after_state)
    _install_rbac(kube, before)
    assert kube.find("bootstrap.cluster.x-k8s.io/v1alpha3", "TalosConfigTemplate", TCT, NS) is None

    first = _run_job(before, cluster, kubectl, tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    assert f"TalosConfigTemplate {TCT} applied" in first.stdout
    live = kube.get("bootstrap.cluster.x-k8s.io/v1alpha3", "TalosConfigTemplate", TCT, NS)
    expected = _expected(before, parent)
    assert live["spec"] == expected["spec"]
    assert [ref["uid"] for ref in live["metadata"]["ownerReferences"]] == [parent["KCP_UID"]]
    kcp = kube.get("controlplane.cluster.x-k8s.io/v1alpha1", "KamajiControlPlane", CLUSTER, NS)
    assert SVC_IP in kcp["spec"]["network"]["certSANs"]
    assert not re.search(r"\$\{[A-Z_]+\}", str(live["spec"])), "a run-time input left unfilled"

    # the same template again: a no-op, never refused
    again = _run_job(before, cluster, kubectl, tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr

    # the changed machine config: plan says the Talos provider refuses it
    row = {row.pool: row for row in plan(before_state, after_state).rows}[f"{NS}/{POOL}"]
    assert TALOS_CONFIG_IMMUTABLE in row.refused
    assert _one(after, "TalosConfigTemplate")["metadata"]["name"] == TCT
    assert _expected(after, parent)["spec"] != live["spec"]
    if not _cabpt_webhook(kube):
        _unavailable(
            "the Talos provider's webhook (CABPT) is not on this test bed: the refusal of the changed "
            "template cannot be shown (the script's first apply and the prediction were)"
        )
    changed = _run_job(after, cluster, kubectl, tmp_path)
    assert changed.returncode != 0
    assert CABPT_MESSAGE in changed.stderr, changed.stderr
    assert kube.get("bootstrap.cluster.x-k8s.io/v1alpha3", "TalosConfigTemplate", TCT, NS)["spec"] == live["spec"]


def _classified(pool: dict[str, Any]) -> dict[str, Any]:
    classified = copy.deepcopy(pool)
    classified["spec"]["workerClassName"] = "talos"  # the built-in class: nothing added to the config
    return classified


def test_a_classified_pools_change_is_a_new_template_the_talos_provider_takes(
    cluster: ApiServer, kube: Kube, binaries: Binaries, cabpt: object, parent: dict[str, str], tmp_path: Path
) -> None:
    """The controller's decision (render.talos_template.as_applied over the live templates), run
    for real: the handoff keeps the stable name (the same content), a changed config is a template
    named by its content, applied by the Job's own script through CABPT's webhook, and the
    MachineDeployment names it: what ``plan`` predicts (``replace``)."""
    from workerclass.render.talos_template import as_applied, configured_template

    kubectl = _kubectl(binaries)
    api = "bootstrap.cluster.x-k8s.io/v1alpha3"
    classless = _render(_state(_pool()))
    _install_rbac(kube, classless)
    if kube.find(api, "TalosConfigTemplate", TCT, NS) is None:  # the classless pool's Job has run
        assert _run_job(classless, cluster, kubectl, tmp_path).returncode == 0
    stable = kube.get(api, "TalosConfigTemplate", TCT, NS)

    # the handoff: the class reproduces the config, the running template is kept, nothing rolls
    handoff = _render(_state(_classified(_pool())))
    kept = as_applied(handoff, _one(handoff, "TalosConfigTemplate"), stable, stable)
    assert configured_template(kept) == TCT
    assert _run_job(kept, cluster, kubectl, tmp_path).returncode == 0  # the same content: CABPT allows it

    # a change: under the stable name CABPT would refuse it; the controller names it by its content
    mirrors = {"docker.io": {"endpoints": ["https://mirror.example"]}}
    before_state, after_state = _state(_classified(_pool())), _state(_classified(_pool(mirrors)))
    changed = _render(after_state)
    applied = as_applied(changed, _one(changed, "TalosConfigTemplate"), stable, stable)
    name = configured_template(applied)
    assert name is not None and name != TCT and name.startswith(f"{TCT}-")
    row = {row.pool: row for row in plan(before_state, after_state).rows}[f"{NS}/{POOL}"]
    assert (row.action, row.replace, row.refused) == ("replace", True, ())
    assert any(name in reason for reason in row.reasons), row.reasons  # plan names the same template
    try:
        run = _run_job(applied, cluster, kubectl, tmp_path)
        assert run.returncode == 0, run.stdout + run.stderr
        assert f"TalosConfigTemplate {name} applied" in run.stdout
        live = kube.get(api, "TalosConfigTemplate", name, NS)
        expected = _expected(_rename(changed, name), parent)
        assert live["spec"] == expected["spec"]
        assert kube.get(api, "TalosConfigTemplate", TCT, NS)["spec"] == stable["spec"]  # the old one as it was
    finally:
        kube.delete(api, "TalosConfigTemplate", name, NS)


def _rename(objects: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    from workerclass.render.talos_template import rename_template

    return rename_template(objects, name)
