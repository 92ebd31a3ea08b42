"""Fuzz the admission webhook over HTTPS for a long run: 5xx, crashes and memory (issue 10).

    .venv/bin/python bench/fuzz_bench.py [--bodies 1000000] [--concurrency 8] [--seed 1]

Starts the webhook (``tests.webhook.server_child``: the admission tests' state, the default
settings) in a process of its own and sends it ``--bodies`` request bodies over keep-alive HTTPS
connections on loopback: real AdmissionReviews with random values put at random places of the
object (any JSON type, deep and wide values, secret-shaped strings), envelopes with random fields,
truncated reviews, arbitrary JSON and arbitrary bytes, to the four webhook paths. Counts every
answer by kind and reports:

* HTTP 5xx answers, and AdmissionReview denials with ``status.code`` 500 (the core raised);
* malformed answers (a 200 that is not an AdmissionReview response for the request's uid);
* connection failures, and whether the server process died (a crash);
* the server's RSS at the start, its peak, and at the end;
* answers quoting the marker secret planted in secret-shaped values.

Never run as a test; the suite's bounded version is ``tests/webhook/test_properties.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import random
import signal
import ssl
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

PATHS = ["/mutate/kubernetesnodes", "/validate/kubernetesnodes", "/validate/workerclasses", "/validate/computeplanes"]
MARK = "fuzzS3CRETmark"
SECRETS = [
    f"https://user:{MARK}@registry.example.com/",
    f"-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl{MARK}bnNz\n-----END OPENSSH PRIVATE KEY-----\n",
    f"user:{MARK}@host",
]
SPEC_KEYS = [
    "cluster", "workerClassName", "version", "minReplicas", "maxReplicas", "instanceType", "labels", "taints",
    "roles", "kernelModules", "talos", "kairos", "kubevirt", "proxmox", "sshKeys", "registryMirrors", "gpus",
    "storageClass", "image", "resources", "nodeGroups", "bootstrap", "osImage",
]  # fmt: skip


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Bodies:
    """Random request bodies from one seed (reproducible: ``--seed``)."""

    def __init__(self, seed: int) -> None:
        from tests.webhook.cases import compute_plane, pool, stored, worker_class

        self.random = random.Random(seed)
        alphabet = "abcXYZ019-._/:@ \n\t\"\\'{}[]é漢\u0000\u200b"
        #: random strings made once (building each one per body made the client the bottleneck)
        self.strings = [
            "".join(self.random.choice(alphabet) for _ in range(length))
            for length in [1, 5, 20, 63, 64, 300, 5000]
            for _ in range(64)
        ]
        self.seeds = [
            pool(workerClassName="talos"),
            pool(),
            pool(workerClassName="kairos"),
            stored("KubernetesNodes:tenant-example/example-talos"),
            worker_class("fuzz-class", bootstrap="talos"),
            stored("WorkerClass:/talos-example-r1"),
            compute_plane(md0={"minReplicas": 1}),
        ]

    def scalar(self) -> Any:
        pick = self.random.random()
        if pick < 0.15:
            return self.random.choice(SECRETS)
        if pick < 0.3:
            return self.random.choice([None, True, False, 0, -1, 2**63, 1e308, -0.0, "", "v1.35", "talos", "kairos"])
        if pick < 0.55:
            return self.random.randint(-(2**40), 2**40)
        if pick < 0.65:
            return self.random.random() * 10 ** self.random.randint(-5, 20)
        return self.random.choice(self.strings)

    def value(self, depth: int = 0) -> Any:
        pick = self.random.random()
        if depth > 4 or pick < 0.5:
            return self.scalar()
        if pick < 0.75:
            return [self.value(depth + 1) for _ in range(self.random.randint(0, 5))]
        return {str(self.scalar())[:40]: self.value(depth + 1) for _ in range(self.random.randint(0, 5))}

    def mutated(self) -> dict[str, Any]:
        obj = json.loads(json.dumps(self.random.choice(self.seeds)))
        spec = obj.setdefault("spec", {})
        for _ in range(self.random.randint(1, 4)):
            target = spec if isinstance(spec, dict) else obj
            key = self.random.choice(SPEC_KEYS)
            inner = target.get(key)
            if isinstance(inner, dict) and inner and self.random.random() < 0.5:
                inner[self.random.choice(list(inner))] = self.value(1)
            else:
                target[key] = self.value()
        if self.random.random() < 0.1:
            obj["metadata"] = self.value()
        if self.random.random() < 0.05:
            obj["spec"] = self.value()
        return obj

    def path_for(self, obj: dict[str, Any], fallback: str) -> str:
        kind = obj.get("kind")
        if kind == "KubernetesNodes":
            return self.random.choice(PATHS[:2])
        return {"WorkerClass": PATHS[2], "ComputePlane": PATHS[3]}.get(kind, fallback)  # type: ignore[arg-type]

    def body(self) -> tuple[str, bytes]:
        path = self.random.choice(PATHS)
        pick = self.random.random()
        if pick < 0.6:  # a real review around a mutated object, mostly on a path serving its kind
            obj = self.mutated()
            if self.random.random() < 0.8:
                path = self.path_for(obj, path)
            operation = self.random.choice(["CREATE", "UPDATE", "DELETE"])
            old = self.mutated() if operation != "CREATE" else None
            sent = envelope(obj if operation != "DELETE" else None, operation, old, self.random)
            if self.random.random() < 0.2:  # an envelope field replaced
                request = sent["request"]
                request[self.random.choice(list(request))] = self.value()
            return path, json.dumps(sent).encode()
        if pick < 0.7:  # a value nested near orjson's limit, or wide
            obj = self.mutated()
            depth = self.random.choice([100, 900, 1010, 1030])
            sent = json.dumps(envelope(obj, "CREATE", None, self.random)).replace(
                '"spec": {', '"spec": {"deep": ' + "[" * depth + "1" + "]" * depth + ", ", 1
            )
            return path, sent.encode()
        if pick < 0.8:  # a truncated review
            text = json.dumps(envelope(self.mutated(), "CREATE", None, self.random)).encode()
            return path, text[: self.random.randint(0, len(text))]
        if pick < 0.9:  # arbitrary JSON
            return path, json.dumps(self.value()).encode()
        return path, self.random.randbytes(self.random.randint(0, 2048))  # arbitrary bytes


def envelope(obj: Any, operation: str, old: Any, rng: random.Random) -> dict[str, Any]:
    """An AdmissionReview as the API server sends it, around objects of any shape."""
    subject = obj if isinstance(obj, dict) else old if isinstance(old, dict) else {}
    api_version = subject.get("apiVersion")
    group, _, version = api_version.rpartition("/") if isinstance(api_version, str) else ("", "", "v1")
    metadata = subject.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    request: dict[str, Any] = {
        "uid": f"{rng.getrandbits(32):08x}-0000-4000-8000-{rng.getrandbits(48):012x}",
        "kind": {"group": group, "version": version, "kind": subject.get("kind")},
        "operation": operation,
        "name": metadata.get("name", ""),
        "object": obj,
        "oldObject": old,
        "dryRun": False,
        "userInfo": {"username": "fuzz"},
    }
    if isinstance(metadata.get("namespace"), str):
        request["namespace"] = metadata["namespace"]
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def classify(status: int, body: bytes, uid: Any) -> str:
    if status >= 500:
        return "http_5xx"
    if status != 200:
        return f"http_{status}"
    try:
        data = json.loads(body)
        response = data["response"]
        assert data["apiVersion"] == "admission.k8s.io/v1" and data["kind"] == "AdmissionReview"
        assert isinstance(response["allowed"], bool) and isinstance(response["uid"], str)
        if uid is not None:
            assert response["uid"] == uid
        if "patch" in response:
            assert isinstance(json.loads(base64.b64decode(response["patch"])), list)
    except Exception:
        return "malformed"
    if response["allowed"]:
        return "allowed"
    code = response["status"]["code"]
    return "denied_500" if code == 500 else ("refused_400" if code == 400 else "denied")


async def load(args: argparse.Namespace, port: int, context: ssl.SSLContext, pid: int) -> dict[str, Any]:
    import aiohttp

    counts: Counter[str] = Counter()
    leaks = 0
    peak = rss_mib(pid)
    bodies = Bodies(args.seed)
    sent = 0
    started = time.monotonic()

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal sent, leaks, peak
        while sent < args.bodies:
            sent += 1
            number = sent
            path, body = bodies.body()
            try:
                uid = json.loads(body)["request"]["uid"]
            except Exception:
                uid = None
            try:
                async with session.post(
                    f"https://127.0.0.1:{port}{path}", data=body, headers={"Content-Type": "application/json"}
                ) as reply:
                    answer = await reply.read()
                    kind = classify(reply.status, answer, uid if isinstance(uid, str) else None)
            except (aiohttp.ClientError, OSError, TimeoutError) as error:
                kind = f"connection_{type(error).__name__}"
                answer = b""
            counts[kind] += 1
            # the uid comes back verbatim, as the protocol wants (JSON-escaped in the answer)
            echoed = answer.replace(json.dumps(uid)[1:-1].encode(), b"") if isinstance(uid, str) else answer
            if MARK.encode() in echoed:
                leaks += 1
            if number % args.report_every == 0:
                peak = max(peak, rss_mib(pid))
                rate = number / (time.monotonic() - started)
                print(f"{number:>9} bodies, {rate:,.0f}/s, RSS {rss_mib(pid):.1f} MiB, {dict(counts)}", flush=True)

    connector = aiohttp.TCPConnector(ssl=context, limit=args.concurrency)
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        await asyncio.gather(*(worker(session) for _ in range(args.concurrency)))
    return {
        "bodies": sent,
        "seconds": time.monotonic() - started,
        "counts": dict(counts),
        "leaks": leaks,
        "peak_rss_mib": max(peak, rss_mib(pid)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bodies", type=int, default=1_000_000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--report-every", type=int, default=20_000)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    from tests.webhook.helpers import CertFiles

    with tempfile.TemporaryDirectory(prefix="webhook-fuzz-") as temporary:
        workdir = Path(temporary)
        certs = CertFiles.create(workdir / "certs")
        port_file = workdir / "port"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
        with (workdir / "server.log").open("wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "tests.webhook.server_child", str(certs.cert), str(certs.key), str(port_file)],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        try:
            deadline = time.monotonic() + 30
            while not port_file.exists() or not port_file.read_text():
                if process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the webhook did not start")
                time.sleep(0.05)
            start_rss = rss_mib(process.pid)
            result = asyncio.run(load(args, int(port_file.read_text()), certs.client_context(), process.pid))
            result["start_rss_mib"] = start_rss
            result["end_rss_mib"] = rss_mib(process.pid)
            result["crashed"] = process.poll() is not None
            errors = [line for line in (workdir / "server.log").read_text().splitlines() if "ERROR" in line]
            result["server_error_lines"] = len(errors)
            result["server_error_samples"] = errors[:5]
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(20)
                except subprocess.TimeoutExpired:
                    process.kill()
    counts = result["counts"]
    print(
        f"{result['bodies']:,} bodies in {result['seconds']:.0f} s ({result['bodies'] / result['seconds']:,.0f}/s), "
        f"concurrency {args.concurrency}, seed {args.seed}"
    )
    print(f"answers: {dict(sorted(counts.items()))}")
    print(
        f"HTTP 5xx: {counts.get('http_5xx', 0)}; 500 denials (core raised): {counts.get('denied_500', 0)}; "
        f"malformed: {counts.get('malformed', 0)}; connection failures: "
        f"{sum(v for k, v in counts.items() if k.startswith('connection_'))}; crashed: {result['crashed']}; "
        f"answers quoting the marker secret: {result['leaks']}; server ERROR log lines: {result['server_error_lines']}"
    )
    print(
        f"server RSS: {result['start_rss_mib']:.1f} MiB at start, {result['peak_rss_mib']:.1f} peak, "
        f"{result['end_rss_mib']:.1f} at the end"
    )
    for line in result["server_error_samples"]:
        print(f"  {line[:200]}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
