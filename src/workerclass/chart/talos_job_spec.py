"""The ``kubernetes-nodes.talos-reconcile-job-spec`` define: the exact text Helm renders.

The talos-reconcile Job's name ends in ``sha256(job spec text)[:6]``, so the define is kept here as
the literal text Helm renders (:data:`JOB_SPEC_TEMPLATE`, ``@{name}`` marking each substitution,
every ``{{ if }}``/``{{ with }}`` block reduced to one marker whose text the code supplies with the
chart's whitespace trimming). Owns that text, the ``$jobContext`` it reads (:class:`JobContext`),
the Job's name (:func:`job_name`) and the container's command script cut from the text as YAML
reads it (:func:`command_script`). Its edge: a :class:`JobContext` in, text out; the context is
built and the Job's documents are made in :mod:`.talos_job`.

About 230 of its lines are the literal define, kept whole: splitting the script would make a
chart upgrade harder to diff, not easier.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass

import yaml

from .kernel_modules import shell_escape
from .kubeyaml import k8s_load
from .quantity import go_quote_text, nindent

__all__ = [
    "GPU_NODE_LABELS",
    "JOB_SPEC_TEMPLATE",
    "POD_CIDR",
    "SERVICE_CIDR",
    "TENANT_CLUSTER_DOMAIN",
    "JobContext",
    "command_script",
    "image_scalar",
    "job_name",
    "job_spec_text",
]

#: ``$podCIDR``, ``$serviceCIDR`` and ``kubernetes.tenantClusterDomain``: fixed in the chart.
POD_CIDR = "10.243.0.0/16"
SERVICE_CIDR = "10.95.0.0/16"
TENANT_CLUSTER_DOMAIN = "cluster.local"

#: The ``kubernetes-nodes.talos-reconcile-job-spec`` define as Helm renders it (no trailing
#: newline). ``@{search_domains_extra}``, ``@{gpu_node_labels}``, ``@{kernel_modules}`` and
#: ``@{registries}`` stand for the chart's conditional blocks, each with its leading newline.
JOB_SPEC_TEMPLATE = r"""spec:
  backoffLimit: 30
  ttlSecondsAfterFinished: 600
  template:
    metadata:
      labels:
        cozystack.io/talos-reconcile: @{release_quoted}
    spec:
      restartPolicy: OnFailure
      serviceAccountName: @{release}-talos-reconcile
      containers:
        - name: kubectl
          image: "@{kubectl_image}"
          env:
            - name: RELEASE
              value: @{cluster_name_quoted}
            - name: NS
              value: @{namespace_quoted}
            - name: GROUP_NAME
              value: @{group_name_quoted}
            - name: TALOS_TOKEN
              valueFrom:
                secretKeyRef:
                  name: @{cluster_name}-talos-secrets
                  key: token
            - name: CLUSTER_ID
              valueFrom:
                secretKeyRef:
                  name: @{cluster_name}-talos-secrets
                  key: clusterId
            - name: CLUSTER_SECRET
              valueFrom:
                secretKeyRef:
                  name: @{cluster_name}-talos-secrets
                  key: clusterSecret
            - name: BOOTSTRAP_TOKEN
              valueFrom:
                secretKeyRef:
                  name: @{cluster_name}-talos-secrets
                  key: bootstrapToken
          command:
            - sh
            - -ec
            - |
              echo "[$(date -u +%H:%M:%S)] talos-reconcile/${GROUP_NAME}: waiting for Service ClusterIP, Talos CA, K8s CA, management CoreDNS"
              for i in $(seq 1 120); do
                SVC_IP=$(kubectl -n "$NS" get svc "$RELEASE" -o jsonpath='{.spec.clusterIP}' 2>/dev/null || true)
                TALOS_CA_B64=$(kubectl -n "$NS" get secret "${RELEASE}-talos-ca" -o jsonpath='{.data.tls\.crt}' 2>/dev/null || true)
                K8S_CA_B64=$(kubectl -n "$NS" get secret "${RELEASE}-ca" -o jsonpath='{.data.ca\.crt}' 2>/dev/null || true)
                COREDNS_IP=$(kubectl -n kube-system get svc kube-dns -o jsonpath='{.spec.clusterIP}' 2>/dev/null || true)
                if [ -n "$SVC_IP" ] && [ -n "$TALOS_CA_B64" ] && [ -n "$K8S_CA_B64" ] && [ -n "$COREDNS_IP" ]; then
                  break
                fi
                sleep 5
              done
              if [ -z "$SVC_IP" ] || [ -z "$TALOS_CA_B64" ] || [ -z "$K8S_CA_B64" ] || [ -z "$COREDNS_IP" ]; then
                echo "[$(date -u +%H:%M:%S)] timed out waiting for lookup inputs (svc='$SVC_IP' talos-ca=$([ -n "$TALOS_CA_B64" ] && echo ok) k8s-ca=$([ -n "$K8S_CA_B64" ] && echo ok) coredns='$COREDNS_IP')"
                exit 1
              fi
              echo "[$(date -u +%H:%M:%S)] inputs ready (svc=${SVC_IP} coredns=${COREDNS_IP})"

              # Patch KamajiControlPlane.spec.network.certSANs so the apiserver
              # TLS cert covers the live Service ClusterIP that Talos workers
              # dial. JSON-merge-patch is array-replace semantics, which is what
              # we want here — Kamaji owns the full SAN list.
              kubectl -n "$NS" patch kamajicontrolplane "$RELEASE" --type=merge --patch "$(
                cat <<JSON
              {"spec":{"network":{"certSANs":["${RELEASE}.${NS}.svc","${RELEASE}.${NS}.svc.@{dns_domain}","${SVC_IP}"]}}}
              JSON
              )"

              KCP_UID=$(kubectl -n "$NS" get kamajicontrolplane "$RELEASE" -o jsonpath='{.metadata.uid}')

              # Apply the TalosConfigTemplate. ownerReference back to the parent
              # KamajiControlPlane makes the standard Kubernetes garbage collector
              # clean it up when the parent cluster is deleted.
              cat <<EOF | kubectl apply -f -
              apiVersion: bootstrap.cluster.x-k8s.io/v1alpha3
              kind: TalosConfigTemplate
              metadata:
                name: ${RELEASE}-${GROUP_NAME}
                namespace: ${NS}
                ownerReferences:
                  - apiVersion: controlplane.cluster.x-k8s.io/v1alpha1
                    kind: KamajiControlPlane
                    name: ${RELEASE}
                    uid: ${KCP_UID}
                    controller: true
                    blockOwnerDeletion: true
              spec:
                template:
                  spec:
                    generateType: none
                    talosVersion: "@{talos_version_escaped}"
                    data: |
                      version: v1alpha1
                      persist: true
                      machine:
                        type: worker
                        token: ${TALOS_TOKEN}
                        network:
                          # Management CoreDNS as the worker's host
                          # resolver, plus management cluster search
                          # domains so partial names like
                          # "linstor-csi-nfs.cozy-linstor.svc" resolve
                          # the same way they do on Ubuntu+kubeadm
                          # workers in main (which got these via
                          # cloud-init/DHCP). Without searchDomains the
                          # kubevirt-csi NFS mount fails NXDOMAIN
                          # because mount.nfs hands the partial name
                          # to the resolver verbatim and management
                          # CoreDNS only knows full FQDNs.
                          #
                          # Tenant in-cluster pods are not affected:
                          # dnsPolicy: ClusterFirst routes them through
                          # kubelet --cluster-dns (tenant CoreDNS).
                          # This block only configures host-side
                          # resolution (kubelet mount syscalls, image
                          # pulls, pods opted out of cluster DNS).
                          nameservers:
                            - ${COREDNS_IP}
                          searchDomains:
                            - svc.@{mgmt_cluster_domain}
                            - @{mgmt_cluster_domain}@{search_domains_extra}
                          extraHostEntries:
                            - ip: ${SVC_IP}
                              aliases:
                                - ${RELEASE}.${NS}.svc
                                - ${RELEASE}.${NS}.svc.@{dns_domain}
                        ca:
                          crt: ${TALOS_CA_B64}@{gpu_node_labels}@{kernel_modules}
                        kubelet:
                          image: ghcr.io/siderolabs/kubelet:@{kubelet_version}
                          extraConfig:
                            systemReserved:
                              cpu: "@{system_reserved_cpu}"
                              memory: "@{system_reserved_memory}"
                            kubeReserved:
                              cpu: "@{kube_reserved_cpu}"
                              memory: "@{kube_reserved_memory}"
                            evictionHard:
                              memory.available: "@{eviction_hard_memory}"
                              nodefs.available: "10%"
                              imagefs.available: "15%"
                              nodefs.inodesFree: "5%"
                            evictionSoft:
                              memory.available: "@{eviction_soft_memory}"
                              nodefs.available: "15%"
                              imagefs.available: "20%"
                            evictionSoftGracePeriod:
                              memory.available: "1m30s"
                              nodefs.available: "1m30s"
                              imagefs.available: "1m30s"
                            evictionMinimumReclaim:
                              memory.available: "256Mi"
                        install:
                          disk: /dev/vda
                          image: @{installer_image}
                          wipe: false
                        features:
                          rbac: true
                          kubePrism:
                            enabled: false@{registries}
                      cluster:
                        id: ${CLUSTER_ID}
                        secret: ${CLUSTER_SECRET}
                        controlPlane:
                          endpoint: https://${RELEASE}.${NS}.svc:6443
                        clusterName: ${RELEASE}
                        network:
                          dnsDomain: @{dns_domain}
                          podSubnets:
                            - @{pod_cidr}
                          serviceSubnets:
                            - @{service_cidr}
                        token: ${BOOTSTRAP_TOKEN}
                        ca:
                          crt: ${K8S_CA_B64}
                        discovery:
                          enabled: true
                          registries:
                            kubernetes:
                              disabled: true
                            service:
                              disabled: true
              EOF
              echo "[$(date -u +%H:%M:%S)] TalosConfigTemplate ${RELEASE}-${GROUP_NAME} applied"
          resources:
            requests:
              cpu: 10m
              memory: 64Mi
            limits:
              cpu: 100m
              memory: 256Mi
          securityContext:
            allowPrivilegeEscalation: false
            capabilities:
              drop:
                - ALL
            readOnlyRootFilesystem: true
            runAsNonRoot: true
            runAsUser: 65532
            seccompProfile:
              type: RuntimeDefault"""  # noqa: E501

#: The ``{{- if .group.gpus }}`` block after ``ca.crt`` (joined after a newline).
GPU_NODE_LABELS = '''                        # GPU node-groups: label every node `gpu=on` so
                        # HAMi's hami-device-plugin DaemonSet (nodeSelector
                        # gpu=on) schedules and advertises nvidia.com/gpu.
                        # Without the label the plugin stays at DESIRED=0
                        # and no GPUs are exposed to the tenant. Mirrors
                        # main's kubeadm config (kubeletExtraArgs node-
                        # labels: "gpu=on") so HAMi behaviour is identical
                        # before and after the Talos worker rollover.
                        nodeLabels:
                          gpu: "on"'''


@dataclass(frozen=True, slots=True)
class JobContext:
    """``$jobContext``: every value the job-spec define reads, as the text it prints."""

    release: str
    namespace: str
    cluster_name: str
    group_name: str
    kubectl_image: str
    kubelet_version: str
    talos_version: str
    installer_image: str  # already escaped for the heredoc
    mgmt_cluster_domain: str
    gpus: bool
    system_reserved_cpu: str
    system_reserved_memory: str
    kube_reserved_cpu: str
    kube_reserved_memory: str
    eviction_hard_memory: str
    eviction_soft_memory: str
    registry_mirrors_yaml: str | None  # toYaml of talos.registryMirrors; None when it is empty
    kernel_modules_yaml: str  # toYaml of the modules list, "" when none
    dns_domain: str = TENANT_CLUSTER_DOMAIN
    pod_cidr: str = POD_CIDR
    service_cidr: str = SERVICE_CIDR


_MARKER = re.compile(r"@\{([a-z_]+)\}")


def job_spec_text(ctx: JobContext) -> str:
    """``include "kubernetes-nodes.talos-reconcile-job-spec" $jobContext``: the exact text Helm renders."""
    search_extra = ""
    if ctx.mgmt_cluster_domain != TENANT_CLUSTER_DOMAIN:
        search_extra = "\n" + " " * 28 + "- svc.cluster.local\n" + " " * 28 + "- cluster.local"
    kernel = ""
    if ctx.kernel_modules_yaml:
        kernel = "\n" + " " * 24 + "kernel:\n" + " " * 26 + "modules:" + nindent(ctx.kernel_modules_yaml, 28)
    registries = ""
    if ctx.registry_mirrors_yaml is not None:
        registries = (
            "\n"
            + " " * 24
            + "registries:\n"
            + " " * 26
            + "mirrors:"
            + nindent(shell_escape(ctx.registry_mirrors_yaml), 28)
        )
    fields = {
        "release": ctx.release,
        "release_quoted": go_quote_text(ctx.release),
        "namespace_quoted": go_quote_text(ctx.namespace),
        "cluster_name": ctx.cluster_name,
        "cluster_name_quoted": go_quote_text(ctx.cluster_name),
        "group_name_quoted": go_quote_text(ctx.group_name),
        "kubectl_image": ctx.kubectl_image,
        "dns_domain": ctx.dns_domain,
        "talos_version_escaped": shell_escape(ctx.talos_version),
        "mgmt_cluster_domain": ctx.mgmt_cluster_domain,
        "search_domains_extra": search_extra,
        "gpu_node_labels": "\n" + GPU_NODE_LABELS if ctx.gpus else "",
        "kernel_modules": kernel,
        "kubelet_version": ctx.kubelet_version,
        "system_reserved_cpu": ctx.system_reserved_cpu,
        "system_reserved_memory": ctx.system_reserved_memory,
        "kube_reserved_cpu": ctx.kube_reserved_cpu,
        "kube_reserved_memory": ctx.kube_reserved_memory,
        "eviction_hard_memory": ctx.eviction_hard_memory,
        "eviction_soft_memory": ctx.eviction_soft_memory,
        "installer_image": ctx.installer_image,
        "registries": registries,
        "pod_cidr": ctx.pod_cidr,
        "service_cidr": ctx.service_cidr,
    }
    parts = _template_parts()
    out = parts[:]
    for i in range(1, len(parts), 2):
        out[i] = fields[parts[i]]
    return "".join(out)


@functools.cache
def _template_parts() -> list[str]:
    """``JOB_SPEC_TEMPLATE`` split once at its markers: literal text at even, field names at odd places."""
    return _MARKER.split(JOB_SPEC_TEMPLATE)


#: an image that reads as itself in the double-quoted scalar: printable ASCII but ``"`` and ``\\``
_IMAGE_AS_WRITTEN = re.compile(r"[\x20\x21\x23-\x5b\x5d-\x7e]*")


@functools.lru_cache(maxsize=256)
def image_scalar(image: str) -> str | None:
    """What the container's ``image: "<image>"`` line holds once read (a double-quoted YAML scalar:
    its escapes apply, line breaks fold), or None when the value breaks that scalar or closes it
    early and writes keys of its own (Helm refuses such a manifest, or renders other keys)."""
    if _IMAGE_AS_WRITTEN.fullmatch(image):
        return image
    probe = (
        "spec:\n  template:\n    spec:\n      containers:\n        - name: kubectl\n"
        f'          image: "{image}"\n          env: []\n'
    )
    try:
        loaded = k8s_load(probe)
        container = loaded["spec"]["template"]["spec"]["containers"][0]
    except (yaml.YAMLError, KeyError, IndexError, TypeError):
        return None
    if not isinstance(container, dict) or set(container) != {"name", "image", "env"} or container["env"] != []:
        return None
    read = container["image"]
    return read if isinstance(read, str) else None


def job_name(release: str, group_name: str, spec_text: str) -> str:
    """``<release>-talos-reconcile-<pool>`` cut to 56 (one trailing dash trimmed), ``-<sha256[:6]>``."""
    base = f"{release}-talos-reconcile-{group_name}"[:56].removesuffix("-")
    return f"{base}-{hashlib.sha256(spec_text.encode()).hexdigest()[:6]}"


_SCRIPT_INDENT = 14


_SCRIPT_START = "\n" + " " * 12 + "- |\n"
_SCRIPT_END = "\n" + " " * 10 + "resources:\n"
_SCRIPT_LINE_START = "\n" + " " * _SCRIPT_INDENT
_SHORT_LINE = re.compile(rf"\n(?! {{{_SCRIPT_INDENT}}})[^\n]")


def command_script(spec_text: str) -> str:
    """The ``- |`` block of the container's command, as YAML reads it (indent 14, clip chomping).

    Every line of the block is either empty or indented by at least 14 (the template's script
    lines, and the toYaml lines ``nindent`` pads), so cutting 14 characters is YAML's reading."""
    start = spec_text.index(_SCRIPT_START) + len(_SCRIPT_START)
    block = "\n" + spec_text[start : spec_text.index(_SCRIPT_END, start)]
    if _SHORT_LINE.search(block) is None:
        # every line empty or indented by at least 14: cutting 14 from each is one replace
        return block.replace(_SCRIPT_LINE_START, "\n")[1:].rstrip("\n") + "\n"
    body = [line[_SCRIPT_INDENT:] for line in block[1:].split("\n")]
    while body and not body[-1]:
        body.pop()
    return "\n".join(body) + "\n"
