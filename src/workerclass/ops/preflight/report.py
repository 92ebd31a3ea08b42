"""The whole verdict: every check over an installation, in :data:`CHECK_ORDER`.

What is read: the webhook configurations (all of them: other webhooks that match the pools matter
to ``otherWebhooks``), the Services, Deployments (with status) and PodDisruptionBudgets, and, for a
``namespaceSelector``, the Namespaces and the namespaces of the served kinds' objects (KubernetesNodes,
ComputePlanes); from a State, its ``auxiliary`` records and those objects. Nothing else: no class,
platform or parent cluster. A configuration kind the reader could not list (:class:`~.source.Source`)
replaces the coverage of its paths by a failure naming the list.

Its edge: plain objects (or a State) in, a :class:`Preflight` out; no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...chart.identity import known_identities
from ...render.templates import KAIROS_DATA_SECRET_PATH, KAIROS_PROVIDER_PATH
from ...rules.pools import ungated
from ...state import State
from ..charts import release_charts
from ..providers import KAIROS_TEMPLATE_CRD, kairos_kubeadm
from .certificates import ServingCertificate, ca_bundle, chain_checks
from .expectations import EXPECTED, SLOW_TIMEOUT, Expectation
from .failure import failure_policy, other_webhooks, outage
from .matching import Namespaces, coverage, overmatching, path_check, selector_checks, wire_checks
from .objects import FoundWebhook, as_map, found_webhooks, kind_of, metadata_of, name_of, namespace_of, partition
from .readiness import Installation, readiness
from .source import FOLDER, Source
from .verdicts import CHECK_ORDER, Check, Preflight

__all__ = ["HELD_KINDS", "NAMESPACE_LABEL", "preflight", "preflight_objects"]

#: the served kinds that live in namespaces: a namespaceSelector is judged by where their objects are
HELD_KINDS = frozenset(expectation.kind for expectation in EXPECTED if expectation.namespaced)
#: the label the API server gives every namespace (its name), which a namespaceSelector may use
NAMESPACE_LABEL = "kubernetes.io/metadata.name"


def _per_webhook(
    name: str, webhooks: list[FoundWebhook], findings: Iterable[Check | None], summary: str
) -> list[Check]:
    """The findings of one per-webhook check, or one ok row saying what held for all of them."""
    found = [finding for finding in findings if finding is not None]
    if found or not webhooks:
        return found
    return [Check(name, "ok", summary)]


def _namespaces(listed: list[Mapping[str, Any]], source: Source) -> Namespaces:
    labels: dict[str, Mapping[str, Any]] = {}
    holding: dict[str, set[str]] = {}
    for obj in listed:
        kind = kind_of(obj)
        if kind == "Namespace":
            name = name_of(obj)
            labels[name] = {NAMESPACE_LABEL: name, **as_map(metadata_of(obj).get("labels"))}
        elif kind in HELD_KINDS:
            holding.setdefault(kind, set()).add(namespace_of(obj))
    return Namespaces(labels, {kind: frozenset(names) for kind, names in holding.items()}, source)


def _coverage(expectation: Expectation, webhooks: list[FoundWebhook], source: Source) -> Check:
    unread = source.unread(expectation.configuration)
    if unread is None:
        return coverage(expectation, webhooks)
    return Check(
        "matching",
        "fail",
        f"{unread.text}: whether {expectation.label} {', '.join(expectation.operations)} are sent to "
        f"{expectation.path} (and which other webhooks match them) cannot be verified",
    )


def kairos_provider(listed: Sequence[Mapping[str, Any]], source: Source) -> list[Check]:
    """Which bootstrap path the cluster's Kairos pools get, and why (:func:`~..providers.kairos_path`):
    the provider path where the Kairos bootstrap provider's template takes ``distribution: kubeadm``,
    else the data-secret path. Live, the CRD is always read; a folder without the CRD is read as a
    cluster without it (Cozystack as it ships), and says so."""
    crds = [obj for obj in listed if kind_of(obj) == "CustomResourceDefinition" and name_of(obj) == KAIROS_TEMPLATE_CRD]
    unread = source.unread("CustomResourceDefinition")
    if unread is not None:
        return [Check("kairosProvider", "warn", f"{unread.text}: which bootstrap path Kairos pools get is unknown")]
    support = kairos_kubeadm(crds[0] if crds else None)
    where = "" if crds or source.live else " (STATE holds no such CRD: read as a cluster without it)"
    if support.supported:
        message = (
            f"{KAIROS_PROVIDER_PATH} path: the Kairos bootstrap provider takes the kubeadm path, so Kairos pools get "
            "a KairosConfigTemplate"
        )
    else:
        message = (
            f"{KAIROS_DATA_SECRET_PATH} path: {support.message}{where}; Kairos pools get their kubeadm join as a "
            "cloud-config Secret their MachineDeployment names in bootstrap.dataSecretName (no bootstrap provider)"
        )
    return [Check("kairosProvider", "ok", message, object=f"CustomResourceDefinition {KAIROS_TEMPLATE_CRD}")]


def preflight_objects(
    objects: Iterable[Mapping[str, Any]],
    source: Source = FOLDER,
    certificates: Sequence[ServingCertificate] = (),
) -> Preflight:
    """Check webhook-installation objects (any kinds; others are ignored) read from ``source``;
    ``certificates``: the serving certificates read live (:func:`.certificates.chain_checks`)."""
    listed = list(objects)
    everything = found_webhooks(listed)
    webhooks, others = partition(everything)
    found = Installation(
        services=[o for o in listed if kind_of(o) == "Service"],
        deployments=[o for o in listed if kind_of(o) == "Deployment"],
        budgets=[o for o in listed if kind_of(o) == "PodDisruptionBudget"],
        source=source,
    )
    namespaces = _namespaces(listed, source)
    count = f"all {len(webhooks)} workerclass webhooks"
    checks: list[Check] = [_coverage(expectation, webhooks, source) for expectation in EXPECTED]
    for webhook in webhooks:
        checks.extend(overmatching(webhook))
    checks += _per_webhook("path", webhooks, map(path_check, webhooks), f"{count} send to served paths")
    wire = [finding for webhook in webhooks for finding in wire_checks(webhook)]
    checks += _per_webhook(
        "admissionReviewVersions",
        webhooks,
        [c for c in wire if c.check == "admissionReviewVersions"],
        f"{count} accept admission.k8s.io/v1",
    )
    checks += _per_webhook(
        "sideEffects", webhooks, [c for c in wire if c.check == "sideEffects"], f"{count} declare no side effects"
    )
    checks += _per_webhook(
        "timeoutSeconds",
        webhooks,
        [c for c in wire if c.check == "timeoutSeconds"],
        f"{count} time out within {SLOW_TIMEOUT}s",
    )
    checks += _per_webhook(
        "selectors",
        webhooks,
        [finding for webhook in webhooks for finding in selector_checks(webhook, namespaces)],
        f"{count} match every namespace and object",
    )
    checks += _per_webhook("failurePolicy", webhooks, map(failure_policy, webhooks), f"{count} have failurePolicy Fail")
    checks.append(outage(webhooks))
    checks += other_webhooks(others)
    checks += _per_webhook(
        "caBundle",
        webhooks,
        [*(ca_bundle(webhook, source) for webhook in webhooks), *chain_checks(webhooks, certificates)],
        f"{count} have a caBundle"
        + ("" if source.live else " or cert-manager CA injection")
        + (" that holds the CA of the serving certificate" if certificates else ""),
    )
    checks += readiness(webhooks, found)
    checks += kairos_provider(listed, source)
    rank = {name: index for index, name in enumerate(CHECK_ORDER)}
    return Preflight(tuple(sorted(checks, key=lambda check: rank[check.check])))


def preflight(state: State, source: Source = FOLDER, certificates: Sequence[ServingCertificate] = ()) -> Preflight:
    """Check the webhook installation a State holds (``state.auxiliary``, and where the objects of
    :data:`HELD_KINDS` are, for namespace selectors), read from ``source``."""
    held = (record.obj for record in state.objects if record.kind in HELD_KINDS)
    result = preflight_objects([*(record.obj for record in state.auxiliary), *held], source, certificates)
    return Preflight((*result.checks, *chart_checks(state)))


def emulated_chart(state: State) -> Check:
    """The chart the checks emulate: ``ok`` only for a chart whose digest is one workerclass was
    proved against; ``warn`` when nobody said which chart the cluster runs (the shipped facts stand
    in) or Helm's engine showed an unknown chart leaves classified pools alone; ``fail`` for any
    other unknown chart (a gate patch forced onto another chart version lands there) or one that
    could not be read."""
    chart = state.chart
    emulated = chart.describe()
    if chart.problem:
        return Check("chart", "fail", f"emulating {emulated}")
    if chart.assumed:
        return Check("chart", "warn", f"emulating {emulated}: give the chart the cluster runs with --chart")
    if chart.known:
        return Check("chart", "ok", f"emulating {emulated}")
    known = ", ".join(identity.name for identity in known_identities())
    unproved = (
        f"emulating {emulated}: not a chart workerclass was proved against ({known}); "
        "`workerclass chart-gate DIR|TGZ --check` says which it is"
    )
    if chart.probed_gate is True:
        return Check(
            "chart",
            "warn",
            f"{unproved}; Helm's engine renders it and renders nothing for a pool that names a class",
        )
    return Check(
        "chart",
        "fail",
        f"{unproved}; Helm's engine did not show it gated, so every pool that selects a class is refused "
        "(ChartNotGated): gate a known chart with `workerclass chart-gate`",
    )


def _with_reading(state: State, check: Check) -> Check:
    """``check`` (the chart's identity) with the reading a CREATE that names no class gets: the
    platform default class, or, on a chart without our gate, no class at all (a warning at least)."""
    chart = state.chart
    default = state.platform.default_worker_class
    why = ungated(chart)
    if why is None:
        reading = f"a CREATE that names no class gets the platform default class {default!r}"
        if chart.assumed:
            reading += " (with no chart stated, ChartNotGated is not checked)"
        return Check(check.check, check.verdict, f"{check.message}; {reading}")
    reading = (
        f"{why}: a CREATE that names no class stays without a class (the chart's classless Talos path; the "
        f"platform default {default!r} is not written) and a pool that names a class is refused (ChartNotGated)"
    )
    verdict = "warn" if check.verdict == "ok" else check.verdict
    return Check(check.check, verdict, f"{check.message}; {reading}")


def chart_checks(state: State) -> tuple[Check, ...]:
    """Which chart the checks and the port emulate, and each pool whose release STATE shows running
    another chart (fail: plan and restore do not predict for it) or an artifact it cannot compare (warn)."""
    chart = state.chart
    emulated = chart.describe()
    checks = [_with_reading(state, emulated_chart(state))]
    for runs in release_charts(state):
        if runs.verdict == "other":
            checks.append(Check("chart", "fail", runs.reason(emulated), runs.pool, "spec.chartRef"))
        elif runs.verdict == "unknown" and runs.digest is not None:
            checks.append(
                Check(
                    "chart",
                    "warn",
                    f"its release runs artifact {runs.digest} ({runs.source}), which cannot be compared with the "
                    "chart emulated: give the chart as the packaged archive the cluster serves (--chart FILE.tgz)",
                    runs.pool,
                    "spec.chartRef",
                )
            )
    return tuple(checks)
