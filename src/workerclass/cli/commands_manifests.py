"""``manifests``: the install bundle (:mod:`workerclass.deploy`), or the package's Helm chart
(:mod:`workerclass.helm_chart`, ``--helm-chart DIR``) rendered from the same declarations."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from ..deploy import (
    DEFAULT_IMAGE,
    DEFAULT_NAMESPACE,
    MONITORING_NAMESPACE,
    SHARED_NAMESPACES,
    InstallOptions,
    install_manifests,
    to_yaml,
)
from .app import Command, app
from .output import ManifestFormat, fail

__all__ = ["manifests_command"]


def _write_chart(folder: Path) -> None:
    """The package's chart into ``folder``: every file written whole (a temporary file renamed over
    it), and the templates no longer generated removed, so the folder is the chart and nothing else."""
    from ..helm_chart import chart_files

    files = chart_files()
    try:
        for relative, text in files.items():
            path = folder / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(f".{path.name}.partial")
            partial.write_text(text, encoding="utf-8")
            partial.replace(path)
        templates = folder / "templates"
        for stale in sorted(templates.glob("*.yaml")):
            if f"templates/{stale.name}" not in files:
                stale.unlink()
    except OSError as error:
        fail(f"{folder}: cannot write the chart ({error.strerror or type(error).__name__})")


class NetworkPolicyKind(StrEnum):
    kubernetes = "kubernetes"
    cilium = "cilium"
    none = "none"


@app.command("manifests", cls=Command)
def manifests_command(
    namespace: Annotated[str, typer.Option("--namespace", "-n", help="Namespace of the webhook.")] = DEFAULT_NAMESPACE,
    image: Annotated[
        str, typer.Option("--image", help="Container image with the workerclass command.")
    ] = DEFAULT_IMAGE,
    replicas: Annotated[int, typer.Option("--replicas", min=1, help="Webhook replicas (a PDB keeps one up).")] = 2,
    ca_bundle: Annotated[
        Path | None,
        typer.Option(
            "--ca-bundle",
            metavar="FILE",
            help="PEM CA of a serving Secret you provide (workerclass-webhook-tls); without it cert-manager "
            "issues the certificate and injects its CA.",
        ),
    ] = None,
    timeout: Annotated[int, typer.Option("--timeout", min=1, max=30, help="Webhook timeoutSeconds.")] = 10,
    output: Annotated[
        ManifestFormat, typer.Option("--output", "-o", help="yaml: documents separated by ---; json: one v1 List.")
    ] = ManifestFormat.yaml,
    controller: Annotated[
        bool,
        typer.Option(
            "--with-controller/--without-controller",
            help="Also install the WorkerClass controller (two replicas, of which the holder of its Lease acts; "
            "its own least-privilege RBAC).",
        ),
    ] = True,
    network_policy: Annotated[
        NetworkPolicyKind,
        typer.Option(
            "--network-policy",
            help="kubernetes: a portable NetworkPolicy (the port only); cilium: a CiliumNetworkPolicy "
            "(API server and node only); none: no policy.",
        ),
    ] = NetworkPolicyKind.kubernetes,
    metrics_namespace: Annotated[
        str,
        typer.Option(
            "--metrics-namespace",
            metavar="NS",
            help="The namespace whose pods may scrape /metrics (the NetworkPolicy's only source for the "
            "metrics ports); empty: none may.",
        ),
    ] = MONITORING_NAMESPACE,
    create_namespace: Annotated[
        bool,
        typer.Option(
            "--create-namespace",
            help="Also a Namespace object, so that deleting the bundle deletes it: only for a namespace the "
            "install creates (refused for cozy-system, kube-system and the other shared ones).",
        ),
    ] = False,
    webhook_configurations: Annotated[
        bool,
        typer.Option(
            "--webhook-configurations/--no-webhook-configurations",
            help="Include the webhook configurations (apply them last, once the webhook is ready; remove "
            "them first: README, installing and uninstalling).",
        ),
    ] = True,
    crds: Annotated[
        bool,
        typer.Option(
            "--crds/--no-crds",
            help="Include the CRDs (WorkerClass, WorkerPlatform). Leave them out of a bundle you delete: "
            "deleting a CRD deletes every WorkerClass and the WorkerPlatform.",
        ),
    ] = True,
    chart_source: Annotated[
        str | None,
        typer.Option(
            "--chart-source",
            metavar="KIND/NAMESPACE/NAME",
            help="The Flux source the pools take their chart from (both servers' --chart-source), for a cluster "
            "without the ApplicationDefinition kubernetes-nodes; without it the servers follow that definition.",
            show_default=False,
        ),
    ] = None,
    helm_chart: Annotated[
        Path | None,
        typer.Option(
            "--helm-chart",
            metavar="DIR",
            help="Write the package's Helm chart (the same objects, every option above a value) into DIR "
            "instead of printing manifests.",
        ),
    ] = None,
) -> None:
    """The install manifests: the CRDs the package owns (WorkerClass, WorkerPlatform), RBAC, Service,
    Deployments, PodDisruptionBudget, NetworkPolicies, the controller, and the webhook configurations.

    No Namespace unless --create-namespace: the namespace exists first (kubectl create namespace
    cozy-workerclass), so deleting the bundle never deletes a namespace it did not create. The image
    defaults to the one the Dockerfile builds for this version (README: Building the image).
    """
    if helm_chart is not None:
        _write_chart(helm_chart)
        return
    bundle: bytes | None = None
    if ca_bundle is not None:
        try:
            bundle = ca_bundle.read_bytes()
        except OSError as error:
            fail(f"{ca_bundle!s}: cannot read ({error.strerror or type(error).__name__})")
        if b"-----BEGIN CERTIFICATE-----" not in bundle:
            fail(f"{ca_bundle!s}: not a PEM certificate bundle")
        if b"PRIVATE KEY" in bundle:
            fail(f"{ca_bundle!s}: holds a private key; give the CA certificate only")
    if chart_source is not None:
        from ..adapters.flux import parse_chart_source  # asyncio and the client: not for every command's start

        try:
            parse_chart_source(chart_source)
        except ValueError as error:
            fail(str(error))
    if create_namespace and namespace in SHARED_NAMESPACES:
        fail(f"--create-namespace: {namespace} exists in every cluster; the install must not create or own it")
    options = InstallOptions(
        namespace=namespace,
        image=image,
        replicas=replicas,
        ca_bundle=bundle,
        timeout_seconds=timeout,
        network_policy=network_policy.value,
        metrics_namespace=metrics_namespace or None,
        create_namespace=create_namespace,
        webhook_configurations=webhook_configurations,
        chart_source=chart_source,
    )
    objects = install_manifests(options, controller=controller, crds=crds)
    if output is ManifestFormat.json:
        data: dict[str, Any] = {"apiVersion": "v1", "kind": "List", "items": objects}
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        sys.stdout.write(to_yaml(objects))
