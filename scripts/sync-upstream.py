#!/usr/bin/env python3
"""Copy the Cozystack chart files the package reads into package data, unmodified.

Run after a chart upgrade: ``python scripts/sync-upstream.py [SHARED_DIR]`` (default
``../shared``). The package never reads ``shared/`` at run time; a test keeps the copies
byte-identical to the upstream files, so a stale copy fails the suite instead of drifting.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "src" / "workerclass" / "chart" / "data"

#: package-data name -> path under shared/upstream-cozystack
FILES = {
    "values.yaml": "kubernetes-nodes/values.yaml",
    "values.schema.json": "kubernetes-nodes/values.schema.json",
    "versions.yaml": "kubernetes-nodes/files/versions.yaml",
    "kubectl.tag": "kubernetes-nodes/images/kubectl.tag",
    "Chart.yaml": "kubernetes-nodes/Chart.yaml",
    "instancetypes.yaml": "instancetypes.yaml",
    "computeplane.values.schema.json": "computeplane/values.schema.json",
}


def main(argv: list[str]) -> int:
    shared = Path(argv[1]) if len(argv) > 1 else ROOT.parent / "shared"
    upstream = shared / "upstream-cozystack"
    DATA.mkdir(parents=True, exist_ok=True)
    for name, source in FILES.items():
        shutil.copyfile(upstream / source, DATA / name)
        print(f"{source} -> {(DATA / name).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
