"""The install bundle on a real API server: every document applies (server-side, a dry run first),
the CRDs become Established, and the CRDs' own rules (CEL, patterns, enums, immutability) are
enforced by the server, compared case by case with what workerclass's parser refuses.

Seen to fail against a broken bundle (``WORKERCLASS_E2E_BREAK=no-immutability-rule``, the
WorkerClass CRD without its ``self == oldSelf`` rule): the ``spec-immutable`` row failed, the server
took the changed spec (no refusal where the table expects one).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest

from tests.builders import make_state
from workerclass.admission import admit
from workerclass.api.resources import WORKER_CLASS, WORKER_PLATFORM

from .conftest import Install, Served, WebhookCerts, manifests
from .kube import Kube, KubeError

PINNED = "registry.example.com/workers/kairos-worker@sha256:" + "3f" * 32


def test_every_document_is_on_the_server_as_applied(kube: Kube, install: Install) -> None:
    for obj in install.objects:
        meta = obj["metadata"]
        live = kube.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
        assert live["metadata"]["name"] == meta["name"]
        if obj["kind"] == "CustomResourceDefinition":
            conditions = {c["type"]: c["status"] for c in live["status"]["conditions"]}
            assert conditions.get("Established") == "True", meta["name"]
            assert conditions.get("NamesAccepted") == "True", meta["name"]
            assert conditions.get("NonStructuralSchema") is None, meta["name"]
        # server-side apply kept every field we sent: the stored object answers a dry-run apply unchanged
        again = kube.apply(obj, manager="workerclass-e2e-install", dry_run=True)
        assert again["metadata"].get("resourceVersion") == live["metadata"].get("resourceVersion")


def test_the_default_bundle_differs_only_by_cert_manager_objects(webhook_certs: WebhookCerts) -> None:
    """The test bed has no cert-manager, so the tier applies the ``--ca-bundle`` bundle; without it
    the bundle adds cert-manager's Issuer and Certificate and the CA-injection annotation instead
    of a caBundle, and nothing else."""
    with_ca = manifests(webhook_certs.ca_file)
    default = _default_bundle()
    kinds = sorted(obj["kind"] for obj in default if obj not in with_ca)
    assert kinds == [
        "Certificate",
        "Issuer",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ]


def _default_bundle() -> list[dict[str, Any]]:
    import json
    import subprocess

    from .testbed import workerclass_command

    out = subprocess.run(
        [*workerclass_command(), "manifests", "-o", "json"], capture_output=True, text=True, check=True
    )
    items: list[dict[str, Any]] = json.loads(out.stdout)["items"]
    return items


# ------------------------------------------------------------------ the CRDs' rules, server and parser


def _class(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": WORKER_CLASS.api_version, "kind": "WorkerClass", "metadata": {"name": name}, "spec": spec}


@dataclass(frozen=True)
class RuleCase:
    """One write: does the API server refuse it by the CRD alone, and does the parser (admission)?"""

    id: str
    obj: dict[str, Any]
    #: the text the server's refusal must carry, or None when the CRD admits it
    server: str | None
    #: a denial code the parser gives, or None when admission admits it
    parser: str | None
    #: why the two differ, when they do
    why: str = ""
    old: dict[str, Any] | None = None


KAIROS_FIXED = {"bootstrap": "kairos", "image": {"kubernetesVersion": "v1.35.6", "reference": PINNED}}

CASES = [
    RuleCase(
        "osImage-builtin-and-factory",
        _class("cel-both-sources", {"bootstrap": "talos", "kubevirt": {"osImage": {"builtin": {}, "factory": {}}}}),
        "set builtin or factory, not both",
        "OsImageSourceConflict",
    ),
    RuleCase(
        "image-reference-without-version",
        _class("cel-half-image", {"bootstrap": "kairos", "image": {"reference": PINNED}}),
        "image.kubernetesVersion and image.reference are required together",
        "IncompleteImage",
    ),
    RuleCase(
        "fixed-image-on-talos",
        _class(
            "cel-talos-image", {"bootstrap": "talos", "image": {"kubernetesVersion": "v1.35.6", "reference": PINNED}}
        ),
        "a fixed image is for Kairos classes",
        "Invalid",
    ),
    RuleCase(
        "bootstrap-enum",
        _class("cel-bootstrap", {"bootstrap": "flatcar"}),
        "Unsupported value",
        "Invalid",
    ),
    RuleCase(
        "bootstrap-required",
        _class("cel-no-bootstrap", {"talos": {"version": "v1.13.6"}}),
        "Required value",
        "Invalid",
    ),
    RuleCase(
        "talos-version-pattern",
        _class("cel-talos-version", {"bootstrap": "talos", "talos": {"version": "1.13"}}),
        "should match",
        "Invalid",
    ),
    RuleCase(
        "kernel-module-name-pattern",
        _class("cel-module", {"bootstrap": "talos", "kernelModules": [{"name": "Bad Module"}]}),
        "should match",
        "InvalidKernelModule",
    ),
    RuleCase(
        "unpinned-reference",
        _class(
            "cel-unpinned",
            {
                "bootstrap": "kairos",
                "image": {"kubernetesVersion": "v1.35.6", "reference": "registry.example.com/w:latest"},
            },
        ),
        "should match",
        "ImageNotPinned",
    ),
    RuleCase(
        "a-valid-fixed-kairos-class",
        _class("cel-valid", KAIROS_FIXED),
        None,
        None,
    ),
    RuleCase(
        "spec-immutable",
        _class("cel-immutable", {**KAIROS_FIXED, "image": {**KAIROS_FIXED["image"], "kubernetesVersion": "v1.35.7"}}),
        "the spec of a WorkerClass is immutable",
        "ClassImmutable",
        old=_class("cel-immutable", KAIROS_FIXED),
    ),
    RuleCase(
        "platform-singleton",
        {
            "apiVersion": WORKER_PLATFORM.api_version,
            "kind": "WorkerPlatform",
            "metadata": {"name": "other"},
            "spec": {"defaultWorkerClass": "talos"},
        },
        "the WorkerPlatform is a singleton named default",
        None,
        why="no webhook admits WorkerPlatform writes: the CRD's rule is the only guard, and State reads only "
        "the WorkerPlatform named default",
    ),
]


def _server_refusal(kube: Kube, case: RuleCase) -> str | None:
    """Create (or, with ``old``, create then update) through the API server; the CRD's refusal or None.

    A refusal by our validating webhook is not the CRD's: the server runs schema and CEL
    validation before validating webhooks, so a 422 naming the field is the CRD's own answer."""
    obj = copy.deepcopy(case.obj)
    try:
        if case.old is not None:
            kube.create(case.old)
            live = kube.get(obj["apiVersion"], obj["kind"], obj["metadata"]["name"])
            obj["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
            kube.replace(obj)
        else:
            kube.create(obj, dry_run=True)
    except KubeError as error:
        if "admission webhook" in error.message:
            return None  # the CRD admitted it; our webhook's answer is not the CRD's
        return error.message
    finally:
        if case.old is not None:
            kube.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"])
    return None


def _parser_codes(case: RuleCase) -> set[str]:
    state = make_state()
    operation = "UPDATE" if case.old is not None else "CREATE"
    decision = admit(state, operation, case.obj, case.old)
    return {violation.code for violation in decision.denials}


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_the_server_and_the_parser_refuse_alike(kube: Kube, webhook: Served, case: RuleCase) -> None:
    refusal = _server_refusal(kube, case)
    if case.server is None:
        assert refusal is None, f"the CRD refused what it should admit: {refusal}"
    else:
        assert refusal is not None and case.server in refusal, refusal
    codes = _parser_codes(case)
    if case.parser is None:
        assert codes == set()
    else:
        assert case.parser in codes, codes
    if (case.server is None) != (case.parser is None):
        assert case.why, "server and parser differ: say why in the table"


# ------------------------------------------------------------------ the namespace the bundle does not own


def test_deleting_the_bundle_never_deletes_a_namespace_it_did_not_create(
    kube: Kube, install: Install, webhook_certs: WebhookCerts
) -> None:
    """``cozy-system`` exists in every Cozystack cluster. The bundle generated for it applies into
    it as it is, and deleting every object the bundle lists (``kubectl delete -f``) leaves the
    namespace and what else lives there. Its cluster-wide objects are the session's install's (the
    same names), so this one applies and deletes the namespaced ones, and checks it lists no Namespace.

    Seen to fail against the former bundle, which listed ``Namespace cozy-system`` first."""
    shared = "cozy-system"
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": shared}}, manager="cozystack")
    bystander = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cozystack", "namespace": shared}}
    kube.apply(bystander, manager="cozystack")
    bundle = manifests(webhook_certs.ca_file, "-n", shared)
    assert [obj for obj in bundle if obj["kind"] == "Namespace"] == []
    namespaced = [obj for obj in bundle if obj["metadata"].get("namespace") == shared]
    assert {obj["kind"] for obj in namespaced} >= {"Deployment", "Service", "ServiceAccount", "PodDisruptionBudget"}
    for obj in namespaced:
        kube.apply(obj, manager="workerclass-e2e-cozy-system")
    for obj in namespaced:  # what `kubectl delete -f` does with the bundle's namespaced documents
        kube.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], shared)
    live = kube.get("v1", "Namespace", shared)
    assert live["status"].get("phase") == "Active" and "deletionTimestamp" not in live["metadata"]
    assert kube.get("v1", "ConfigMap", "cozystack", shared)["metadata"]["name"] == "cozystack"
    for obj in namespaced:
        assert kube.find(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], shared) is None, obj["kind"]
