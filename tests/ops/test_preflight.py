"""``preflight``: webhook matching, failure policy and readiness over the installed objects.

The baseline is the generated install (``workerclass.deploy``) with a live-looking Deployment
status: safe. Each failure mode flips the verdict under its own check name; warnings never do.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from workerclass.adapters.folder import load_state
from workerclass.adapters.kube import WATCHED
from workerclass.cli.main import _register, app
from workerclass.deploy import OPERATIONS_BY_PATH, PORT, InstallOptions, webhook_manifests
from workerclass.ops.preflight import EXPECTED, READY_PATH, WEBHOOK_DOMAIN, Preflight, preflight, preflight_objects
from workerclass.webhook.routes import ROUTES

_register()

Objects = list[dict[str, Any]]


def install(*, ready: int | None = 2, **options: Any) -> Objects:
    """The generated install; the Deployment gets ``status.readyReplicas`` unless ``ready`` is None."""
    objects = copy.deepcopy(webhook_manifests(InstallOptions(**options)))
    if ready is not None:
        deployment = find(objects, "Deployment")
        deployment["status"] = {"replicas": deployment["spec"]["replicas"], "readyReplicas": ready}
    return objects


def find(objects: Objects, kind: str) -> dict[str, Any]:
    return next(obj for obj in objects if obj["kind"] == kind)


def webhook(objects: Objects, path: str) -> dict[str, Any]:
    for obj in objects:
        for item in obj.get("webhooks", []):
            if item["clientConfig"]["service"]["path"] == path:
                return item  # type: ignore[no-any-return]
    raise LookupError(path)


def verdicts(result: Preflight, verdict: str) -> set[str]:
    return {check.check for check in result.checks if check.verdict == verdict}


# ---------------------------------------------------------------------- expectations agree with the generator


def test_expectations_agree_with_the_served_routes_and_the_generated_rules() -> None:
    watched = {(w.kind, w.group): w for w in WATCHED}
    served = {
        route.path: (
            route.mutating,
            route.target.kind,
            route.target.group,
            watched[(route.target.kind, route.target.group)].version,
            watched[(route.target.kind, route.target.group)].plural,
            watched[(route.target.kind, route.target.group)].namespaced,
            tuple(OPERATIONS_BY_PATH[route.path]),
        )
        for route in ROUTES
    }
    expected = {
        e.path: (e.mutating, e.kind, e.group, e.version, e.resource, e.namespaced, e.operations) for e in EXPECTED
    }
    assert expected == served


def test_generated_webhook_names_carry_the_domain_and_the_deployment_probes_readyz() -> None:
    objects = install()
    names = [item["name"] for obj in objects for item in obj.get("webhooks", [])]
    assert names and all(name.endswith("." + WEBHOOK_DOMAIN) for name in names)
    container = find(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert container["readinessProbe"]["httpGet"]["path"] == READY_PATH
    assert container["ports"][0]["containerPort"] == PORT


# ---------------------------------------------------------------------- the baseline


def test_generated_install_with_ready_replicas_is_safe() -> None:
    result = preflight_objects(install())
    assert result.safe, [c for c in result.checks if c.verdict == "fail"]
    assert verdicts(result, "fail") == set()
    # the page's caveat is always reported, as a warning, and is the only one
    assert [c.check for c in result.checks if c.verdict == "warn"] == ["outage"]
    assert {c.check for c in result.checks if c.verdict == "ok"} >= {
        "matching",
        "path",
        "admissionReviewVersions",
        "sideEffects",
        "timeoutSeconds",
        "selectors",
        "failurePolicy",
        "caBundle",
        "service",
        "readiness",
        "replicas",
        "disruptionBudget",
    }
    assert len(result.of("matching")) == len(EXPECTED)


def test_the_committed_install_read_as_a_state_folder(tmp_path: Path) -> None:
    objects = install()
    (tmp_path / "webhook.yaml").write_text(yaml.safe_dump_all(objects))
    result = preflight(load_state(tmp_path))
    assert result.safe
    # a State adds the chart it emulates (the shipped facts' here) after the installation's checks
    assert [check.check for check in result.checks][-1:] == ["chart"]
    assert result.checks[:-1] == preflight_objects(objects).checks


def test_a_ca_bundle_instead_of_cert_manager_is_safe() -> None:
    objects = install(ca_bundle=b"-----BEGIN CERTIFICATE-----\n...\n")
    assert all("annotations" not in obj["metadata"] for obj in objects if "webhooks" in obj)
    assert preflight_objects(objects).safe


def test_outage_caveat_is_reported_even_when_nothing_is_installed() -> None:
    result = preflight_objects([])
    assert not result.safe
    assert [c.verdict for c in result.of("outage")] == ["warn"]
    assert "legacy classless KubernetesNodes" in result.of("outage")[0].message
    assert verdicts(result, "fail") == {"matching", "service"}


# ---------------------------------------------------------------------- failure modes


def _ignore_mutating(objects: Objects) -> None:
    webhook(objects, "/mutate/kubernetesnodes")["failurePolicy"] = "Ignore"


def _ignore_validating(objects: Objects) -> None:
    webhook(objects, "/validate/workerclasses")["failurePolicy"] = "Ignore"


def _pool_rule_without_update(objects: Objects) -> None:
    webhook(objects, "/validate/kubernetesnodes")["rules"][0]["operations"] = ["CREATE"]


def _mutating_rule_without_update(objects: Objects) -> None:
    webhook(objects, "/mutate/kubernetesnodes")["rules"][0]["operations"] = ["CREATE"]


def _class_rule_without_delete(objects: Objects) -> None:
    webhook(objects, "/validate/workerclasses")["rules"][0]["operations"] = ["CREATE", "UPDATE"]


def _wrong_path(objects: Objects) -> None:
    webhook(objects, "/mutate/kubernetesnodes")["clientConfig"]["service"]["path"] = "/mutate/kubernetesnode"


def _mutating_sent_to_validating_path(objects: Objects) -> None:
    webhook(objects, "/mutate/kubernetesnodes")["clientConfig"]["service"]["path"] = "/validate/kubernetesnodes"


def _wrong_version(objects: Objects) -> None:
    webhook(objects, "/validate/computeplanes")["rules"][0]["apiVersions"] = ["v1beta1"]


def _wrong_scope(objects: Objects) -> None:
    webhook(objects, "/validate/kubernetesnodes")["rules"][0]["scope"] = "Cluster"


def _resource_wildcard(objects: Objects) -> None:
    webhook(objects, "/validate/kubernetesnodes")["rules"][0]["resources"] = ["*"]


def _no_v1_review(objects: Objects) -> None:
    webhook(objects, "/validate/computeplanes")["admissionReviewVersions"] = ["v1beta1"]


def _side_effects(objects: Objects) -> None:
    webhook(objects, "/validate/computeplanes")["sideEffects"] = "Some"


def _timeout_too_long(objects: Objects) -> None:
    webhook(objects, "/validate/computeplanes")["timeoutSeconds"] = 31


def _service_missing(objects: Objects) -> None:
    objects.remove(find(objects, "Service"))


def _service_selects_nothing(objects: Objects) -> None:
    find(objects, "Service")["spec"]["selector"] = {"app.kubernetes.io/name": "other"}


def _service_targets_no_port(objects: Objects) -> None:
    find(objects, "Service")["spec"]["ports"][0]["targetPort"] = "http"


def _service_port_differs(objects: Objects) -> None:
    find(objects, "Service")["spec"]["ports"][0]["port"] = 8443


def _deployment_missing(objects: Objects) -> None:
    objects.remove(find(objects, "Deployment"))


def _ready_zero(objects: Objects) -> None:
    find(objects, "Deployment")["status"]["readyReplicas"] = 0


def _ready_absent(objects: Objects) -> None:
    del find(objects, "Deployment")["status"]["readyReplicas"]


def _no_status(objects: Objects) -> None:
    del find(objects, "Deployment")["status"]


def _no_readiness_probe(objects: Objects) -> None:
    del find(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]


def _no_ca(objects: Objects) -> None:
    for obj in objects:
        if "webhooks" in obj:
            del obj["metadata"]["annotations"]


def _url_webhook(objects: Objects) -> None:
    client = webhook(objects, "/validate/computeplanes")["clientConfig"]
    client["url"] = "https://webhook.example/validate/computeplanes"
    del client["service"]


def _object_selector(objects: Objects) -> None:
    webhook(objects, "/mutate/kubernetesnodes")["objectSelector"] = {"matchLabels": {"x": "y"}}


def _object_selector_on_validation(objects: Objects) -> None:
    selector = {"matchExpressions": [{"key": "skip-admission", "operator": "DoesNotExist"}]}
    webhook(objects, "/validate/kubernetesnodes")["objectSelector"] = selector


FAILURES: list[tuple[str, Callable[[Objects], None], str, str | None]] = [
    ("ignore-mutating", _ignore_mutating, "failurePolicy", "webhooks[0].failurePolicy"),
    ("ignore-validating", _ignore_validating, "failurePolicy", "webhooks[1].failurePolicy"),
    ("pool-rule-without-update", _pool_rule_without_update, "matching", "webhooks[0].rules"),
    ("mutating-rule-without-update", _mutating_rule_without_update, "matching", "webhooks[0].rules"),
    ("class-rule-without-delete", _class_rule_without_delete, "matching", "webhooks[1].rules"),
    ("wrong-path", _wrong_path, "path", "webhooks[0].clientConfig.service.path"),
    ("mutating-to-validating-path", _mutating_sent_to_validating_path, "path", "webhooks[0].clientConfig.service.path"),
    ("wrong-version", _wrong_version, "matching", "webhooks[2].rules"),
    ("wrong-scope", _wrong_scope, "matching", "webhooks[0].rules"),
    ("resource-wildcard", _resource_wildcard, "matching", "webhooks[0].rules[0].resources"),
    ("no-v1-review", _no_v1_review, "admissionReviewVersions", "webhooks[2].admissionReviewVersions"),
    ("side-effects", _side_effects, "sideEffects", "webhooks[2].sideEffects"),
    ("timeout-too-long", _timeout_too_long, "timeoutSeconds", "webhooks[2].timeoutSeconds"),
    ("service-missing", _service_missing, "service", "webhooks[0].clientConfig.service"),
    ("service-selects-nothing", _service_selects_nothing, "service", "spec.selector"),
    ("service-targets-no-port", _service_targets_no_port, "service", "spec.ports"),
    ("service-port-differs", _service_port_differs, "service", "spec.ports"),
    ("deployment-missing", _deployment_missing, "service", "spec.selector"),
    ("ready-zero", _ready_zero, "readiness", "status"),
    ("ready-absent", _ready_absent, "readiness", "status"),
    ("no-status", _no_status, "readiness", "status"),
    ("no-readiness-probe", _no_readiness_probe, "readiness", "spec.template.spec.containers[0].readinessProbe"),
    ("no-ca", _no_ca, "caBundle", "webhooks[0].clientConfig.caBundle"),
    ("url-webhook", _url_webhook, "service", "webhooks[2].clientConfig.url"),
    ("object-selector", _object_selector, "selectors", "webhooks[0].objectSelector"),
    ("object-selector-on-validation", _object_selector_on_validation, "selectors", "webhooks[0].objectSelector"),
]


@pytest.mark.parametrize(("break_it", "check", "field"), [f[1:] for f in FAILURES], ids=[f[0] for f in FAILURES])
def test_each_failure_mode_flips_the_verdict(break_it: Callable[[Objects], None], check: str, field: str) -> None:
    objects = install()
    break_it(objects)
    result = preflight_objects(objects)
    assert not result.safe
    failed = [c for c in result.checks if c.verdict == "fail"]
    assert check in {c.check for c in failed}
    assert field in {c.field for c in failed if c.check == check}
    assert all(c.object is not None and c.message for c in failed if c.check == check)


def test_ignore_on_the_mutating_webhook_names_the_missing_stored_default() -> None:
    objects = install()
    _ignore_mutating(objects)
    (failure,) = preflight_objects(objects).of("failurePolicy")
    assert failure.verdict == "fail"
    assert failure.object == "MutatingWebhookConfiguration workerclass-webhook-mutating"
    assert "without the platform default class" in failure.message


def test_no_status_says_to_run_against_live_objects() -> None:
    result = preflight_objects(install(ready=None))
    (failure,) = [c for c in result.of("readiness") if c.verdict == "fail"]
    assert failure.message.endswith(
        "has no status: the folder holds no live readiness; run against exported live objects"
    )
    ready_zero = preflight_objects(install(ready=0))
    assert any("not ready" in c.message for c in ready_zero.of("readiness") if c.verdict == "fail")


def test_the_missing_pool_update_is_named() -> None:
    objects = install()
    _pool_rule_without_update(objects)
    failed = [c for c in preflight_objects(objects).of("matching") if c.verdict == "fail"]
    assert len(failed) == 1
    assert "KubernetesNodes" in failed[0].message and "UPDATE is not sent to /validate/kubernetesnodes" in (
        failed[0].message
    )


def test_a_wrong_path_also_leaves_the_served_path_unmatched() -> None:
    objects = install()
    _wrong_path(objects)
    result = preflight_objects(objects)
    assert any(
        c.verdict == "fail" and "/mutate/kubernetesnodes" in c.message and c.object is None
        for c in result.of("matching")
    )


# ---------------------------------------------------------------------- warnings do not fail


def _operations_wildcard(objects: Objects) -> None:
    webhook(objects, "/validate/kubernetesnodes")["rules"][0]["operations"] = ["*"]


def _pool_delete(objects: Objects) -> None:
    webhook(objects, "/validate/kubernetesnodes")["rules"][0]["operations"].append("DELETE")


def _one_replica_without_budget(objects: Objects) -> None:
    deployment = find(objects, "Deployment")
    deployment["spec"]["replicas"] = 1
    deployment["status"] = {"replicas": 1, "readyReplicas": 1}
    objects.remove(find(objects, "PodDisruptionBudget"))


def _slow_timeout(objects: Objects) -> None:
    webhook(objects, "/mutate/kubernetesnodes")["timeoutSeconds"] = 20


def _namespace_selector(objects: Objects) -> None:
    webhook(objects, "/mutate/kubernetesnodes")["namespaceSelector"] = {"matchLabels": {"tenant": "true"}}


def _subresources(objects: Objects) -> None:
    webhook(objects, "/validate/kubernetesnodes")["rules"][0]["resources"] = ["kubernetesnodes/*"]


def _partly_ready(objects: Objects) -> None:
    find(objects, "Deployment")["status"]["readyReplicas"] = 1


def _foreign_webhook(objects: Objects) -> None:
    objects.append(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "policy-engine"},
            "webhooks": [
                {
                    "name": "validate.policy.example",
                    "admissionReviewVersions": ["v1"],
                    "clientConfig": {"service": {"name": "policy", "namespace": "policy", "path": "/validate"}},
                    "rules": [
                        {"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "operations": ["*"]},
                    ],
                    "failurePolicy": "Fail",
                    "sideEffects": "None",
                }
            ],
        }
    )


WARNINGS: list[tuple[str, Callable[[Objects], None], set[str]]] = [
    ("operations-wildcard", _operations_wildcard, {"matching"}),
    ("pool-delete", _pool_delete, {"matching"}),
    ("one-replica-without-budget", _one_replica_without_budget, {"replicas", "disruptionBudget"}),
    ("slow-timeout", _slow_timeout, {"timeoutSeconds"}),
    ("namespace-selector", _namespace_selector, {"selectors"}),
    ("subresources", _subresources, {"matching"}),
    ("partly-ready", _partly_ready, {"readiness"}),
    ("foreign-webhook", _foreign_webhook, {"otherWebhooks"}),
]


@pytest.mark.parametrize(("change", "warned"), [w[1:] for w in WARNINGS], ids=[w[0] for w in WARNINGS])
def test_warnings_do_not_fail(change: Callable[[Objects], None], warned: set[str]) -> None:
    objects = install()
    change(objects)
    result = preflight_objects(objects)
    assert result.safe, [c for c in result.checks if c.verdict == "fail"]
    assert verdicts(result, "warn") == warned | {"outage"}


def test_pool_delete_warning_names_the_operation_and_the_outage() -> None:
    objects = install()
    _pool_delete(objects)
    (warning,) = [c for c in preflight_objects(objects).of("matching") if c.verdict == "warn"]
    assert "KubernetesNodes DELETE" in warning.message and "outage" in warning.message
    assert warning.field == "webhooks[0].rules[0].operations"


def test_namespace_selector_is_shown() -> None:
    objects = install()
    _namespace_selector(objects)
    (warning,) = preflight_objects(objects).of("selectors")
    assert "{matchLabels: {tenant: true}}" in warning.message
    assert warning.field == "webhooks[0].namespaceSelector"


# ---------------------------------------------------------------------- the command


def write_state(tmp_path: Path, objects: Objects) -> Path:
    state = tmp_path / "state"
    state.mkdir(parents=True)
    (state / "webhook.yaml").write_text(yaml.safe_dump_all(objects))
    return state


def run(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.stdout + result.stderr
    assert "\x1b[" not in result.stdout, "colour outside a terminal"
    return result


def test_json_shape_exactly(tmp_path: Path) -> None:
    result = run("preflight", str(write_state(tmp_path, install())), "-o", "json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert set(document) == {"safe", "checks"}
    assert document["safe"] is True
    assert document["checks"]
    for check in document["checks"]:
        assert list(check) == ["check", "verdict", "object", "field", "message"]
        assert isinstance(check["check"], str) and isinstance(check["message"], str)
        assert check["verdict"] in ("ok", "warn", "fail")
        assert check["object"] is None or isinstance(check["object"], str)
        assert check["field"] is None or isinstance(check["field"], str)
    assert {"check": "outage", "verdict": "warn"}.items() <= next(
        c for c in document["checks"] if c["check"] == "outage"
    ).items()


def test_exit_codes(tmp_path: Path) -> None:
    safe = run("preflight", str(write_state(tmp_path / "safe", install())))
    assert safe.exit_code == 0
    assert "safe:" in safe.stdout and "not safe" not in safe.stdout

    unsafe = run("preflight", str(write_state(tmp_path / "unsafe", install(ready=None))))
    assert unsafe.exit_code == 1
    assert "not safe: 1 check failed" in unsafe.stdout

    as_json = run("preflight", str(write_state(tmp_path / "json", install(ready=0))), "-o", "json")
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout)["safe"] is False


def test_unreadable_state_exits_2(tmp_path: Path) -> None:
    missing = run("preflight", str(tmp_path / "missing"))
    assert missing.exit_code == 2
    assert "error:" in missing.stderr
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "bad.yaml").write_text("kind: [unclosed\n")
    result = run("preflight", str(broken))
    assert result.exit_code == 2
    assert result.stdout == ""


# ---------------------------------------------------------------------- the Kairos provider


def test_preflight_says_which_bootstrap_path_kairos_pools_get_and_why(tmp_path: Path) -> None:
    from tests.ops.test_providers import crd

    def said(result: Any) -> list[tuple[str, str]]:
        return [(check.verdict, check.message.split(":", 1)[0]) for check in result.of("kairosProvider")]

    # a folder without the CRD: read as a cluster without it (Cozystack as it ships), and said so
    bare = preflight_objects(install())
    assert said(bare) == [("ok", "data-secret path")]
    assert "STATE holds no such CRD" in bare.of("kairosProvider")[0].message
    upstream = preflight_objects([*install(), crd()])
    assert said(upstream) == [("ok", "data-secret path")] and upstream.safe
    assert "allows spec.template.spec.distribution k0s, k3s only" in upstream.of("kairosProvider")[0].message
    widened = preflight_objects([*install(), crd(enum=["k0s", "k3s", "kubeadm"])])
    assert said(widened) == [("ok", "provider path")]
    # read from a STATE folder too: a CRD file is kept for preflight, not skipped as an unknown kind
    (tmp_path / "install.yaml").write_text(yaml.safe_dump_all([*install(), crd()]))
    state = load_state(tmp_path)
    assert said(preflight(state)) == [("ok", "data-secret path")]
    assert not any("CustomResourceDefinition" in warning for warning in state.warnings)
