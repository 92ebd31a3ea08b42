"""Benchmark: what a Kairos pool's data-secret path costs beside its provider path, same run.

N Kairos pools (default 2,000; platform image, a third with an SSH key), resolved once (not
timed), then on one core, best of R:

- ``render(effective, kairos_path="provider")``: the KairosConfigTemplate path (the baseline);
- ``render(effective, kairos_path="data-secret")``: the cloud-config Secret path;
- ``with_join_inputs`` of each pool's Secret (what the worker controller adds per pool on a full
  resync: parse the redacted cloud-config, set the token and the CA's hashes, write it again,
  base64), with one CA certificate.

Run: ``.venv/bin/python bench/kairos_bootstrap_bench.py [--pools N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.kairos_join import TOKEN, ca_certificate  # noqa: E402

from workerclass.adapters.folder import read_folder  # noqa: E402
from workerclass.render import render  # noqa: E402
from workerclass.render.kairos_bootstrap import with_join_inputs  # noqa: E402
from workerclass.render.templates import KAIROS_DATA_SECRET_PATH, KAIROS_PROVIDER_PATH  # noqa: E402
from workerclass.resolve import resolve_pool  # noqa: E402
from workerclass.state import State  # noqa: E402

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGV4YW1wbGVrZXlleGFtcGxla2V5 bench@example"


def effectives(count: int) -> list[Any]:
    pools = []
    for index in range(count):
        spec: dict[str, Any] = {
            "cluster": "example",
            "workerClassName": "kairos",
            "version": "v1.35",
            "minReplicas": 1 + index % 3,
            "maxReplicas": 5,
            "sshKeys": [KEY] if index % 3 == 0 else [],
        }
        pools.append(
            {
                "apiVersion": "apps.cozystack.io/v1alpha1",
                "kind": "KubernetesNodes",
                "metadata": {"name": f"example-bk{index}", "namespace": "tenant-example"},
                "spec": spec,
            }
        )
    examples = [document.obj for document in read_folder(ROOT / "examples")]
    state = State.from_objects([*examples, *pools])
    out = []
    for record in state.pools.values():
        if not record.name.startswith("example-bk"):
            continue
        effective, denials, _ = resolve_pool(state, record)
        assert effective is not None, denials
        out.append(effective)
    assert len(out) == count
    return out


def best(repeat: int, run: Any) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    pools = effectives(options.pools)
    ca = ca_certificate()
    secrets = [
        next(obj for obj in render(effective) if obj["kind"] == "Secret") for effective in pools
    ]  # the inputs of the fill, rendered once

    provider = best(options.repeat, lambda: [render(e, kairos_path=KAIROS_PROVIDER_PATH) for e in pools])
    data_secret = best(options.repeat, lambda: [render(e, kairos_path=KAIROS_DATA_SECRET_PATH) for e in pools])
    fill = best(options.repeat, lambda: [with_join_inputs(s, token=TOKEN, ca_pem=ca) for s in secrets])

    print(f"{options.pools} Kairos pools, best of {options.repeat}, one core, Python {platform.python_version()}")
    print(f"{'what':<38} {'seconds':>8} {'µs/pool':>8} {'x provider':>10}")
    for what, seconds in (
        ("render, provider path (baseline)", provider),
        ("render, data-secret path", data_secret),
        ("fill the join inputs (controller)", fill),
    ):
        print(f"{what:<38} {seconds:8.3f} {seconds / options.pools * 1e6:8.1f} {seconds / provider:10.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
