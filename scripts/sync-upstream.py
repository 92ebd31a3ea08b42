#!/usr/bin/env python3
"""Generate the package's facts about Cozystack's kubernetes-nodes chart from the upstream charts.

    .venv/bin/python scripts/sync-upstream.py            # rewrite src/workerclass/chart/data/facts.json
    .venv/bin/python scripts/sync-upstream.py --check    # exit 1 when the file is not what it would write

The upstream material is read where it lives: ``--shared DIR`` (default ``$WORKERCLASS_SHARED``,
else ``../shared`` beside the repository), its ``upstream-cozystack/`` folder. Run it after a chart
upgrade; the facts are data in the package's own layout, never a copy of an upstream file and no
prose (descriptions, comments and titles are left behind):

- ``charts``: the identity of every chart the port is proved against: each upstream chart of
  :data:`CHARTS`, and the same chart with our gate patch (``deploy/chart-gate/``) applied: its
  name, where it comes from, its ``Chart.yaml`` version, :func:`chart_digest` of its files, whether
  it is gated, and the rules it implies (read from its files: the schema's ``self == oldSelf``
  fields, the parent-version and clusterName-drift lookups, the pre-delete unpin hook);
- ``gates``: per upstream chart, its gate patch as data (the lines each template gets and after
  which line), so ``workerclass chart-gate`` applies exactly that chart's guards and nothing else;
- ``upstream.<name>``: per upstream chart, its metadata (name, appVersion, version), its default
  values, its values schema reduced to the words that type, default and constrain a value, its
  Kubernetes version map, the talos-reconcile Job's default kubectl image, and the Talos support
  matrix of its node-group template;
- ``instanceTypes``: the guest CPU and memory of every VirtualMachineClusterInstancetype Cozystack
  ships; ``computePlaneKeys``: the keys a ComputePlane node group may set.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from workerclass.adapters.chart import read_chart  # noqa: E402
from workerclass.chart.gate import ChartGate, parse_gate_patch  # noqa: E402
from workerclass.chart.identity import ChartIdentity, ChartRules, chart_digest, chart_metadata  # noqa: E402

FACTS = ROOT / "src" / "workerclass" / "chart" / "data" / "facts.json"
GATE = ROOT / "deploy" / "chart-gate"

#: name -> (folder under upstream-cozystack, where it comes from). The first is the default chart.
CHARTS = {
    "main": ("kubernetes-nodes", "cozystack main 3c780acd4"),
    "pr3315": ("kubernetes-nodes-pr3315", "cozystack PR 3315 a00421aa1"),
}
#: The words of a JSON schema kept in the facts: what types, defaults and constrains a value.
SCHEMA_WORDS = frozenset(
    {
        "type",
        "properties",
        "items",
        "additionalProperties",
        "default",
        "enum",
        "pattern",
        "anyOf",
        "required",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "x-kubernetes-int-or-string",
        "x-kubernetes-preserve-unknown-fields",
    }
)
_SUPPORT_ENTRY = re.compile(r'"(v[0-9]+\.[0-9]+)"\s*\(list((?:\s*"v[0-9]+\.[0-9]+")*)\s*\)')
_SUPPORT_BLOCK = re.compile(r"\$talosK8sSupportMatrix\s*:=\s*dict(.*?)\}\}", re.S)


def shared_dir(given: str | None) -> Path:
    if given:
        return Path(given)
    configured = os.environ.get("WORKERCLASS_SHARED")
    return Path(configured) if configured else ROOT.parent / "shared"


def reduced_schema(schema: Any) -> Any:
    """The schema with only :data:`SCHEMA_WORDS` (no descriptions, titles or UI hints)."""
    if isinstance(schema, dict):
        out: dict[str, Any] = {}
        for word, value in schema.items():
            if word not in SCHEMA_WORDS:
                continue
            if word == "properties" and isinstance(value, dict):
                out[word] = {name: reduced_schema(child) for name, child in value.items()}
            elif word == "default" or word == "enum":
                out[word] = value
            else:
                out[word] = reduced_schema(value)
        return out
    if isinstance(schema, list):
        return [reduced_schema(item) for item in schema]
    return schema


def immutable_fields(schema: dict[str, Any], path: str = "") -> list[str]:
    """Values paths whose schema carries the rule ``self == oldSelf``."""
    out: list[str] = []
    for name, child in (schema.get("properties") or {}).items():
        here = f"{path}.{name}" if path else name
        rules = [str(rule.get("rule", "")).replace(" ", "") for rule in child.get("x-kubernetes-validations") or ()]
        if "self==oldSelf" in rules:
            out.append(here)
        out += immutable_fields(child, here)
    return out


def rules_of(files: dict[str, bytes], schema: dict[str, Any]) -> ChartRules:
    """What the chart decides beyond the shared facts, read from its own files."""
    templates = "\n".join(
        content.decode("utf-8", "replace") for path, content in files.items() if path.startswith("templates/")
    )
    return ChartRules(
        immutable_fields=tuple(immutable_fields(schema)),
        parent_version='"KamajiControlPlane"' in templates and "semverCompare" in templates,
        cluster_name_drift='dig "spec" "clusterName"' in templates,
        unpin_hook="templates/pre-delete-unpin.yaml" in files,
    )


def support_matrix(nodegroup: str) -> dict[str, list[str]]:
    block = _SUPPORT_BLOCK.search(nodegroup)
    if block is None:
        raise SystemExit("templates/nodegroup.yaml: no $talosK8sSupportMatrix found")
    return {talos: re.findall(r"v[0-9]+\.[0-9]+", minors) for talos, minors in _SUPPORT_ENTRY.findall(block.group(1))}


def upstream_facts(files: dict[str, bytes]) -> dict[str, Any]:
    schema = json.loads(files["values.schema.json"])
    metadata = chart_metadata(files["Chart.yaml"])
    versions = yaml.safe_load(files["files/versions.yaml"])
    return {
        "chart": {key: str(metadata[key]) for key in ("name", "version", "appVersion") if key in metadata},
        "defaults": yaml.safe_load(files["values.yaml"]),
        "schema": reduced_schema(schema),
        "versionMap": {str(minor): str(patch) for minor, patch in versions.items()},
        "kubectlImage": files["images/kubectl.tag"].decode().strip(),
        "talosSupport": support_matrix(files["templates/nodegroup.yaml"].decode()),
    }


def gated_files(name: str, folder: Path) -> dict[str, bytes]:
    """The chart with our gate patch applied (in a scratch copy)."""
    patch = GATE / f"kubernetes-nodes-{name}.patch"
    with tempfile.TemporaryDirectory(prefix="workerclass-gate-") as scratch:
        copy = Path(scratch) / folder.name
        shutil.copytree(folder, copy, symlinks=False)
        for path in [copy, *copy.rglob("*")]:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
        done = subprocess.run(
            ["patch", "-p1", "--fuzz=0", "--no-backup-if-mismatch", "--quiet", "-i", str(patch)],
            cwd=copy,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"{patch.name} does not apply to {folder}: {done.stdout}{done.stderr}")
        return read_chart(copy)


def identity(name: str, source: str, files: dict[str, bytes], *, gated: bool, rules: ChartRules) -> dict[str, Any]:
    version = str(chart_metadata(files["Chart.yaml"]).get("version", ""))
    return ChartIdentity(
        name=f"{name}+gate" if gated else name,
        upstream=name,
        source=source,
        version=version,
        digest=chart_digest(files),
        gated=gated,
        rules=rules,
    ).as_dict()


def gate(name: str) -> dict[str, Any]:
    """The gate of chart ``name`` as data: the insertions of its patch, and the identity it makes."""
    patch = GATE / f"kubernetes-nodes-{name}.patch"
    insertions = parse_gate_patch(patch.read_text(encoding="utf-8"))
    return ChartGate(chart=name, gated=f"{name}+gate", patch=patch.name, insertions=insertions).as_dict()


def instance_types(text: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for document in yaml.safe_load_all(text):
        if not isinstance(document, dict) or document.get("kind") != "VirtualMachineClusterInstancetype":
            continue
        spec = document.get("spec") or {}
        out[document["metadata"]["name"]] = {
            "cpu": (spec.get("cpu") or {}).get("guest"),
            "memory": (spec.get("memory") or {}).get("guest"),
        }
    return dict(sorted(out.items()))


def compute_plane_keys(schema: dict[str, Any]) -> list[str]:
    group = schema["properties"]["nodeGroups"]["additionalProperties"]
    return sorted(group["properties"])


def facts(shared: Path) -> dict[str, Any]:
    upstream = shared / "upstream-cozystack"
    charts: list[dict[str, Any]] = []
    gates: list[dict[str, Any]] = []
    per_chart: dict[str, Any] = {}
    for name, (folder, source) in CHARTS.items():
        files = read_chart(upstream / folder)
        rules = rules_of(files, json.loads(files["values.schema.json"]))
        charts.append(identity(name, source, files, gated=False, rules=rules))
        patched = gated_files(name, upstream / folder)
        charts.append(identity(name, source, patched, gated=True, rules=rules))
        gates.append(gate(name))
        if chart_digest(ChartGate.from_dict(gates[-1]).apply(files)) != chart_digest(patched):
            raise SystemExit(f"the gate of {name} read as data does not make what its patch makes")
        per_chart[name] = upstream_facts(files)
    plane = json.loads((upstream / "computeplane" / "values.schema.json").read_text(encoding="utf-8"))
    return {
        "about": "Facts about Cozystack's kubernetes-nodes chart by scripts/sync-upstream.py; not edited by hand.",
        "charts": charts,
        "gates": gates,
        "upstream": per_chart,
        "instanceTypes": instance_types((upstream / "instancetypes.yaml").read_text(encoding="utf-8")),
        "computePlaneKeys": compute_plane_keys(plane),
    }


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=False, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--shared", help="the folder with upstream-cozystack/ (default $WORKERCLASS_SHARED or ../shared)"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when the facts file is not what would be written")
    args = parser.parse_args(argv)
    shared = shared_dir(args.shared)
    if not (shared / "upstream-cozystack").is_dir():
        print(f"{shared}/upstream-cozystack: not found (give --shared DIR or set WORKERCLASS_SHARED)", file=sys.stderr)
        return 2
    text = render(facts(shared))
    if args.check:
        current = FACTS.read_text(encoding="utf-8") if FACTS.is_file() else ""
        if current != text:
            print(f"{FACTS.relative_to(ROOT)} is stale: run scripts/sync-upstream.py", file=sys.stderr)
            return 1
        return 0
    FACTS.write_text(text, encoding="utf-8")
    print(f"wrote {FACTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
