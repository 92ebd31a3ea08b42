"""What one wide request costs the webhook's event loop: hostile shapes against a JSON round-trip.

    .venv/bin/python bench/wide_bench.py [--kib 200] [--repeat 3] [--only NAME,...]

The webhook answers every tenant on one event loop, so a request whose decision costs seconds
delays every other tenant's writes (and, past the API server's timeout, refuses them). Each shape
below is a KubernetesNodes pool of about ``--kib`` KiB whose width is in one place (unknown keys,
refused labels, roles or taints, mirrors, strings shaped like secrets, deep values); each is
decided as the API server sends it, through the webhook's own per-request path in process
(``WebhookServer._decide``: decode, decide, scrub, encode), on the mutating and the validating
path, as a CREATE and as an UPDATE that leaves the width as stored. The baseline, measured in the
same run, is a JSON round-trip of the same review body (``json.loads`` then ``json.dumps``): the
table gives each decision's CPU milliseconds and its multiple of that round-trip, and the answer's
size. A shape whose multiple grows with ``--kib`` costs more than its size.

CPU clock, best of ``--repeat``. Never run as a timed test; the suite's counted versions are
``tests/webhook/test_wide_requests.py`` and the admission tests of unknown keys and the ratchet.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' case builders
sys.path.insert(0, str(ROOT / "src"))


def shapes(kib: int) -> dict[str, dict[str, Any]]:
    """Spec overrides of the shapes, each about ``kib`` KiB of JSON."""
    n = kib * 1024
    return {
        "unknown-keys": {f"oldKey{index}": 1 for index in range(n // 16)},
        "refused-labels": {"labels": {f"team{index}": "-refused-" for index in range(n // 24)}},
        "refused-roles": {"roles": [f"-r{index}" for index in range(n // 10)]},
        "refused-taints": {"taints": [{"key": f"-k{index}", "effect": "NoSchedule"} for index in range(n // 42)]},
        "many-taints": {
            "taints": [{"key": f"k{index}", "value": "v", "effect": "NoSchedule"} for index in range(n // 52)]
        },
        "mirrors": {
            "talos": {
                "registryMirrors": {
                    f"r{index}.example.com": {"endpoints": [f"https://m{index}.example.com"]}
                    for index in range(n // 60)
                }
            }
        },
        "secret-shaped-strings": {"extra": [f"Zz_{index}_q+/A" for index in range(n // 16)]},
        "long-string": {"note": "x" * (n - 64)},
        "quantity-digits": {"resources": {"cpu": "1" * (n - 80) + "x", "memory": "1Gi"}},
        "jwt-header-key": {"labels": {"eyJ" * (n // 3 - 30) + "b": "v"}},
        "deep": {"deep": _deep(60, {"leaf": ["y" * 8] * (n // 12)})},
    }


def _deep(levels: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(levels):
        value = {"d": value}
    return value


def best(function: Callable[[], Any], repeat: int) -> float:
    fastest = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        function()
        fastest = min(fastest, time.process_time() - start)
    return fastest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kib", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated shape names")
    args = parser.parse_args()

    from tests.webhook.cases import pool, table_state
    from tests.webhook.helpers import review

    from workerclass.webhook.routes import ROUTES
    from workerclass.webhook.server import Settings, WebhookServer
    from workerclass.webhook.sources import StaticSource

    server = WebhookServer(StaticSource(table_state()), tls=None, settings=Settings(host="127.0.0.1", port=0))
    routes = {route.path: route for route in ROUTES}
    mutate, validate = routes["/mutate/kubernetesnodes"], routes["/validate/kubernetesnodes"]
    wanted = {name for name in args.only.split(",") if name}
    print(
        f"# wide bench: pools of about {args.kib} KiB, CPU clock, best of {args.repeat},"
        f" Python {sys.version.split()[0]}"
    )
    print(f"{'shape':24} {'KiB':>5} {'round-trip ms':>13}  {'path':22} {'ms':>9} {'x rt':>8} {'answer KiB':>10}")
    for name, spec in shapes(args.kib).items():
        if wanted and name not in wanted:
            continue
        obj = pool("wide", workerClassName="talos", **spec)
        changed = copy.deepcopy(obj)
        changed["spec"]["maxReplicas"] = 7
        bodies = {
            "CREATE": json.dumps(review(obj, uid="wide-create")).encode(),
            "UPDATE": json.dumps(review(changed, operation="UPDATE", old=obj, uid="wide-update")).encode(),
        }
        for operation, body in bodies.items():
            text = body.decode()
            round_trip = best(lambda text=text: json.dumps(json.loads(text)), args.repeat)
            for route in (mutate, validate):
                took = best(lambda route=route, body=body: server._decide(route, body), args.repeat)
                outcome = server._decide(route, body)
                answer = len(outcome[1].body) if isinstance(outcome, tuple) else 0
                path = f"{route.path.split('/')[1]} {operation}"
                print(
                    f"{name:24} {len(body) / 1024:5.0f} {round_trip * 1000:13.2f}  {path:22} {took * 1000:9.1f}"
                    f" {took / round_trip:8.1f} {answer / 1024:10.1f}"
                )


if __name__ == "__main__":
    main()
