"""The embedded data: the built-in classes and the platform, completed from the chart's own files."""

from __future__ import annotations

from workerclass.builtin import builtin_classes, embedded_platform, embedded_platform_spec
from workerclass.chart.values import chart_defaults, version_map
from workerclass.model import parse_class_spec, parse_platform
from workerclass.rules.classes import BUILTIN_FAMILIES


def test_the_builtin_classes_are_the_two_families_offers() -> None:
    classes = {obj["metadata"]["name"]: obj for obj in builtin_classes()}
    assert set(classes) == set(BUILTIN_FAMILIES)
    for name, obj in classes.items():
        assert obj["kind"] == "WorkerClass" and obj["apiVersion"].startswith("cozystack.io/")
        spec, violations = parse_class_spec(obj["spec"])
        assert violations == []
        assert spec.bootstrap == BUILTIN_FAMILIES[name]


def test_the_platform_takes_the_chart_s_versions_and_talos_defaults() -> None:
    platform = embedded_platform()
    assert platform["kind"] == "WorkerPlatform" and platform["metadata"]["name"] == "default"
    spec = embedded_platform_spec()
    assert {minor: entry["patch"] for minor, entry in spec["kubernetesVersions"].items()} == dict(version_map())
    chart_talos = chart_defaults()["talos"]
    for key in ("version", "schematicID", "imageFactoryURL", "installerRepository"):
        assert spec["talos"][key] == chart_talos[key]
    parsed, violations = parse_platform(spec)
    assert violations == []
    assert parsed.default_worker_class in {obj["metadata"]["name"] for obj in builtin_classes()}


def test_the_data_is_read_once() -> None:
    assert builtin_classes() is builtin_classes() and embedded_platform() is embedded_platform()
