"""How Kairos's kubeadm provider reads a cloud-config's ``cluster:`` block, in Python, line by line
after its source (kairos-io/provider-kubeadm at ``da12c04``; its go.mod names another module path,
so it cannot be built from the Go module proxy; read it with ``fetch github:kairos-io/provider-kubeadm``
and ``git show da12c04:<file>``), down to the kubeadm discovery the worker's ``kubeadm join`` gets.

Only what decides a worker's join is followed; every step cites the line it follows. Kairos hands
the provider the ``cluster:`` block as kairos-sdk's ``clusterplugin.Cluster`` (kairos-sdk v0.0.21
``clusterplugin/config.go:41-69``: yaml keys ``cluster_token``, ``control_plane_host``, ``role``,
``config``, ...).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

import yaml

#: k8s.io/apimachinery's version.ParseSemantic, as far as a Kubernetes version goes
_SEMANTIC = re.compile(r"v?(\d+)\.(\d+)\.(\d+)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?")


class ProviderStops(Exception):
    """Where the provider exits (``logrus.Fatalf``) instead of joining."""


@dataclass(frozen=True)
class Join:
    """What ``kubeadm join`` gets from the provider for a worker."""

    role: str
    api_version: str  # the kubeadm API the provider prints the JoinConfiguration in
    bootstrap_token: dict[str, Any]  # joinConfiguration.discovery.bootstrapToken, as the provider leaves it
    kubernetes_version: str

    @property
    def pins_the_ca(self) -> bool:
        """kubeadm verifies the control plane's CA against a pinned hash: hashes given, none malformed,
        and verification not skipped (kubeadm's token discovery: caCertHashes or unsafeSkipCAVerification)."""
        hashes = self.bootstrap_token.get("caCertHashes") or []
        return (
            bool(hashes)
            and all(re.fullmatch(r"sha256:[0-9a-f]{64}", str(entry)) for entry in hashes)
            and not self.bootstrap_token.get("unsafeSkipCAVerification")
        )


def transform_token(cluster_token: str) -> str:
    """``utils/certs.go:16-21`` TransformToken: the sha256 of ``cluster_token`` as a kubeadm token."""
    digest = hashlib.sha256(cluster_token.encode()).hexdigest()
    return f"{digest[-6:]}.{digest[:16]}"


def read_join(cloud_config: str) -> Join:
    """The worker join the provider makes of ``cloud_config`` (raises :class:`ProviderStops`)."""
    document = yaml.safe_load(cloud_config) or {}
    cluster = document.get("cluster")
    if not isinstance(cluster, dict):
        raise ProviderStops("no cluster: block: the provider is not run")
    options = str(cluster.get("config") or "")  # clusterplugin.Cluster.Options, yaml key "config"

    # main.go:105-121 CreateClusterContext
    host = str(cluster.get("control_plane_host") or "")
    if not re.search(r":\d+$", host):  # main.go:108-110: net.SplitHostPort fails -> JoinHostPort(host, "6443")
        host = f"{host}:6443"
    role = str(cluster.get("role") or "")
    cluster_token = transform_token(str(cluster.get("cluster_token") or ""))  # main.go:117
    # main.go:120 and 202-208 getKubernetesVersion: yaml.Unmarshal(Options) into domain.ClusterOptions,
    # domain/cluster_context.go:21-25: clusterConfiguration.kubernetesVersion
    try:
        parsed_options = yaml.safe_load(options) if options else {}
    except yaml.YAMLError:
        parsed_options = {}
    cluster_configuration = (parsed_options or {}).get("clusterConfiguration") or {}
    kubernetes_version = str(cluster_configuration.get("kubernetesVersion") or "")

    # main.go:84-86 and utils/misc.go:20-26: ParseSemantic of the version, Fatalf when it fails
    match = _SEMANTIC.fullmatch(kubernetes_version)
    if match is None:
        raise ProviderStops(f"failed to parse kubernetes version {kubernetes_version!r}")
    beta4 = (int(match[1]), int(match[2]), int(match[3])) >= (1, 31, 0)  # main.go:87-93

    # main.go:156-163 (v1beta4) / 132-139 (v1beta3): kyaml.YAMLToJSON(Options), json.Unmarshal into
    # domain.KubeadmConfigBeta4/3 (domain/kubeadm_types.go:9-21), errors ignored
    try:
        config = json.loads(json.dumps(parsed_options or {}))
    except (TypeError, ValueError):
        config = {}
    join = config.get("joinConfiguration") if isinstance(config.get("joinConfiguration"), dict) else {}
    discovery = join.get("discovery") if isinstance(join.get("discovery"), dict) else {}
    bootstrap_token = discovery.get("bootstrapToken")

    # main.go:170-175: init joins nothing; controlplane and worker go to GetJoinYipStages
    if role not in ("controlplane", "worker"):
        raise ProviderStops(f"role {role!r} does not join")
    # stages/join.go:108-115 (v1beta4) and 70-77 (v1beta3): without a discovery of its own, the
    # hashed cluster_token, the control-plane host, and UnsafeSkipCAVerification: true
    if not isinstance(bootstrap_token, dict):
        bootstrap_token = {
            "token": cluster_token,
            "apiServerEndpoint": host,
            "unsafeSkipCAVerification": True,
        }
    return Join(
        role, "kubeadm.k8s.io/v1beta4" if beta4 else "kubeadm.k8s.io/v1beta3", bootstrap_token, kubernetes_version
    )
