"""The whole chart for one pool, in the oracle's default order.

Owns :func:`render_chart`: refuse with :class:`ChartRefused` when :func:`chart_failures` finds
any, else the documents as ``cozystack-render --order chart`` lists them: template files in path
order (``dashboard-resourcemap.yaml``, ``nodegroup.yaml``, ``talos-reconcile-job.yaml``),
documents in file order; then, for a factory disk with a CA, PR 3797's ConfigMap (its template
``templates/talos/image-factory-ca.yaml`` sorts after the Job's file); then the
TalosConfigTemplate when asked for. The dashboard RBAC and the Job come from A2's
:mod:`.dashboard` and :mod:`.talos_job`.

Also owns the class-era inputs a classified pool adds to the chart's: the disk constructors
(:func:`factory_disk`, :func:`golden_disk`), PR 3797's image-factory CA (its guards and its
ConfigMap) and the installer image's character rule.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..violations import Violation
from .checks import Prechecked, chart_failures
from .context import ChartInput, ChartRefused
from .dashboard import render_dashboard
from .kernel_modules import SHELL_SAFE, kernel_module_failures
from .nodegroup import (
    Disk,
    chart_hash,
    chart_http_url,
    kmt_template,
    kubevirtmachinetemplate_text,
    nodegroup_objects,
)
from .scope import scope_failures
from .sizing import Sizing, sizing
from .talos_job import applied_template, job_context, job_documents
from .talos_job_spec import job_spec
from .unpin import render_unpin_hook
from .values import app_version, chart_version


def render_chart(
    inp: ChartInput,
    *,
    talos_config_template: bool = False,
    disk: Disk | None = None,
    kernel_modules: Sequence[Any] | None = None,
    installer_image: str | None = None,
    image_factory_ca: str | None = None,
    chart_text: bool = True,
    checked: Prechecked | None = None,
) -> list[dict[str, Any]]:
    """Every object the chart renders for ``inp`` (plus the class-era inputs), or :class:`ChartRefused`.

    The talos-reconcile Job (and the TalosConfigTemplate it applies) and PR 3315's unpin hook come
    from the chart's own text: without the chart's files they raise
    :class:`~.source.ChartTextMissing`; ``chart_text=False`` leaves those templates' documents out
    (a Kairos pool has none of them, a template hash needs none).

    ``disk``: the class-era disk source (None: the chart's own HTTP URL). ``image_factory_ca``:
    a PEM bundle for an HTTP disk; it adds ``certConfigMap`` to the disk and the CA ConfigMap
    (whitespace-only is unset; a private key or anything but certificate blocks is refused).
    ``kernel_modules`` and ``installer_image`` go to the Job's machine config; they are checked
    with PR 3571's character rules first (both reach the Job's shell heredoc).

    ``checked``: what resolution's checks established (:class:`~.checks.Prechecked`): the chart's
    checks it proved are not run again (all of them when they passed on this very input, all but
    the rewritten ones when they passed on one that agrees elsewhere); the class-era inputs are
    still checked.
    """
    if not inp.chart.known:
        return _by_helm(inp, (disk, kernel_modules, installer_image, image_factory_ca), talos_config_template)
    size, ca, disk = _checked(inp, disk, kernel_modules, installer_image, image_factory_ca, checked=checked)
    objects: list[dict[str, Any]] = list(render_dashboard(inp))
    objects += nodegroup_objects(inp, size, disk)
    if chart_text and inp.chart.rules.unpin_hook:
        objects += render_unpin_hook(inp)
    ctx = spec = None
    if chart_text:  # the Job and the TalosConfigTemplate it applies: one context, one text of the define
        ctx = job_context(inp, sizing=size, kernel_modules=kernel_modules, installer_image=installer_image)
        spec = job_spec(ctx, inp.chart)
        objects += job_documents(inp, ctx, spec)
    if ca is not None and disk is not None and disk.kind == "http":
        objects.append(image_factory_ca_configmap(inp, ca))
    if talos_config_template and ctx is not None and spec is not None:
        objects.append(applied_template(ctx, spec))
    return objects


def _by_helm(inp: ChartInput, class_era: tuple[Any, ...], talos_config_template: bool) -> list[dict[str, Any]]:
    """A chart the port was not proved against: Helm's own engine renders it, or it is refused; so
    is a render that leaves the pool's scope (:func:`~.scope.scope_failures`)."""
    engine = inp.chart.engine
    reason = None
    if engine is None:
        reason = "is not one workerclass was proved against, and Helm's engine (the helm extra) is not installed"
    elif any(value not in (None, [], "") for value in class_era) or talos_config_template:
        reason = (
            "is rendered by Helm's engine, which has no place for the class-era settings or the TalosConfigTemplate: "
            "those need a chart the port was proved against"
        )
    if reason is not None or engine is None:
        raise ChartRefused([Violation("Invalid", "spec", f"the chart ({inp.chart.describe()}) {reason}")])
    objects = engine(inp.supplied_values, release=inp.release, namespace=inp.namespace, instancetypes=inp.instancetypes)
    # the engine sees the tenant's values: only what lies in the pool's scope may reach the controller
    failures = scope_failures(objects, namespace=inp.namespace, release=inp.release)
    if failures:
        raise ChartRefused(failures)
    return objects


def _checked(
    inp: ChartInput,
    disk: Disk | None,
    kernel_modules: Sequence[Any] | None,
    installer_image: str | None,
    image_factory_ca: str | None,
    *,
    checked: Prechecked | None = None,
) -> tuple[Sizing, str | None, Disk | None]:
    """The refusals first (:class:`ChartRefused`), then the sizing, the trimmed CA and the disk
    (``checked``: as :func:`render_chart`'s)."""
    if checked is None:
        size = sizing(inp)
        failures = chart_failures(inp, size=size)
    else:
        size = checked.size
        failures = [] if checked.whole else chart_failures(inp, size=size, rest_passed=True)
    failures += image_factory_ca_failures(image_factory_ca)
    failures += kernel_module_failures(kernel_modules or [], pool=inp.group_name, field="kernelModules")
    failures += installer_image_failures(installer_image)
    if failures:
        raise ChartRefused(failures)
    ca = image_factory_ca.strip() if image_factory_ca and image_factory_ca.strip() else None
    if ca is not None and (disk is None or disk.kind == "http"):
        base = disk if disk is not None else factory_disk(inp)
        disk = Disk.http(base.url, cert_configmap=image_factory_ca_configmap_name(inp))
    return size, ca, disk


def kubevirtmachinetemplate_hash(
    inp: ChartInput,
    *,
    disk: Disk | None = None,
    kernel_modules: Sequence[Any] | None = None,
    installer_image: str | None = None,
    image_factory_ca: str | None = None,
    checked: Prechecked | None = None,
) -> str:
    """The hash in the name of the KubevirtMachineTemplate :func:`render_chart` renders for the same
    arguments (or :class:`ChartRefused`, as it): only the define's text is built and hashed (a chart
    the port does not know: Helm's engine renders it, and the name gives the hash). ``checked``: as
    :func:`render_chart`'s."""
    if not inp.chart.known:
        objects = _by_helm(inp, (disk, kernel_modules, installer_image, image_factory_ca), False)
        names = [str(obj["metadata"]["name"]) for obj in objects if obj.get("kind") == "KubevirtMachineTemplate"]
        return names[0].rsplit("-", 1)[-1] if names else ""
    size, _, disk = _checked(inp, disk, kernel_modules, installer_image, image_factory_ca, checked=checked)
    return chart_hash(kubevirtmachinetemplate_text(inp, size, disk))


def kubevirtmachinetemplate_spec(inp: ChartInput, *, checked: Prechecked | None = None) -> dict[str, Any]:
    """The ``spec.template`` of the KubevirtMachineTemplate :func:`render_chart` renders for
    ``inp`` with no class-era inputs (or :class:`ChartRefused`, as it), a new dict, without the
    other objects nor (where the values allow) the define's text its name hashes. ``checked``: as
    :func:`render_chart`'s."""
    size, _, disk = _checked(inp, None, None, None, None, checked=checked)
    return kmt_template(inp, size, disk)


# ------------------------------------------------------------------ class-era disk sources


def image_factory_ca_configmap_name(inp: ChartInput) -> str:
    """PR 3797's ``<release>-talos-factory-ca`` with the parent's release ``kubernetes-<cluster>``
    replaced by the pool's objects' name ``kubernetes-<cluster>-<pool>`` (trunc 63, no trailing -)."""
    return f"{inp.cluster_name}-{inp.group_name}-talos-factory-ca"[:63].rstrip("-")


def factory_disk(inp: ChartInput, *, url: str | None = None, with_ca: bool = False) -> Disk:
    """An HTTP import from ``url`` (default the chart's own), with PR 3797's certConfigMap if ``with_ca``."""
    return Disk(
        kind="http",
        url=chart_http_url(inp) if url is None else url,
        cert_configmap=image_factory_ca_configmap_name(inp) if with_ca else None,
    )


def golden_disk(schematic_id: str, version: str, namespace: str = "cozy-public") -> Disk:
    """PR 3294's clone of the golden ``talos-worker-<schematicID>-<version>``."""
    return Disk(kind="pvc", pvc_namespace=namespace, pvc_name=f"talos-worker-{schematic_id}-{version}")


def image_factory_ca_configmap(inp: ChartInput, ca_pem: str) -> dict[str, Any]:
    """PR 3797's CA ConfigMap (``data.ca.pem``: the trimmed PEM, a literal block with one newline).

    Labels are ``kubernetes.labels`` of this chart; the namespace is written out (PR 3797 leaves
    it to Helm's release namespace, which is the same namespace).
    """
    version = app_version(inp.chart.upstream)
    labels = {
        "helm.sh/chart": f"kubernetes-nodes-{chart_version(inp.chart)}".replace("+", "_")[:63].rstrip("-"),
        "app.kubernetes.io/name": "kubernetes-nodes",
        "app.kubernetes.io/instance": inp.release,
        "app.kubernetes.io/version": version,
        "app.kubernetes.io/managed-by": "Helm",
    }
    if not version:
        del labels["app.kubernetes.io/version"]
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": image_factory_ca_configmap_name(inp), "namespace": inp.namespace, "labels": labels},
        "data": {"ca.pem": ca_pem.strip() + "\n"},
    }


_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY", re.IGNORECASE)
_PEM_BUNDLE = re.compile(
    r"[\t\n\f\r ]*(-----BEGIN CERTIFICATE-----[\t\n\f\r ]+[A-Za-z0-9+/=][A-Za-z0-9+/=\t\n\f\r ]*"
    r"-----END CERTIFICATE-----[\t\n\f\r ]*)+",
    re.IGNORECASE,
)


def image_factory_ca_failures(ca_pem: str | None, field: str = "spec.talos.imageFactoryCA") -> list[Violation]:
    """PR 3797's guards on ``talos.imageFactoryCA`` (``kubernetes.talosImageFactoryCA``).

    Empty or whitespace-only is unset (no failure). A private key, or anything but complete
    certificate blocks, is refused; the value itself is never quoted.
    """
    if not ca_pem or not ca_pem.strip():
        return []
    if _PRIVATE_KEY.search(ca_pem):
        return [
            Violation(
                "Invalid",
                field,
                "talos.imageFactoryCA must not contain private key material: it holds the CA the image factory "
                "is verified against, and the rendered ConfigMap is readable by everything that can read the namespace",
            )
        ]
    if not _PEM_BUNDLE.fullmatch(ca_pem):
        return [
            Violation(
                "Invalid",
                field,
                "talos.imageFactoryCA must contain one or more complete PEM certificate blocks "
                "(BEGIN/END CERTIFICATE) and nothing else",
            )
        ]
    return []


def installer_image_failures(image: str | None, field: str = "installerImage") -> list[Violation]:
    """The installer image reaches the Job's heredoc like the schematicID: the same character rule."""
    if image is None or SHELL_SAFE.fullmatch(image):
        return []
    return [
        Violation(
            "Invalid",
            field,
            "the installer image must not contain $, a backtick, a backslash, quotes, whitespace or control "
            "characters (e.g. factory.talos.dev/installer/<schematicID>:v1.13.6)",
        )
    ]
