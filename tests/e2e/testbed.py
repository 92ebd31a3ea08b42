"""The test bed's processes: etcd, kube-apiserver and the Cluster API managers, started from the
binaries ``make testbed`` builds (``scripts/testbed.py``), on loopback with random ports.

Nothing here is a fixture (``conftest.py`` holds those): a PKI made with ``cryptography`` (a CA, the
API server's serving certificate, client certificates for each identity, a service-account key),
the command lines, a readiness wait, and a teardown that ends every process even when a test
failed. The flags follow what controller-runtime's envtest gives a test API server (RBAC
authorization, the ServiceAccount admission plugin off, a service-account issuer and key), plus an
audit log of every write, which the tests count requests with.

Identities are client certificates: the API server takes the certificate's CN as the user name and
its O as groups, so a certificate for ``system:serviceaccount:NS:NAME`` is that ServiceAccount to
RBAC and the bundle's own ClusterRoleBindings apply to it unchanged.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import ipaddress
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "testbed.py"


# ------------------------------------------------------------------ where the binaries are


def _script_module() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("workerclass_testbed_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Binaries:
    kube_apiserver: Path
    etcd: Path
    #: ``None`` when not built: the tests that need it skip (fail under CI=true)
    capi_manager: Path | None
    kubernetes_version: str
    cluster_api_version: str
    kube_controller_manager: Path | None
    #: built from the same Kubernetes module (the Job scripts' tests run it); ``None`` when not built
    kubectl: Path | None = None
    #: the Talos bootstrap provider's manager (its TalosConfigTemplate webhook); ``None`` when not built
    cabpt_manager: Path | None = None
    cabpt_version: str = ""
    #: the KubeVirt provider's manager (its KubevirtMachineTemplate webhook); ``None`` when not built
    capk_manager: Path | None = None
    capk_version: str = ""


def find_binaries() -> tuple[Binaries | None, str]:
    """The built test bed, or ``None`` and why it is missing (Go absent, not built yet)."""
    script = _script_module()
    gover = script.go_version()
    if gover is None:
        return None, "Go is not installed, so the test bed (kube-apiserver, etcd, Cluster API) cannot be built"
    paths = script.binaries(gover)
    missing = [name for name in ("kube-apiserver", "etcd") if not paths[name].exists()]
    if missing:
        return (
            None,
            f"the test bed is not built ({', '.join(missing)} missing under {script.cache_root()}): run 'make testbed'",
        )
    return (
        Binaries(
            paths["kube-apiserver"],
            paths["etcd"],
            paths["cluster-api"] if paths["cluster-api"].exists() else None,
            script.KUBERNETES,
            script.CLUSTER_API,
            paths["kube-controller-manager"] if paths["kube-controller-manager"].exists() else None,
            paths["kubectl"] if paths["kubectl"].exists() else None,
            paths["cabpt"] if paths["cabpt"].exists() else None,
            script.CABPT,
            paths["capk"] if paths["capk"].exists() else None,
            script.CAPK,
        ),
        "",
    )


def module_dir(module: str, version: str) -> Path:
    """A module's folder in the Go module cache (``go mod download``: the CRDs upstream publishes)."""
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "GOFLAGS": "-mod=mod", "GOWORK": "off"},
        cwd=SCRIPT.parent,
    )
    if out.returncode != 0:
        raise RuntimeError(f"go mod download {module}@{version} failed: {out.stderr.strip()[-400:]}")
    return Path(json.loads(out.stdout)["Dir"])


def crd_module(name: str) -> Path:
    """The folder of the module ``scripts/testbed.py`` lists for NAME's CRDs (``CRD_MODULES``:
    ``cluster-api``, ``cabpt``, ``capk``, ``cilium``, ``source-controller``, ``helm-controller``)."""
    return module_dir(*_crd_modules()[name])


def _crd_modules() -> dict[str, tuple[str, str]]:
    global _CRD_MODULES
    if _CRD_MODULES is None:
        _CRD_MODULES = dict(_script_module().CRD_MODULES)
    return _CRD_MODULES


_CRD_MODULES: dict[str, tuple[str, str]] | None = None


def crd_labels(folder: Path) -> dict[str, str]:
    """The ``commonLabels`` of a provider module's ``config/crd/kustomization.yaml``: the contract
    labels (``cluster.x-k8s.io/v1beta1: <version>``) its release adds to its CRDs, by which Cluster
    API finds a template CRD. The bare files of ``config/crd/bases`` lack them."""
    kustomization = yaml.safe_load((folder / "config" / "crd" / "kustomization.yaml").read_text()) or {}
    return {str(key): str(value) for key, value in (kustomization.get("commonLabels") or {}).items()}


# ------------------------------------------------------------------ PKI


def _name(common: str, organizations: Sequence[str] = ()) -> x509.Name:
    parts = [x509.NameAttribute(NameOID.COMMON_NAME, common)]
    parts += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    return x509.Name(parts)


def _pem_key(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@dataclass
class CertAuthority:
    """A self-signed CA that issues serving and client certificates for one test session."""

    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate

    @classmethod
    def create(cls, common: str = "workerclass-e2e-ca") -> CertAuthority:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(common))
            .issuer_name(_name(common))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                    key_encipherment=False, data_encipherment=False, key_agreement=False,
                    encipher_only=False, decipher_only=False,
                ),
                critical=True,
            )
            .sign(key, hashes.SHA256())
        )  # fmt: skip
        return cls(key, cert)

    @property
    def pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def issue(
        self,
        common: str,
        *,
        organizations: Sequence[str] = (),
        hosts: Sequence[str] = (),
        client: bool = False,
    ) -> tuple[bytes, bytes]:
        """(certificate PEM, key PEM): a serving certificate for ``hosts`` or a client certificate."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common, organizations))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH if client else x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]
                ),
                critical=False,
            )
        )
        if hosts:
            names: list[x509.GeneralName] = []
            for host in hosts:
                try:
                    names.append(x509.IPAddress(ipaddress.ip_address(host)))
                except ValueError:
                    names.append(x509.DNSName(host))
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)

    def write_pair(self, folder: Path, stem: str, pair: tuple[bytes, bytes]) -> tuple[Path, Path]:
        folder.mkdir(parents=True, exist_ok=True)
        cert, key = folder / f"{stem}.crt", folder / f"{stem}.key"
        cert.write_bytes(pair[0])
        key.write_bytes(pair[1])
        key.chmod(0o600)
        return cert, key


# ------------------------------------------------------------------ processes


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Process:
    """A child process with its log file; ``stop`` ends it (SIGTERM, then SIGKILL) and its group."""

    name: str
    args: list[str]
    log: Path
    env: dict[str, str] | None = None
    popen: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> Process:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:
            self.popen = subprocess.Popen(
                self.args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=self.env, start_new_session=True,
            )  # fmt: skip
        return self

    @property
    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds; the exit status (``None``: not running)."""
        if self.popen is None:
            return None
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(5)
        code = self.popen.returncode
        self.popen = None
        return code

    def kill(self) -> None:
        """SIGKILL at once (a crashed pod): no drain, no goodbye."""
        if self.popen is not None and self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(5)
        self.popen = None

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def wait_until(predicate: Any, *, timeout: float, interval: float = 0.1, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except Exception as error:
            last = error
        else:
            if last:
                return last
        time.sleep(interval)
    raise TimeoutError(f"{what} not reached in {timeout:g}s (last: {last!r})")


def kubeconfig(server: str, ca: bytes, cert: bytes, key: bytes, user: str) -> str:
    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "testbed", "cluster": {"server": server, "certificate-authority-data": b64(ca)}}],
            "users": [{"name": user, "user": {"client-certificate-data": b64(cert), "client-key-data": b64(key)}}],
            "contexts": [{"name": user, "context": {"cluster": "testbed", "user": user}}],
            "current-context": user,
        },
        sort_keys=False,
    )


#: users whose lists and watches the audit log records as well as their writes
COUNTED_READERS = ("workerclass-e2e-reader", "workerclass-e2e-lister")
#: users whose watches the audit log records (the controller: one list-watch per resource, counted)
COUNTED_WATCHERS = ("system:serviceaccount:cozy-workerclass:workerclass-controller",)

AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        # reads too, for the identities whose list/watch pace a test counts
        {"level": "Metadata", "users": list(COUNTED_READERS), "verbs": ["list", "watch"]},
        {"level": "Metadata", "users": list(COUNTED_WATCHERS), "verbs": ["watch"]},
        # Secrets' writes without their bodies; every other write with its request body, so that a
        # test can search what reached the API server for a secret (a Kairos pool's join token
        # must reach nothing but its bootstrap data Secret)
        {
            "level": "Metadata",
            "resources": [{"group": "", "resources": ["secrets"]}],
            "verbs": ["create", "update", "patch", "delete", "deletecollection"],
        },
        {"level": "Request", "verbs": ["create", "update", "patch"]},
        {"level": "Metadata", "verbs": ["delete", "deletecollection"]},
        {"level": "None"},
    ],
}


@dataclass
class Identity:
    """A user of the test API server: a kubeconfig file and its client certificate pair."""

    user: str
    kubeconfig: Path
    cert: bytes
    key: bytes


@dataclass
class ApiServer:
    """etcd and kube-apiserver on loopback, the PKI, and one kubeconfig per identity."""

    folder: Path
    binaries: Binaries
    ca: CertAuthority = field(default_factory=CertAuthority.create)
    port: int = field(default_factory=free_port)
    etcd: Process | None = None
    apiserver: Process | None = None
    controller_manager: Process | None = None
    identities: dict[str, Identity] = field(default_factory=dict)
    started_in: float = 0.0

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def audit_log(self) -> Path:
        return self.folder / "audit.log"

    def identity(self, user: str, groups: Sequence[str] = ()) -> Identity:
        """The kubeconfig of ``user`` (made once); ``system:masters`` in ``groups`` makes an admin."""
        if user not in self.identities:
            cert, key = self.ca.issue(user, organizations=groups, client=True)
            path = self.folder / "kubeconfigs" / f"{user.replace(':', '_')}.yaml"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(kubeconfig(self.url, self.ca.pem, cert, key, user))
            path.chmod(0o600)
            self.identities[user] = Identity(user, path, cert, key)
        return self.identities[user]

    @property
    def admin(self) -> Identity:
        return self.identity("workerclass-e2e-admin", ["system:masters"])

    def start(self, *, timeout: float = 120.0) -> ApiServer:
        started = time.monotonic()
        pki = self.folder / "pki"
        serving = self.ca.write_pair(
            pki, "apiserver", self.ca.issue("kube-apiserver", hosts=["127.0.0.1", "localhost"])
        )
        (pki / "ca.crt").write_bytes(self.ca.pem)
        account_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        (pki / "sa.key").write_bytes(_pem_key(account_key))
        (pki / "sa.pub").write_bytes(
            account_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        (self.folder / "audit-policy.yaml").write_text(yaml.safe_dump(AUDIT_POLICY))
        etcd_client, etcd_peer = free_port(), free_port()
        self.etcd = Process(
            "etcd",
            [
                str(self.binaries.etcd),
                "--name=testbed",
                f"--data-dir={self.folder / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{etcd_client}",
                f"--advertise-client-urls=http://127.0.0.1:{etcd_client}",
                f"--listen-peer-urls=http://127.0.0.1:{etcd_peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}",
                f"--initial-cluster=testbed=http://127.0.0.1:{etcd_peer}",
                "--unsafe-no-fsync=true",
                "--quota-backend-bytes=8589934592",  # 20,000 pools pass the 2 GiB default
                "--log-level=warn",
            ],
            self.folder / "etcd.log",
        ).start()
        self.apiserver = Process(
            "kube-apiserver",
            [
                str(self.binaries.kube_apiserver),
                f"--etcd-servers=http://127.0.0.1:{etcd_client}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self.port}",
                f"--tls-cert-file={serving[0]}",
                f"--tls-private-key-file={serving[1]}",
                f"--client-ca-file={pki / 'ca.crt'}",
                f"--cert-dir={pki}",
                "--authorization-mode=RBAC",
                "--disable-admission-plugins=ServiceAccount",
                "--service-cluster-ip-range=10.0.0.0/24",
                f"--service-account-issuer={self.url}",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                "--allow-privileged=true",
                "--endpoint-reconciler-type=none",  # loopback cannot be a kubernetes Service endpoint
                f"--audit-policy-file={self.folder / 'audit-policy.yaml'}",
                f"--audit-log-path={self.audit_log}",
                "--audit-log-format=json",
                "--audit-log-mode=blocking",
                # never rotated (its writer rotates at 100 MB unless told): a mark counts lines of one file
                "--audit-log-maxsize=1048576",
                "--profiling=false",
                "--v=0",
            ],
            self.folder / "kube-apiserver.log",
        ).start()
        try:
            wait_until(self._ready, timeout=timeout, interval=0.2, what="kube-apiserver /readyz")
        except TimeoutError:
            logs = f"\n--- etcd ---\n{self.etcd.tail()}\n--- kube-apiserver ---\n{self.apiserver.tail()}"
            self.stop()
            raise RuntimeError("the test API server did not become ready" + logs) from None
        self.started_in = time.monotonic() - started
        return self

    def ssl_context(self, identity: Identity | None = None) -> ssl.SSLContext:
        identity = identity or self.admin
        context = ssl.create_default_context(cadata=self.ca.pem.decode())
        folder = self.folder / "pki" / "clients"
        cert, key = self.ca.write_pair(folder, identity.user.replace(":", "_"), (identity.cert, identity.key))
        context.load_cert_chain(str(cert), str(key))
        return context

    def _ready(self) -> bool:
        if self.apiserver is None or not self.apiserver.running:
            raise RuntimeError("kube-apiserver exited:\n" + (self.apiserver.tail() if self.apiserver else ""))
        try:
            with urllib.request.urlopen(f"{self.url}/readyz", context=self.ssl_context(), timeout=2) as answer:
                return bool(answer.status == 200)
        except (urllib.error.URLError, ConnectionError, TimeoutError, ssl.SSLError):
            return False

    def start_garbage_collector(self) -> Process:
        """kube-controller-manager with its garbage collector alone: owner references delete what
        they own, as in a cluster (no other controller runs: Deployments never get pods)."""
        assert self.binaries.kube_controller_manager is not None, "kube-controller-manager is not built"
        if self.controller_manager is None or not self.controller_manager.running:
            self.controller_manager = Process(
                "kube-controller-manager",
                [
                    str(self.binaries.kube_controller_manager),
                    f"--kubeconfig={self.admin.kubeconfig}",
                    f"--authentication-kubeconfig={self.admin.kubeconfig}",
                    f"--authorization-kubeconfig={self.admin.kubeconfig}",
                    "--controllers=garbagecollector",
                    "--leader-elect=false",
                    "--bind-address=127.0.0.1",
                    f"--secure-port={free_port()}",
                    f"--cert-dir={self.folder / 'kcm-certs'}",
                    "--concurrent-gc-syncs=5",
                    "--v=0",
                ],
                self.folder / "kube-controller-manager.log",
            ).start()
        return self.controller_manager

    def stop(self) -> None:
        for process in (self.controller_manager, self.apiserver, self.etcd):
            if process is not None:
                process.stop()

    def _audit_lines(self, since: int = 0) -> Iterator[str]:
        """The audit log's complete lines from line ``since`` on, read as a stream (the log of a
        20,000-pool bench is gigabytes: never held whole). A last line still being written (no line
        break yet) is not one: it counts once it is complete, at the index :meth:`audit_mark` gives."""
        try:
            log = self.audit_log.open("rb")
        except OSError:
            return
        with log:
            for index, raw in enumerate(log):
                if index >= since and raw.endswith(b"\n"):
                    yield raw.decode("utf-8", errors="replace")

    def audit_events(self, since: int = 0) -> Iterator[dict[str, Any]]:
        """Every request the API server audited so far (one JSON object per line), from line ``since`` on."""
        for line in self._audit_lines(since):
            with contextlib.suppress(ValueError):
                yield json.loads(line)

    def requests_by(self, user: str, *, since: int = 0, verbs: Sequence[str] = ()) -> list[dict[str, Any]]:
        """Audited requests ``user`` sent, from audit line ``since`` on (one event per request:
        a long-running watch logs ``ResponseStarted`` and ``ResponseComplete``; the first is counted)."""
        return list(self.iter_requests_by(user, since=since, verbs=verbs))

    def iter_requests_by(self, user: str, *, since: int = 0, verbs: Sequence[str] = ()) -> Iterator[dict[str, Any]]:
        """:meth:`requests_by` one event at a time."""
        # a line that does not hold the user's name as JSON writes it is not parsed (a name JSON
        # would escape is looked for in every line)
        plain = user.isascii() and user.isprintable() and not any(c in user for c in '"\\<>&')
        needle = json.dumps(user) if plain else ""
        seen: set[str] = set()
        for line in self._audit_lines(since):
            if needle not in line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if (event.get("user") or {}).get("username") != user or event.get("auditID") in seen:
                continue
            if verbs and event.get("verb") not in verbs:
                continue
            seen.add(event.get("auditID", ""))
            yield event

    def requests_by_verb(self, verb: str, *, since: int = 0) -> list[dict[str, Any]]:
        """Audited requests of any user with ``verb`` (one per request), from audit line ``since`` on."""
        seen: set[str] = set()
        out = []
        for event in self.audit_events(since):
            if event.get("verb") != verb or event.get("auditID") in seen:
                continue
            seen.add(event.get("auditID", ""))
            out.append(event)
        return out

    def writes_by(self, user: str, *, since: int = 0) -> list[dict[str, Any]]:
        """Write requests (create/update/patch/delete) ``user`` sent, from audit line ``since`` on."""
        return self.requests_by(user, since=since, verbs=("create", "update", "patch", "delete", "deletecollection"))

    def audit_mark(self) -> int:
        """The audit log's complete lines so far: the ``since`` of what comes after."""
        return sum(1 for _ in self._audit_lines())


def workerclass_command() -> list[str]:
    """The ``workerclass`` console script of the environment running the tests."""
    script = Path(sys.executable).with_name("workerclass")
    return [str(script)] if script.exists() else [sys.executable, "-m", "workerclass"]


def chart_option() -> list[str]:
    """``--chart`` with the mirror's main chart with our gate (``$WORKERCLASS_SHARED`` or ``../shared``):
    rendering a Talos pool reads the talos-reconcile Job's text from the chart (the controller's,
    render's, plan's), and pools may select a class on a gated chart."""
    from tests.shared import chart_path

    return ["--chart", str(chart_path("main+gate"))]


def rmtree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
