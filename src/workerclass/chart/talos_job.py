"""``talos-reconcile-job.yaml``: the talos-reconcile Job, its RBAC and network policy, and the
TalosConfigTemplate the Job applies.

Owns the seven documents of that template (ServiceAccount, Role, CiliumNetworkPolicy,
RoleBinding, ClusterRole, ClusterRoleBinding, Job, in the chart's order) and the worker machine
config the Job's heredoc ``kubectl apply``s. Its edge: a :class:`ChartInput` and the pool's
:class:`Sizing` in, parsed objects out; it performs no checks of its own beyond refusing
kernel modules and an installer image that would break out of the heredoc (the chart's
``fail``s are the ``checks`` module's).

The Job's name ends in ``sha256(job spec text)[:6]``, so the ``kubernetes-nodes.talos-reconcile-
job-spec`` define is kept here as the literal text Helm renders (:data:`JOB_SPEC_TEMPLATE`,
``@{name}`` marking each substitution, every ``{{ if }}``/``{{ with }}`` block reduced to one
marker whose text the code supplies with the chart's whitespace trimming). The Job object is
then built as data, with the container's command script cut from that same text, and the
TalosConfigTemplate is read back from the script's heredoc the way the shell expands it.

``registryMirrors`` enters the text through Helm's ``toYaml`` (sigs.k8s.io/yaml: JSON, re-read
and written by go-yaml v2), so :func:`to_yaml` ports that emitter for JSON data: its key order,
its plain / single / double-quoted / literal styles, folding at column 80, complex keys past
128 bytes, Go's JSON number formatting, and the empty result when go-yaml cannot re-read the
JSON. One thing cannot be matched: go-yaml's key comparison is not transitive for keys mixing
digit runs and letters (``a1b < a9 < a10 < a1b``), so Go's own order for such a key set depends
on its random map iteration; for every other key set the order is Go's.

Why this module is over the house ~500 lines: about 230 are the literal job spec (splitting the
script would make a chart upgrade harder to diff, not easier) and about 380 the go-yaml emitter,
which the hash needs byte for byte; it would sit better in a module of its own beside
``values.to_yaml``, outside this port's files.

Two inputs beyond the main chart: ``kernel_modules`` renders ``machine.kernel.modules`` exactly
as PR 3571's chart renders ``kernelModules`` (:func:`pr3571_kernel_modules` computes the PR's
effective list from pool values), and ``installer_image`` replaces
``<installerRepository>/<schematicID>:<version>`` (PR 3294: the worker image source chooses the
installer). With both ``None`` the output is exactly the main chart's.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import yaml

from .context import ChartInput
from .labels import common_labels
from .quantity import go_float_str, go_quote_text, go_str, parse_float, parse_int, truthy
from .sizing import Sizing
from .values import kubectl_image, version_map

__all__ = [
    "GPU_NODE_LABELS",
    "JOB_SPEC_TEMPLATE",
    "NVIDIA_KERNEL_MODULES",
    "InvalidInstallerImage",
    "InvalidKernelModule",
    "JobContext",
    "command_script",
    "coredns_name",
    "expand_heredoc",
    "go_quote",
    "job_context",
    "job_name",
    "job_spec_text",
    "kernel_modules_list",
    "pr3571_kernel_modules",
    "reconcile_name",
    "render_talos_job",
    "shell_escape",
    "talos_config_template",
    "to_yaml",
]

#: ``$podCIDR``, ``$serviceCIDR`` and ``kubernetes.tenantClusterDomain``: fixed in the chart.
POD_CIDR = "10.243.0.0/16"
SERVICE_CIDR = "10.95.0.0/16"
TENANT_CLUSTER_DOMAIN = "cluster.local"
#: ``$mgmtClusterDomain`` when ``_cluster`` names none.
DEFAULT_MANAGEMENT_DOMAIN = "cozy.local"

RBAC_GROUP = "rbac.authorization.k8s.io"

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


class InvalidKernelModule(ValueError):
    """PR 3571's ``invalid kernelModules name/parameter`` refusal (admission code InvalidKernelModule)."""


class InvalidInstallerImage(ValueError):
    """An installer image the heredoc cannot carry (PR 3571's schematicID denylist, applied to it)."""


# ----------------------------------------------------------------------------- Go and sprig text helpers


def shell_escape(text: str) -> str:
    """``replace "\\\\" "\\\\\\\\" | replace "$" "\\\\$" | replace "`" "\\\\`"``: literal inside an unquoted heredoc."""
    return text.replace("\\", "\\\\").replace("$", "\\$").replace("`", "\\`")


def go_quote(text: str) -> str:
    """sprig ``quote``: Go's ``%q`` (``strconv.Quote``) of the string."""
    return go_quote_text(text)


def nindent(text: str, width: int) -> str:
    """sprig ``nindent``: a newline, then every line (empty ones too) indented."""
    pad = " " * width
    return "\n" + pad + text.replace("\n", "\n" + pad)


# ----------------------------------------------------------------------------- toYaml (go-yaml v2)

#: Plain scalars go-yaml v2 resolves to a bool, null or float rather than a string (``<<`` has no
#: resolve hint in v2, so it stays a plain string).
# fmt: off
_V2_SPECIAL_WORDS = frozenset((
    "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "n", "N", "no", "No", "NO", "off", "Off", "OFF",
    "true", "True", "TRUE", "false", "False", "FALSE", "", "~", "null", "Null", "NULL",
    ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
))
# fmt: on
_V2_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_V2_BASE60 = re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?")
_V2_TIMESTAMP = re.compile(
    r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
    r"(?:(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)?"
)
_UINT64_MAX = (1 << 64) - 1


_GO_UINT = re.compile(r"0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*")


def _parse_uint(text: str) -> bool:
    """``strconv.ParseUint(text, 0, 64)`` succeeds (underscores already removed)."""
    if not _GO_UINT.fullmatch(text):
        return False
    if text[:2] in ("0x", "0X", "0o", "0O", "0b", "0B"):
        number = int(text, 0)
    elif len(text) > 1:
        number = int(text, 8) if text[0] == "0" else int(text)
    else:
        number = int(text)
    return number <= _UINT64_MAX


def _resolves_to_string(text: str) -> bool:
    """go-yaml v2 ``resolve("", text)`` yields ``!!str`` and the encoder's base-60 check passes."""
    if text in _V2_SPECIAL_WORDS:
        return False
    if _V2_BASE60.fullmatch(text):
        return False
    first = text[0]
    if first == ".":
        return parse_float(text) is None
    if first in "+-0123456789":
        if _V2_TIMESTAMP.fullmatch(text):
            return False
        plain = text.replace("_", "")
        if parse_int(plain) is not None or _parse_uint(plain) or _V2_FLOAT.fullmatch(plain):
            return False
    return True


def _is_printable(ch: str) -> bool:
    """go-yaml v2's emitter ``is_printable`` (its UTF-8 test has no 4-byte case, and no U+0085)."""
    code = ord(ch)
    return (
        code == 0x0A or 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xD7FF or (0xE000 <= code <= 0xFFFD and code != 0xFEFF)
    )


def _is_readable(ch: str) -> bool:
    """go-yaml v2's reader check: the characters a YAML stream may carry."""
    code = ord(ch)
    return (
        code in (0x09, 0x0A, 0x0D, 0x85)
        or 0x20 <= code <= 0x7E
        or 0xA0 <= code <= 0xD7FF
        or 0xE000 <= code <= 0xFFFD
        or 0x10000 <= code <= 0x10FFFF
    )


_BREAKS = "\r\n\x85\u2028\u2029"


@dataclass(frozen=True, slots=True)
class _Analysis:
    block_plain: bool
    single_quoted: bool
    block: bool


def _analyze(value: str) -> _Analysis:
    """go-yaml v2 ``yaml_emitter_analyze_scalar`` for block context (flow-only flags dropped)."""
    if not value:
        return _Analysis(block_plain=True, single_quoted=True, block=False)
    block_indicators = value.startswith(("---", "..."))
    special = leading_space = leading_break = trailing_space = trailing_break = False
    break_space = space_break = line_breaks = previous_space = previous_break = False
    preceded_by_whitespace = True
    for i, ch in enumerate(value):
        followed_by_whitespace = i + 1 >= len(value) or value[i + 1] in " \t" + _BREAKS
        if i == 0:
            if ch in "#,[]{}&*!|>'\"%@`" or (ch in "?:-" and followed_by_whitespace):
                block_indicators = True
        elif (ch == ":" and followed_by_whitespace) or (ch == "#" and preceded_by_whitespace):
            block_indicators = True
        if not _is_printable(ch):
            special = True
        if ch == " ":
            leading_space = leading_space or i == 0
            trailing_space = trailing_space or i == len(value) - 1
            break_space = break_space or previous_break
            previous_space, previous_break = True, False
        elif ch in _BREAKS:
            line_breaks = True
            leading_break = leading_break or i == 0
            trailing_break = trailing_break or i == len(value) - 1
            space_break = space_break or previous_space
            previous_space, previous_break = False, True
        else:
            previous_space = previous_break = False
        preceded_by_whitespace = ch in " \t" + _BREAKS
    block_plain = single_quoted = block = True
    if leading_space or leading_break or trailing_space or trailing_break or line_breaks or block_indicators:
        block_plain = False
    if trailing_space:
        block = False
    if break_space:
        block_plain = single_quoted = False
    if space_break or special:
        block_plain = single_quoted = block = False
    return _Analysis(block_plain=block_plain, single_quoted=single_quoted, block=block)


_DOUBLE_ESCAPES = {
    "\0": "\\0",
    "\a": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
    "\x1b": "\\e",
    '"': '\\"',
    "\\": "\\\\",
    "\x85": "\\N",
    "\xa0": "\\_",
    "\u2028": "\\L",
    "\u2029": "\\P",
}


#: go-yaml's ``best_width``: plain and quoted scalars fold at a space once the line is past it.
_BEST_WIDTH = 80
#: go-yaml writes a mapping key longer than this (in bytes) as a complex key (``? key``).
_SIMPLE_KEY_LIMIT = 128


def _fold(pieces: list[str], spaces: list[bool], column: int, indent: int, style: str) -> list[str]:
    """go-yaml's folding of a one-line scalar: at a space not after a space, once the column is past
    :data:`_BEST_WIDTH`, the space becomes a line break and an indent. ``pieces`` are the written
    forms of the characters (escapes, doubled quotes), ``spaces`` marks the spaces. Plain and
    single-quoted scalars never fold before a second space; quoted ones never at their first or
    last character; a double-quoted one escapes a space that follows the break."""
    lines: list[str] = []
    current: list[str] = []
    after_space = False
    last = len(pieces) - 1
    for i, piece in enumerate(pieces):
        if spaces[i]:
            next_space = i < last and spaces[i + 1]
            foldable = not after_space and column > _BEST_WIDTH
            if style != "plain":
                foldable = foldable and 0 < i < last
            if style != "double":
                foldable = foldable and not next_space
            if foldable:
                lines.append("".join(current))
                current = [" " * indent]
                column = indent
                if style == "double" and next_space:
                    current.append("\\")
                    column += 1
            else:
                current.append(piece)
                column += len(piece)
            after_space = True
        else:
            current.append(piece)
            column += len(piece)
            after_space = False
    lines.append("".join(current))
    return lines


def _double_pieces(value: str) -> list[str]:
    out = []
    for ch in value:
        code = ord(ch)
        if ch in _DOUBLE_ESCAPES:
            out.append(_DOUBLE_ESCAPES[ch])
        elif not _is_printable(ch) or code == 0xFEFF:
            out.append(f"\\x{code:02X}" if code <= 0xFF else f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}")
        else:
            out.append(ch)
    return out


def _string_lines(value: str, indent: int, column: int, *, key: bool) -> list[str]:
    """A string scalar as go-yaml v2 writes it, starting at ``column``; continuation lines and a
    literal block's lines at ``indent``. Keys never fold."""
    analysis = _analyze(value)
    if "\n" in value:
        style = "literal" if analysis.block and not key else "double"
    elif _resolves_to_string(value):
        style = "plain" if analysis.block_plain else "single" if analysis.single_quoted else "double"
    else:
        style = "double"
    if style == "plain":
        if key:
            return [value]
        return _fold(list(value), [ch == " " for ch in value], column, indent, "plain")
    if style == "single":
        pieces = ["''" if ch == "'" else ch for ch in value]
        if key:
            return ["'" + "".join(pieces) + "'"]
        lines = _fold(pieces, [ch == " " for ch in value], column + 1, indent, "single")
        lines[0] = "'" + lines[0]
        lines[-1] += "'"
        return lines
    if style == "double":
        pieces = _double_pieces(value)
        if key:
            return ['"' + "".join(pieces) + '"']
        lines = _fold(pieces, [ch == " " for ch in value], column + 1, indent, "double")
        lines[0] = '"' + lines[0]
        lines[-1] += '"'
        return lines
    header = "|"
    if value[0] == " " or value[0] in _BREAKS:
        header += "2"
    if value[-1] not in _BREAKS:
        header += "-"
    elif len(value) == 1 or value[-2] in _BREAKS:
        header += "+"
    body = re.split("\r\n|[\r\n\x85\u2028\u2029]", value)
    if value[-1] in _BREAKS:
        body = body[:-1]
    pad = " " * indent
    return [header, *(pad + line if line else "" for line in body)]


#: Pools repeat their mirrors' strings; each one's lines are worked out once.
_cached_string_lines = functools.lru_cache(maxsize=4096)(_string_lines)


def _number(value: int | float) -> str:
    """A JSON number after ``json.Marshal`` of Helm's float64 and go-yaml's re-read: integers (the
    shortest digits, as Go's JSON writes a float64) while int64 or uint64 holds them, else Go's %g."""
    number = float(value)
    if math.isnan(number) or math.isinf(number):
        return ".nan" if math.isnan(number) else (".inf" if number > 0 else "-.inf")
    if number.is_integer() and abs(number) < 1e21:
        whole = int(Decimal(repr(number)))
        if -(1 << 63) <= whole <= _UINT64_MAX:
            return str(whole)
    return go_float_str(number)


def _scalar_lines(value: Any, indent: int, column: int, *, key: bool = False) -> list[str]:
    if value is None:
        return ["null"]
    if isinstance(value, bool):
        return ["true" if value else "false"]
    if isinstance(value, (int, float)):
        return [_number(value)]
    if isinstance(value, Mapping) or (isinstance(value, Sequence) and not isinstance(value, str)):
        return ["{}" if isinstance(value, Mapping) else "[]"]
    return list(_cached_string_lines(str(value), indent, column, key=key))


def _key_less(a: str, b: str) -> bool:
    """go-yaml v2 ``keyList.Less`` for two string keys: letters after other runes, digit runs by value."""
    ar, br = a, b
    for i in range(min(len(ar), len(br))):
        if ar[i] == br[i]:
            continue
        al, bl = ar[i].isalpha(), br[i].isalpha()
        if al and bl:
            return ar[i] < br[i]
        if al or bl:
            return bl
        an = bn = 0
        if ar[i] == "0" or br[i] == "0":
            j = i - 1
            while j >= 0 and ar[j].isdigit():
                if ar[j] != "0":
                    an = bn = 1
                    break
                j -= 1
        ai = i
        while ai < len(ar) and ar[ai].isdigit():
            an = an * 10 + int(ar[ai])
            ai += 1
        bi = i
        while bi < len(br) and br[bi].isdigit():
            bn = bn * 10 + int(br[bi])
            bi += 1
        if an != bn:
            return an < bn
        if ai != bi:
            return ai < bi
        return ar[i] < br[i]
    return len(ar) < len(br)


def _compare_keys(a: str, b: str) -> int:
    return -1 if _key_less(a, b) else 1 if _key_less(b, a) else 0


def _sorted_keys(keys: list[str]) -> list[str]:
    return sorted(keys, key=functools.cmp_to_key(_compare_keys))


def _is_collection(value: Any) -> bool:
    return isinstance(value, Mapping) or (isinstance(value, Sequence) and not isinstance(value, str))


def _node_lines(value: Any, indent: int) -> list[str]:
    """A non-empty mapping or sequence in go-yaml v2's block style, its entries at ``indent``."""
    pad = " " * indent
    lines: list[str] = []
    if isinstance(value, Mapping):
        for raw_key in _sorted_keys([str(k) for k in value]):
            item = value[raw_key]
            simple = len(raw_key.encode()) <= _SIMPLE_KEY_LIMIT and "\n" not in raw_key
            key_lines = _scalar_lines(raw_key, indent + 2, indent + 2, key=simple)
            if not simple:  # "? key", then ": value" (a sequence value starts on the next line)
                lines.append(f"{pad}? {key_lines[0]}")
                lines.extend(key_lines[1:])
                if _is_collection(item) and item and not isinstance(item, Mapping):
                    lines.append(f"{pad}:")
                    lines.extend(_node_lines(item, indent))
                else:
                    lines.extend(_marked_lines(":", item, indent))
                continue
            key = key_lines[0]
            if _is_collection(item) and item:
                lines.append(f"{pad}{key}:")
                # go-yaml writes a sequence inside a mapping without indenting it.
                lines.extend(_node_lines(item, indent if not isinstance(item, Mapping) else indent + 2))
            else:
                first, *rest = _scalar_lines(item, indent + 2, indent + len(key) + 2)
                lines.append(f"{pad}{key}: {first}")
                lines.extend(rest)
        return lines
    for item in value:
        lines.extend(_marked_lines("-", item, indent))
    return lines


def _marked_lines(marker: str, item: Any, indent: int) -> list[str]:
    """``<marker> item`` at ``indent``: a sequence entry (``-``) or a complex key's value (``:``),
    the item's first line beside the marker and the rest indented under it."""
    pad = " " * indent
    if _is_collection(item) and item:
        nested = _node_lines(item, indent + 2)
        return [f"{pad}{marker} {nested[0][indent + 2 :]}", *nested[1:]]
    first, *rest = _scalar_lines(item, indent + 2, indent + 2)
    return [f"{pad}{marker} {first}", *rest]


def _json_leaves_unreadable(value: Any) -> bool:
    """A string ``json.Marshal`` writes raw although go-yaml's reader refuses it (DEL, C1 controls...).

    sigs.k8s.io/yaml re-reads the JSON text with go-yaml, which fails on such a character, and
    Helm's ``toYaml`` then returns the empty string."""
    if isinstance(value, Mapping):
        return any(_json_leaves_unreadable(k) or _json_leaves_unreadable(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_json_leaves_unreadable(v) for v in value)
    if isinstance(value, str):
        return any(ord(ch) >= 0x20 and not _is_readable(ch) for ch in value)
    return False


def to_yaml(value: Any) -> str:
    """Helm's ``toYaml`` of JSON data (go-yaml v2 through sigs.k8s.io/yaml), trailing newline trimmed."""
    if _json_leaves_unreadable(value):
        return ""
    if _is_collection(value) and value:
        return "\n".join(_node_lines(value, 0))
    return "\n".join(_scalar_lines(value, 2, 0))


# ----------------------------------------------------------------------------- kernel modules (PR 3571)

_MODULE_NAME = re.compile(r"[a-z0-9_-]+")
#: ``^[^[:cntrl:]\\s$\\x60\\\\'\\"]+$`` in RE2: no control characters, whitespace, $, `, \\, quotes.
_HEREDOC_SAFE = re.compile(r"[^\x00-\x1f\x7f\t\n\f\r $`\\'\"]+")

#: PR 3571's automatic set for a pool with an ``nvidia.com/*`` GPU and no ``kernelModules``.
NVIDIA_KERNEL_MODULES: tuple[dict[str, Any], ...] = (
    {"name": "nvidia", "parameters": ["NVreg_NvLinkDisable=1"]},
    {"name": "nvidia_uvm"},
    {"name": "nvidia_drm"},
    {"name": "nvidia_modeset"},
)


def pr3571_kernel_modules(values: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """PR 3571's three-state ``kernelModules``: a list sets it, ``[]`` opts out (None), unset lets
    an ``nvidia.com/*`` GPU pool get :data:`NVIDIA_KERNEL_MODULES` (else None)."""
    modules = values.get("kernelModules")
    if isinstance(modules, list):
        return [dict(m) if isinstance(m, Mapping) else {} for m in modules] or None
    gpus = values.get("gpus")
    for gpu in gpus if isinstance(gpus, list) else []:
        name = gpu.get("name") if isinstance(gpu, Mapping) else None
        if isinstance(name, str) and name.startswith("nvidia.com/"):
            return [dict(m) for m in NVIDIA_KERNEL_MODULES]
    return None


def kernel_modules_list(modules: Sequence[Mapping[str, Any]], group_name: str) -> list[dict[str, Any]]:
    """``kubernetes.kernelModules`` for an explicit list: rebuilt from validated name and parameters."""
    out: list[dict[str, Any]] = []
    for module in modules:
        raw_name = module.get("name")
        name = go_str(raw_name) if truthy(raw_name) else ""
        if not _MODULE_NAME.fullmatch(name):
            raise InvalidKernelModule(
                f"pool {group_name}: invalid kernelModules name {go_quote(name)} — must be a kernel module name "
                "matching ^[a-z0-9_-]+$ (e.g. nvidia_uvm)"
            )
        raw_params = module.get("parameters")
        params: list[str] = []
        for raw in raw_params if truthy(raw_params) and isinstance(raw_params, list) else []:
            param = go_str(raw)
            if not _HEREDOC_SAFE.fullmatch(param):
                raise InvalidKernelModule(
                    f"pool {group_name}: invalid kernelModules parameter {go_quote(param)} on module {go_quote(name)}"
                    " — must not contain $, a backtick, a backslash, quotes or whitespace (e.g. "
                    "NVreg_EnableGpuFirmware=1, or the semicolon-separated "
                    "NVreg_RegistryDwords=PowerMizerEnable=0x1;PerfLevelSrc=0x2222)"
                )
            params.append(param)
        entry: dict[str, Any] = {"name": name}
        if params:
            entry["parameters"] = params
        out.append(entry)
    return out


# ----------------------------------------------------------------------------- the job context


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


def _talos(inp: ChartInput) -> Mapping[str, Any]:
    talos = inp.values.get("talos")
    return talos if isinstance(talos, Mapping) else {}


def _installer_image(inp: ChartInput, talos_version: str, override: str | None) -> str:
    """``install.image``: ``<installerRepository>/<schematicID>:<version>``, each part escaped."""
    if override is not None:
        if not _HEREDOC_SAFE.fullmatch(override):
            raise InvalidInstallerImage(
                f"pool {inp.group_name}: invalid installer image {go_quote(override)} — must not contain $, a backtick,"
                " a backslash, quotes or whitespace (it is interpolated into a machine config applied through a"
                " shell heredoc)"
            )
        return shell_escape(override)
    talos = _talos(inp)
    repository = go_str(talos.get("installerRepository")).removesuffix("/")
    schematic = go_str(talos.get("schematicID"))
    return f"{shell_escape(repository)}/{shell_escape(schematic)}:{shell_escape(talos_version)}"


def _management_domain(inp: ChartInput) -> str:
    """``(index (.Values._cluster | default dict) "cluster-domain") | default "cozy.local"``."""
    cluster = inp.values.get("_cluster")
    domain = cluster.get("cluster-domain") if isinstance(cluster, Mapping) else None
    return go_str(domain) if truthy(domain) else DEFAULT_MANAGEMENT_DOMAIN


def job_context(
    inp: ChartInput,
    *,
    sizing: Sizing,
    kernel_modules: Sequence[Mapping[str, Any]] | None = None,
    installer_image: str | None = None,
) -> JobContext:
    """The template's ``$jobContext`` for ``inp`` (raises KeyError for a version outside the map)."""
    values = inp.values
    talos_version = go_str(_talos(inp).get("version"))
    images = values.get("images")
    kubectl = images.get("kubectl") if isinstance(images, Mapping) else None
    mirrors = _talos(inp).get("registryMirrors")
    modules = kernel_modules_list(kernel_modules, inp.group_name) if kernel_modules else []
    return JobContext(
        release=inp.release,
        namespace=inp.namespace,
        cluster_name=inp.cluster_name,
        group_name=inp.group_name,
        kubectl_image=go_str(kubectl) if truthy(kubectl) else kubectl_image(),
        kubelet_version=version_map()[go_str(values.get("version"))],
        talos_version=talos_version,
        installer_image=_installer_image(inp, talos_version, installer_image),
        mgmt_cluster_domain=_management_domain(inp),
        gpus=truthy(values.get("gpus")),
        system_reserved_cpu=sizing.system_reserved_cpu,
        system_reserved_memory=sizing.system_reserved_memory,
        kube_reserved_cpu=sizing.kube_reserved_cpu,
        kube_reserved_memory=sizing.kube_reserved_memory,
        eviction_hard_memory=sizing.eviction_hard_memory,
        eviction_soft_memory=sizing.eviction_soft_memory,
        registry_mirrors_yaml=to_yaml(mirrors) if truthy(mirrors) else None,
        kernel_modules_yaml=to_yaml(modules) if modules else "",
    )


# ----------------------------------------------------------------------------- the job spec text

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
        "release_quoted": go_quote(ctx.release),
        "namespace_quoted": go_quote(ctx.namespace),
        "cluster_name": ctx.cluster_name,
        "cluster_name_quoted": go_quote(ctx.cluster_name),
        "group_name_quoted": go_quote(ctx.group_name),
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


# ----------------------------------------------------------------------------- the documents


def reconcile_name(inp: ChartInput) -> str:
    return f"{inp.release}-talos-reconcile"


def coredns_name(inp: ChartInput) -> str:
    return f"{inp.namespace}-{inp.release}-talos-reconcile-coredns"


def _meta(inp: ChartInput, name: str, labels: Mapping[str, str], *, namespaced: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespaced:
        meta["namespace"] = inp.namespace
    meta["labels"] = dict(labels)
    return meta


def _rbac_documents(inp: ChartInput, labels: Mapping[str, str]) -> list[dict[str, Any]]:
    name = reconcile_name(inp)
    cluster = inp.cluster_name
    subject = {"kind": "ServiceAccount", "name": name, "namespace": inp.namespace}
    service_account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(inp, name, labels)}
    role = {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "Role",
        "metadata": _meta(inp, name, labels),
        "rules": [
            {"apiGroups": [""], "resources": ["services"], "resourceNames": [cluster], "verbs": ["get"]},
            {
                "apiGroups": [""],
                "resources": ["secrets"],
                "resourceNames": [f"{cluster}-talos-secrets", f"{cluster}-talos-ca", f"{cluster}-ca"],
                "verbs": ["get"],
            },
            {
                "apiGroups": ["controlplane.cluster.x-k8s.io"],
                "resources": ["kamajicontrolplanes"],
                "resourceNames": [cluster],
                "verbs": ["get", "patch"],
            },
            {
                "apiGroups": ["bootstrap.cluster.x-k8s.io"],
                "resources": ["talosconfigtemplates"],
                "verbs": ["get", "create", "patch", "update"],
            },
        ],
    }
    dns_ports = [{"port": "53", "protocol": "UDP"}, {"port": "53", "protocol": "TCP"}]
    network_policy = {
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumNetworkPolicy",
        "metadata": _meta(inp, name, labels),
        "spec": {
            "endpointSelector": {"matchLabels": {"cozystack.io/talos-reconcile": inp.release}},
            "egress": [
                {"toEntities": ["kube-apiserver"]},
                {
                    "toEndpoints": [
                        {"matchLabels": {"k8s:io.kubernetes.pod.namespace": "kube-system", "k8s:k8s-app": "kube-dns"}}
                    ],
                    "toPorts": [{"ports": dns_ports}],
                },
            ],
        },
    }
    role_binding = {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "RoleBinding",
        "metadata": _meta(inp, name, labels),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": name},
        "subjects": [subject],
    }
    coredns = coredns_name(inp)
    cluster_role = {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": _meta(inp, coredns, labels, namespaced=False),
        "rules": [{"apiGroups": [""], "resources": ["services"], "resourceNames": ["kube-dns"], "verbs": ["get"]}],
    }
    cluster_role_binding = {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": _meta(inp, coredns, labels, namespaced=False),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": coredns},
        "subjects": [dict(subject)],
    }
    return [service_account, role, network_policy, role_binding, cluster_role, cluster_role_binding]


_SECRET_ENV = (
    ("TALOS_TOKEN", "token"),
    ("CLUSTER_ID", "clusterId"),
    ("CLUSTER_SECRET", "clusterSecret"),
    ("BOOTSTRAP_TOKEN", "bootstrapToken"),
)


def _job(inp: ChartInput, ctx: JobContext, spec_text: str, labels: Mapping[str, str]) -> dict[str, Any]:
    secrets = f"{ctx.cluster_name}-talos-secrets"
    env: list[dict[str, Any]] = [
        {"name": "RELEASE", "value": ctx.cluster_name},
        {"name": "NS", "value": ctx.namespace},
        {"name": "GROUP_NAME", "value": ctx.group_name},
    ]
    env += [{"name": n, "valueFrom": {"secretKeyRef": {"name": secrets, "key": k}}} for n, k in _SECRET_ENV]
    container = {
        "name": "kubectl",
        "image": ctx.kubectl_image,
        "env": env,
        "command": ["sh", "-ec", command_script(spec_text)],
        "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"cpu": "100m", "memory": "256Mi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "runAsUser": 65532,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(inp, job_name(ctx.release, ctx.group_name, spec_text), labels),
        "spec": {
            "backoffLimit": 30,
            "ttlSecondsAfterFinished": 600,
            "template": {
                "metadata": {"labels": {"cozystack.io/talos-reconcile": ctx.release}},
                "spec": {
                    "restartPolicy": "OnFailure",
                    "serviceAccountName": reconcile_name(inp),
                    "containers": [container],
                },
            },
        },
    }


def render_talos_job(
    inp: ChartInput,
    *,
    sizing: Sizing,
    kernel_modules: Sequence[Mapping[str, Any]] | None = None,
    installer_image: str | None = None,
) -> list[dict[str, Any]]:
    """The documents of ``talos-reconcile-job.yaml`` in the chart's order, the Job last."""
    ctx = job_context(inp, sizing=sizing, kernel_modules=kernel_modules, installer_image=installer_image)
    labels = common_labels(inp)
    return [*_rbac_documents(inp, labels), _job(inp, ctx, job_spec_text(ctx), labels)]


# ----------------------------------------------------------------------------- the applied TalosConfigTemplate

_FAST_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_HEREDOC = re.compile(r"cat <<EOF \| kubectl apply -f -\n(.*?)\nEOF\n", re.S)
_EXPANSION = re.compile(r"(\\[$`\\])|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def expand_heredoc(body: str, env: Mapping[str, str]) -> str:
    """An unquoted heredoc as the shell expands it: ``\\$ \\` \\\\`` unescape, known variables fill in,
    the others (the Job's run-time inputs) stay ``${NAME}``."""

    def expand(match: re.Match[str]) -> str:
        if match.group(1):
            return match.group(1)[1]
        var = match.group(2) or match.group(3)
        return env.get(var, "${" + var + "}")

    return _EXPANSION.sub(expand, body)


def talos_config_template(
    inp: ChartInput,
    *,
    sizing: Sizing,
    kernel_modules: Sequence[Mapping[str, Any]] | None = None,
    installer_image: str | None = None,
) -> dict[str, Any]:
    """The ``bootstrap.cluster.x-k8s.io/v1alpha3`` TalosConfigTemplate the Job applies, run-time
    inputs (token, CA, IPs, KCP uid) left as ``${NAME}``."""
    ctx = job_context(inp, sizing=sizing, kernel_modules=kernel_modules, installer_image=installer_image)
    script = command_script(job_spec_text(ctx))
    match = _HEREDOC.search(script)
    if match is None:  # the literal template always carries it
        raise AssertionError("the talos-reconcile script has no TalosConfigTemplate heredoc")
    env = {"RELEASE": ctx.cluster_name, "NS": ctx.namespace, "GROUP_NAME": ctx.group_name}
    # Every plain scalar of the heredoc is the template's own text or a name starting with a letter
    # (kubernetes-..., tenant-...), which go-yaml v2 (values.k8s_load) and YAML 1.1 read alike; the
    # C loader is five times faster than k8s_load's pure-Python one. The oracle parses the heredoc
    # with its go-yaml v2 loader, and the tests compare every template with the oracle's.
    loaded = yaml.load(expand_heredoc(match.group(1), env), Loader=_FAST_LOADER)
    if not isinstance(loaded, dict):
        raise AssertionError("the TalosConfigTemplate heredoc is not a mapping")
    return loaded
