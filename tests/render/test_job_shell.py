"""No string a tenant can set reaches a shell unquoted in any Job we render.

The talos-reconcile Job runs ``sh -ec SCRIPT`` in the management cluster as an account that reads
the cluster's Talos secrets and writes its templates; its TalosConfigTemplate is an unquoted
heredoc, so ``$(...)``, backticks and ``${...}`` in it are the shell's. A property test: pools
(classless and classified) with hostile strings in the values a tenant writes, each one that
resolution admits rendered, and every rendered Job's script run for real under ``sh`` with stub
``kubectl`` on ``PATH``. No injected command may run (a marker file never appears), and what the
script hands ``kubectl apply`` must be exactly the TalosConfigTemplate ``render`` predicts (the
hostile text arrives as text, nothing expanded that the render did not expect).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from workerclass import Denied
from workerclass.chart.kubeyaml import k8s_load
from workerclass.render import RenderError, render

from .builders import by_kind, effective_of, pool, release

pytestmark = pytest.mark.usefixtures("chart_text")

MARKER = "PWNED"

#: What a hostile tenant writes: command substitution, backticks, parameter expansion, escapes,
#: quotes, and an early end of the heredoc.
HOSTILE = [
    f"$(touch {MARKER})",
    f"`touch {MARKER}`",
    f"v1.13.6$(touch {MARKER})",
    f"\\$(touch {MARKER})",
    f"\\`touch {MARKER}\\`",
    f"'\"$(touch {MARKER})\"'",
    f"x\nEOF\ntouch {MARKER}\ncat <<EOF",
    f"x\n  EOF\ntouch {MARKER}",
    "${TALOS_TOKEN}",
    "$TALOS_TOKEN",
    "${IFS}",
    "\\",
    "a\\\\b",
    f"$( touch {MARKER} )#",
    # a line break with the indentation that puts ``EOF`` alone on a line of the script
    *(f"x\n{' ' * width}EOF\n{' ' * width}touch {MARKER}\n{' ' * width}cat <<EOF" for width in (0, 6, 14, 16)),
]

#: Every tenant-writable value that reaches the Job's script or the template it applies, as the
#: path to set and how the hostile text is placed there.
FIELDS: dict[str, Any] = {
    "talos.version": lambda s: {"talos": {"version": s}},
    "talos.schematicID": lambda s: {"talos": {"schematicID": s}},
    "talos.imageFactoryURL": lambda s: {"talos": {"imageFactoryURL": s}},
    "talos.installerRepository": lambda s: {"talos": {"installerRepository": s}},
    "talos.registryMirrors.endpoint": lambda s: {"talos": {"registryMirrors": {"docker.io": {"endpoints": [s]}}}},
    "talos.registryMirrors.key": lambda s: {"talos": {"registryMirrors": {s: {"endpoints": ["https://m.example"]}}}},
    "talos.registryMirrors.extra": lambda s: {"talos": {"registryMirrors": {"docker.io": {"x": s}}}},
    "kubelet.systemReservedMemory": lambda s: {"kubelet": {"systemReservedMemory": s}},
    "kubelet.kubeReservedMemory": lambda s: {"kubelet": {"kubeReservedMemory": s}},
    "kubelet.systemReservedCpu": lambda s: {"kubelet": {"systemReservedCpu": s}},
    "kubelet.kubeReservedCpu": lambda s: {"kubelet": {"kubeReservedCpu": s}},
    "kubelet.evictionHardMemory": lambda s: {"kubelet": {"evictionHardMemory": s}},
    "kubelet.evictionSoftMemory": lambda s: {"kubelet": {"evictionSoftMemory": s}},
    "kernelModules.name": lambda s: {"kernelModules": [{"name": s}]},
    "kernelModules.parameter": lambda s: {"kernelModules": [{"name": "nvme_tcp", "parameters": [s]}]},
    "resources.memory": lambda s: {"instanceType": "", "resources": {"cpu": "2", "memory": s}},
    "resources.cpu": lambda s: {"instanceType": "", "resources": {"cpu": s, "memory": "4Gi"}},
    "instanceType": lambda s: {"instanceType": s},
    "gpus.name": lambda s: {"gpus": [{"name": s}]},
    "roles": lambda s: {"roles": [s]},
    "labels": lambda s: {"labels": {"example.com/a": s}},
    "images.kubectl": lambda s: {"images": {"kubectl": s}},
    "_cluster.cluster-domain": lambda s: {"_cluster": {"cluster-domain": s}},
}

STUB = """#!/bin/sh
# a stand-in kubectl: records its argv (one argument a line, NUL-separated calls), answers the reads
for arg in "$@"; do printf '%s\\n' "$arg" >> "$STUB_LOG"; done
printf '\\0\\n' >> "$STUB_LOG"
case "$*" in
  *"apply -f -"*) cat > "$STUB_APPLIED" ;;
  *"get svc kube-dns"*) printf '%s' '${COREDNS_IP}' ;;
  *"get svc"*) printf '%s' '${SVC_IP}' ;;
  *"-talos-ca"*) printf '%s' '${TALOS_CA_B64}' ;;
  *"get secret"*) printf '%s' '${K8S_CA_B64}' ;;
  *"get kamajicontrolplane"*) printf '%s' '${KCP_UID}' ;;
esac
"""


def _jobs(obj: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any] | None]] | None:
    """The rendered Jobs of the pool with the TalosConfigTemplate render predicts, or None if denied."""
    try:
        effective = effective_of(obj)
    except Denied:
        return None
    objects = render(effective)
    try:
        template = by_kind(render(effective, talos_config_template=True)).get("TalosConfigTemplate")
    except RenderError:  # the chart renders the Job, whose kubectl apply then fails on the YAML
        template = None
    return [(o, template) for o in objects if o.get("kind") == "Job"]


def _parsed(template: dict[str, Any]) -> dict[str, Any]:
    """The template with its machine config parsed: the chart's own comments in it quote
    `gpu=on` in backticks, which the shell runs (harmlessly) and drops; what Talos reads is the YAML."""
    spec = template["spec"]["template"]["spec"]
    try:
        data: Any = k8s_load(spec["data"])
    except yaml.YAMLError:  # a value that breaks the machine config's YAML: Talos refuses it either way
        data = [line for line in spec["data"].splitlines() if not line.lstrip().startswith("#")]
    return {**template, "spec": {"template": {"spec": {**spec, "data": data}}}}


def _run(job: dict[str, Any], workdir: Path) -> tuple[str, str]:
    container = job["spec"]["template"]["spec"]["containers"][0]
    command = container["command"]
    assert command[:2] == ["sh", "-ec"], command
    bin_dir = workdir / "bin"
    bin_dir.mkdir(exist_ok=True)
    stub = bin_dir / "kubectl"
    stub.write_text(STUB)
    stub.chmod(0o755)
    (bin_dir / "sleep").symlink_to("/bin/true") if not (bin_dir / "sleep").exists() else None
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "STUB_LOG": str(workdir / "argv"), "STUB_APPLIED": str(workdir / "in")}
    for item in container["env"]:
        # run-time inputs (Secrets) stand as their own ${NAME}: the shell does not expand a value twice
        env[item["name"]] = item["value"] if "value" in item else "${" + item["name"] + "}"
    done = subprocess.run(["sh", "-ec", command[2]], cwd=workdir, env=env, capture_output=True, timeout=20, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return (workdir / "argv").read_text(), (workdir / "in").read_text()


# most hostile strings are refused before any render (assume below): with some seeds hypothesis
# would stop on filter_too_much instead of testing the strings that are admitted
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(
    field=st.sampled_from(sorted(FIELDS)),
    text=st.one_of(st.sampled_from(HOSTILE), st.text(alphabet="$`\\'\"(){}\n ;&|<>EOFx", min_size=1, max_size=12)),
    classified=st.booleans(),
)
def test_no_tenant_string_reaches_the_jobs_shell(
    field: str, text: str, classified: bool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    values = FIELDS[field](text)
    obj = pool(workerClassName="talos", **values) if classified else release(**values)
    jobs = _jobs(obj)
    assume(jobs)  # refused pools are never rendered, so never applied
    assert jobs is not None
    for job, template in jobs:
        workdir = tmp_path_factory.mktemp("job")
        argv, applied = _run(job, workdir)
        assert not (workdir / MARKER).exists(), (field, text)
        assert MARKER not in os.listdir(workdir)
        if template is None:
            continue
        # what reaches the API server is what render predicts: the text arrived as text
        assert _parsed(k8s_load(applied)) == _parsed(template), (field, text)
        # the certSANs patch is intact JSON
        calls = [call.strip("\n").split("\n") for call in argv.split("\0\n") if call.strip("\n")]
        patch = next(call for call in calls if "patch" in call)
        json.loads(patch[patch.index("--patch") + 1])


def test_the_property_sees_an_unquoted_heredoc() -> None:
    """The harness itself: a value the render leaves unescaped in the heredoc does run (so the
    property above would catch one)."""
    jobs = _jobs(pool(workerClassName="talos"))
    assert jobs
    job, _ = jobs[0]
    container = job["spec"]["template"]["spec"]["containers"][0]
    script = container["command"][2].replace("generateType: none", f'generateType: "$(touch {MARKER})"', 1)
    container["command"] = ["sh", "-ec", script]
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        _run(job, Path(scratch))
        assert (Path(scratch) / MARKER).exists()
