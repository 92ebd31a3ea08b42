"""The package's Helm chart (``charts/workerclass``): committed as generated, and rendered by Helm's
own engine (helm-python-sdk, the package's ``helm`` extra, driven in a process of its own) to
the very objects ``workerclass manifests`` prints for the same settings."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tests.chart.oracle import helm_interpreter
from workerclass.cli.main import _register, app
from workerclass.deploy import install_manifests
from workerclass.helm_chart import chart_files, default_values, options_for

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "workerclass"
_register()

PEM = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUX\n-----END CERTIFICATE-----\n"

#: (values over the defaults, the release namespace)
CASES: dict[str, tuple[dict[str, Any], str]] = {
    "defaults": ({}, "cozy-workerclass"),
    "ca-bundle-no-controller-cilium-no-scraper": (
        {
            "caBundle": PEM,
            "controller": {"enabled": False},
            "networkPolicy": "cilium",
            "metricsNamespace": "",
            "webhook": {"replicas": 3, "timeoutSeconds": 7, "configurations": True},
            "image": "registry.example.com/workerclass:v9",
        },
        "elsewhere",
    ),
    "runbook-first-step-no-policy": ({"webhook": {"configurations": False}, "networkPolicy": "none"}, "cozy-system"),
    "cert-manager-cilium-scraper": ({"networkPolicy": "cilium", "metricsNamespace": "monitoring"}, "ns-1"),
    "hoster-named-chart-source": ({"chartSource": "ExternalArtifact/cozy-system/kubernetes-nodes"}, "cozy-workerclass"),
    "one-replica-namespace-that-yaml-reads-as-a-number": ({"webhook": {"replicas": 1}}, "1e3"),
}
#: values Helm must refuse, and a word of the refusal
REFUSED: dict[str, tuple[dict[str, Any], str]] = {
    "unknown-policy": ({"networkPolicy": "calico"}, "networkPolicy"),
    "timeout-over-30": ({"webhook": {"timeoutSeconds": 31}}, "timeoutSeconds"),
    "ca-not-pem": ({"caBundle": "hello"}, "not a PEM certificate bundle"),
    "ca-with-a-key": ({"caBundle": PEM + "-----BEGIN PRIVATE KEY-----\nx\n"}, "private key"),
    "chart-source-of-another-kind": ({"chartSource": "GitRepository/cozy-system/x"}, "chartSource"),
}

_DRIVER = r"""
import json, sys
import helm_python as helm
request = json.loads(sys.stdin.read())
chart = helm.Chart.load(request["chart"])
out = {"lint": helm.lint(request["chart"]), "renders": {}}
for name, (values, namespace) in request["cases"].items():
    try:
        files = chart.render(values, name="workerclass", namespace=namespace, is_install=True)
        out["renders"][name] = {"ok": True, "files": files}
    except helm.HelmError as error:
        out["renders"][name] = {"ok": False, "error": str(error)}
chart.close()
print(json.dumps(out))
"""


def _helm(cases: dict[str, tuple[dict[str, Any], str]]) -> dict[str, Any]:
    python, env = helm_interpreter()
    request = {"chart": str(CHART), "cases": cases}
    out = subprocess.run(
        [python, "-c", _DRIVER], input=json.dumps(request), capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    result: dict[str, Any] = json.loads(out.stdout)
    return result


@pytest.fixture(scope="module")
def rendered() -> dict[str, Any]:
    return _helm({**CASES, **REFUSED})


def _objects(files: dict[str, str]) -> list[dict[str, Any]]:
    objects = []
    for path, text in sorted(files.items()):
        if path.endswith(".yaml"):
            objects += [doc for doc in yaml.safe_load_all(text) if doc]
    return objects


def _key(obj: dict[str, Any]) -> str:
    return json.dumps(obj, sort_keys=True)


def test_the_committed_chart_is_the_generated_one() -> None:
    files = chart_files()
    on_disk = {
        str(path.relative_to(CHART)): path.read_text("utf-8") for path in sorted(CHART.rglob("*")) if path.is_file()
    }
    assert on_disk == files, "charts/workerclass is stale: run `workerclass manifests --helm-chart charts/workerclass`"
    assert yaml.safe_load(files["values.yaml"]) == default_values()


def test_writing_the_chart_replaces_stale_templates(tmp_path: Path) -> None:
    stale = tmp_path / "templates" / "99-gone.yaml"
    stale.parent.mkdir(parents=True)
    stale.write_text("kind: Gone\n")
    result = CliRunner().invoke(app, ["manifests", "--helm-chart", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    assert not stale.exists()
    written = {str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*") if path.is_file()}
    assert written == set(chart_files())


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_helm_renders_the_objects_workerclass_manifests_prints(rendered: dict[str, Any], case: str) -> None:
    values, namespace = CASES[case]
    answer = rendered["renders"][case]
    assert answer["ok"], answer.get("error")
    options, controller = options_for(values, namespace)
    expected = install_manifests(options, controller=controller)
    got = _objects(answer["files"])
    assert Counter(map(_key, got)) == Counter(map(_key, expected)), (
        sorted((o["kind"], o["metadata"]["name"]) for o in got),
        sorted((o["kind"], o["metadata"]["name"]) for o in expected),
    )


@pytest.mark.parametrize("case", list(REFUSED), ids=list(REFUSED))
def test_helm_refuses_what_workerclass_manifests_refuses(rendered: dict[str, Any], case: str) -> None:
    answer = rendered["renders"][case]
    assert not answer["ok"]
    assert REFUSED[case][1] in answer["error"]


def test_helm_lints_the_chart_without_errors(rendered: dict[str, Any]) -> None:
    lint = rendered["lint"]
    assert lint["errors"] == []
    assert [m for m in lint["messages"] if m["severity"] > 1] == []  # info only (an icon is recommended)
