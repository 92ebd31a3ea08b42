"""Flux's source API on the test bed: the chart the pools run, as Cozystack serves it.

Cozystack's ApplicationDefinition ``kubernetes-nodes`` (served here by a stand-in CRD that keeps every
field, as the application kinds are) names the ExternalArtifact its pools' releases take their chart
from; the ExternalArtifact CRD comes from source-controller's module in the Go module cache
(``source-controller`` of ``scripts/testbed.py``'s ``CRD_MODULES``: v1.8.0, the release of Flux
v2.8.0, which Cozystack installs). No source-controller runs
here: :class:`ArtifactServer` serves the packaged charts over HTTP on loopback, as source-controller
serves artifacts, and :func:`publish` writes the ExternalArtifact's ``status.artifact`` (its URL and
the sha256 of the bytes) as source-controller would.

The charts are packaged at test time from the upstream mirror (``shared/upstream-cozystack``), with
our chart gate applied (``patch -p1``) where a test wants the gated chart (:func:`packaged`): nothing
of them is stored in the repository.
"""

from __future__ import annotations

import datetime
import hashlib
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.shared import chart_path, package_chart

from .kube import Kube
from .testbed import crd_module

SOURCE = "source.toolkit.fluxcd.io/v1"
#: where Cozystack keeps the pools' chart source, and its name
ARTIFACT_NAMESPACE = "cozy-system"
ARTIFACT = "cozystack-kubernetes-nodes-application-kubevirt-kubernetes-nodes"


def source_crds() -> list[Path]:
    """The ExternalArtifact CRD file of source-controller's module in the Go module cache."""
    folder = crd_module("source-controller") / "config" / "crd" / "bases"
    return [folder / "source.toolkit.fluxcd.io_externalartifacts.yaml"]


def packaged(name: str = "main+gate") -> bytes:
    """The mirror's chart ``name`` (``main``, ``main+gate``...) packaged as source-controller serves it."""
    return package_chart(chart_path(name))


class ArtifactServer:
    """Serves published artifacts by path on ``127.0.0.1`` (a stand-in for source-controller's server)."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        #: seconds each answer waits (a slow source-controller)
        self.delay = 0.0
        files = self.files
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if server.delay:
                    time.sleep(server.delay)
                body = files.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/gzip")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def base(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def install_sources(kube: Kube) -> None:
    """The ApplicationDefinition ``kubernetes-nodes`` naming :data:`ARTIFACT` as its release's chart, and
    that ExternalArtifact (no artifact yet: :func:`publish` gives it one)."""
    if kube.find("v1", "Namespace", ARTIFACT_NAMESPACE) is None:
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ARTIFACT_NAMESPACE}})
    kube.apply(
        {
            "apiVersion": "cozystack.io/v1alpha1",
            "kind": "ApplicationDefinition",
            "metadata": {"name": "kubernetes-nodes"},
            "spec": {
                "application": {"kind": "KubernetesNodes", "plural": "kubernetesnodeses"},
                "release": {
                    "prefix": "kubernetes-nodes-",
                    "chartRef": {"kind": "ExternalArtifact", "name": ARTIFACT, "namespace": ARTIFACT_NAMESPACE},
                },
            },
        },
        manager="workerclass-e2e",
    )
    kube.apply(
        {
            "apiVersion": SOURCE,
            "kind": "ExternalArtifact",
            "metadata": {"name": ARTIFACT, "namespace": ARTIFACT_NAMESPACE},
            "spec": {},
        },
        manager="workerclass-e2e",
    )


def publish(kube: Kube, server: ArtifactServer, data: bytes, *, digest: str | None = None) -> str:
    """Serve ``data`` as the ExternalArtifact's new artifact and write its ``status.artifact`` as
    source-controller would (``digest``: what the status claims, the bytes' sha256 by default)."""
    sha = hashlib.sha256(data).hexdigest()
    path = f"/externalartifact/{ARTIFACT_NAMESPACE}/{ARTIFACT}/{sha}.tar.gz"
    server.files[path] = data
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    artifact = {
        "path": path.lstrip("/"),
        "url": server.base + path,
        "revision": f"latest@sha256:{sha}",
        "digest": digest or f"sha256:{sha}",
        "lastUpdateTime": now,
        "size": len(data),
    }
    kube.patch(
        SOURCE, "ExternalArtifact", ARTIFACT, {"status": {"artifact": artifact}}, namespace=ARTIFACT_NAMESPACE,
        sub="status",
    )  # fmt: skip
    return sha
