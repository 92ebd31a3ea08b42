"""The chart the pools run, read through Flux's source API (:class:`~workerclass.adapters.flux.ChartFollower`):
the ApplicationDefinition's chartRef, the source's artifact downloaded and checked against its digest,
the chart identified; what it says when it cannot tell; and admission refusing a class where the
chart lacks the gate or cannot be verified (``ChartNotGated``), classless pools untouched."""

from __future__ import annotations

import asyncio
import copy
import hashlib
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("lightkube")

from tests.builders import make_pool, make_state
from tests.shared import chart_path, package_chart
from workerclass.adapters.flux import ChartFollower, chart_ref, verify_digest
from workerclass.admission import validate
from workerclass.chart.source import ChartSource

pytestmark = pytest.mark.asyncio

ARTIFACT = ("ExternalArtifact", "cozy-system", "cozystack-kubernetes-nodes-application-kubevirt-kubernetes-nodes")
URL = "http://source-controller.flux-system.svc.cluster.local./externalartifact/x.tar.gz"


class Refused(Exception):
    def __init__(self, code: int, reason: str) -> None:
        self.status = SimpleNamespace(code=code, reason=reason)


class Sources:
    """The slice of ``lightkube.AsyncClient`` the follower uses (``get``), over plain objects."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.refusals: dict[str, Refused] = {}

    async def get(self, resource: Any, name: str, *, namespace: str | None = None) -> Any:
        kind = resource._api_info.resource.kind
        if kind in self.refusals:
            raise self.refusals[kind]
        found = self.objects.get((kind, namespace or "", name))
        if found is None:
            raise Refused(404, "NotFound")
        return copy.deepcopy(found)


def definition(kind: str = ARTIFACT[0]) -> dict[str, Any]:
    return {
        "apiVersion": "cozystack.io/v1alpha1",
        "kind": "ApplicationDefinition",
        "metadata": {"name": "kubernetes-nodes"},
        "spec": {"release": {"chartRef": {"kind": kind, "name": ARTIFACT[2], "namespace": ARTIFACT[1]}}},
    }


def source(digest: str | None) -> dict[str, Any]:
    status = {"artifact": {"url": URL, "digest": digest, "revision": "latest@" + digest}} if digest else {}
    return {"kind": ARTIFACT[0], "metadata": {"name": ARTIFACT[2], "namespace": ARTIFACT[1]}, "status": status}


class Server:
    """What source-controller serves: the bytes of each artifact URL; every download counted."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.fetched = 0
        self.fail: Exception | None = None

    async def fetch(self, url: str, timeout: float, limit: int) -> bytes:
        self.fetched += 1
        if self.fail is not None:
            raise self.fail
        assert url == URL and timeout > 0 and limit > 0
        return self.data


def cluster_with(data: bytes, *, digest: str | None = None) -> tuple[Sources, Server]:
    sources = Sources()
    sources.objects[("ApplicationDefinition", "", "kubernetes-nodes")] = definition()
    sources.objects[ARTIFACT] = source(digest or "sha256:" + hashlib.sha256(data).hexdigest())
    return sources, Server(data)


@pytest.fixture(scope="module")
def gated() -> bytes:
    return package_chart(chart_path("main+gate"))


@pytest.fixture(scope="module")
def ungated() -> bytes:
    return package_chart(chart_path("main"))


async def test_the_artifact_is_read_verified_and_identified(gated: bytes) -> None:
    sources, server = cluster_with(gated)
    follower = ChartFollower(sources, fetch=server.fetch)
    chart = await follower.refresh(None)
    assert chart is not None and chart.known and chart.gated and chart.name == "main+gate"
    assert chart.given  # its text: the controller renders Talos pools with it
    assert "sha256:" + hashlib.sha256(gated).hexdigest() in chart.artifacts
    assert follower.problem == "" and follower.settled
    await follower.refresh(None)
    assert server.fetched == 1  # the same digest is not downloaded again


@pytest.mark.parametrize(
    ("setup", "says"),
    [
        ("no-artifact", "has no artifact yet"),
        ("bad-digest", "do not match the artifact's digest"),
        ("other-algorithm", "cannot check"),
        ("download-fails", "downloading the artifact of ExternalArtifact"),
        ("definition-forbidden", "reading ApplicationDefinition kubernetes-nodes failed (403 Forbidden)"),
        ("source-missing", "reading ExternalArtifact cozy-system/"),
        ("no-chart-ref", "names no Flux source"),
        ("not-a-chart", "not a chart folder or a .tgz chart archive"),
    ],
    ids=lambda value: value if " " not in value else "",
)
async def test_what_cannot_be_verified_is_said_and_fails_closed(gated: bytes, setup: str, says: str) -> None:
    sources, server = cluster_with(gated)
    if setup == "no-artifact":
        sources.objects[ARTIFACT] = source(None)
    elif setup == "bad-digest":
        sources.objects[ARTIFACT] = source("sha256:" + "0" * 64)
    elif setup == "other-algorithm":
        sources.objects[ARTIFACT] = source("blake3:" + "0" * 64)
    elif setup == "download-fails":
        server.fail = ConnectionRefusedError(f"cannot connect to {URL}")
    elif setup == "definition-forbidden":
        sources.refusals["ApplicationDefinition"] = Refused(403, "Forbidden")
    elif setup == "source-missing":
        del sources.objects[ARTIFACT]
    elif setup == "no-chart-ref":
        sources.objects[("ApplicationDefinition", "", "kubernetes-nodes")] = definition(kind="GitRepository")
    elif setup == "not-a-chart":
        server.data = b"not a tarball"
        sources.objects[ARTIFACT] = source("sha256:" + hashlib.sha256(server.data).hexdigest())
    follower = ChartFollower(sources, fetch=server.fetch)
    chart = await follower.refresh(None)
    assert chart is not None and chart.problem and says in chart.problem, chart
    assert URL not in chart.problem and "source-controller" not in chart.problem  # never the URL
    state = make_state().with_chart(chart)
    decision = validate(state, "CREATE", make_pool("new", workerClassName="talos"))
    assert [(d.code, d.field) for d in decision.denials] == [("ChartNotGated", "spec.workerClassName")]
    assert "cannot be verified" in decision.denials[0].message


async def test_a_cluster_without_an_application_definition_falls_back_to_the_releases_chart(gated: bytes) -> None:
    sources, server = cluster_with(gated)
    del sources.objects[("ApplicationDefinition", "", "kubernetes-nodes")]
    release = {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {
            "name": "kubernetes-nodes-example-direct",
            "namespace": "tenant-example",
            "labels": {"apps.cozystack.io/application.kind": "KubernetesNodes"},
        },
        "spec": {
            "chartRef": {"kind": ARTIFACT[0], "name": ARTIFACT[2], "namespace": ARTIFACT[1]},
            "values": {"cluster": "example", "version": "v1.35"},
        },
    }
    follower = ChartFollower(sources, fetch=server.fetch)
    assert await follower.refresh(make_state()) is None  # nothing names a chart: not checked
    chart = await follower.refresh(make_state([release]))
    assert chart is not None and chart.name == "main+gate"


async def test_admission_follows_the_chart_the_cluster_runs(gated: bytes, ungated: bytes) -> None:
    """Gated: a class may be selected. Without the gate: a class-selecting CREATE is refused, a
    classless UPDATE is not, and an UPDATE that keeps a stored class only warns (ratcheting)."""
    for data, refused in ((gated, False), (ungated, True)):
        sources, server = cluster_with(data)
        chart = await ChartFollower(sources, fetch=server.fetch).refresh(None)
        assert chart is not None and chart.known and chart.gated is not refused
        stored = make_pool("kept", workerClassName="talos", minReplicas=1)
        legacy = make_pool("legacy", workerClassName=None)
        legacy["spec"].pop("workerClassName", None)
        state = make_state([stored, legacy]).with_chart(chart)
        created = validate(state, "CREATE", make_pool("new", workerClassName="kairos"))
        assert [d.code for d in created.denials] == (["ChartNotGated"] if refused else [])
        scaled = copy.deepcopy(legacy)
        scaled["spec"]["maxReplicas"] = 5
        assert validate(state, "UPDATE", scaled, legacy).allowed
        kept = copy.deepcopy(stored)
        kept["spec"]["maxReplicas"] = 5
        decision = validate(state, "UPDATE", kept, stored)
        assert decision.allowed
        assert any("ChartNotGated" in warning for warning in decision.warnings) is refused


async def test_chart_refs_and_digests() -> None:
    assert chart_ref({"kind": "ExternalArtifact", "name": "a"}, "ns").namespace == "ns"  # type: ignore[union-attr]
    assert chart_ref({"kind": "GitRepository", "name": "a"}) is None
    assert chart_ref("no") is None
    data = b"bytes"
    assert verify_digest(data, "sha256:" + hashlib.sha256(data).hexdigest()) == ""
    assert verify_digest(data, "sha512:" + hashlib.sha512(data).hexdigest()) == ""
    assert "do not match" in verify_digest(data, "sha256:" + "1" * 64)


async def test_run_hands_each_change_to_the_cache(gated: bytes, ungated: bytes) -> None:
    sources, server = cluster_with(gated)
    follower = ChartFollower(sources, fetch=server.fetch, interval=0.01)
    seen: list[ChartSource | None] = []
    cache = SimpleNamespace(state=None, set_chart=seen.append)
    stop = asyncio.Event()
    task = asyncio.create_task(follower.run(cache, stop=stop))
    async with asyncio.timeout(5):
        while not seen:
            await asyncio.sleep(0.01)
        server.data = ungated
        sources.objects[ARTIFACT] = source("sha256:" + hashlib.sha256(ungated).hexdigest())
        while len(seen) < 2:
            await asyncio.sleep(0.01)
    stop.set()
    await task
    assert [chart.name for chart in seen if chart is not None] == ["main+gate", "main"]


async def test_the_first_read_waits_for_the_cache_and_is_always_handed_over(gated: bytes) -> None:
    """Read before the cache's first State, the follower would settle on "no chart" (the pools'
    releases unknown); and its first read, even of no chart, is announced, so that a controller
    waiting for the chart wakes up."""
    sources, server = cluster_with(gated)
    follower = ChartFollower(sources, fetch=server.fetch, interval=3600)
    seen: list[ChartSource | None] = []
    synced = asyncio.Event()

    async def wait_synced() -> None:
        await synced.wait()

    cache = SimpleNamespace(state=None, set_chart=seen.append, wait_synced=wait_synced)
    stop = asyncio.Event()
    task = asyncio.create_task(follower.run(cache, stop=stop))
    await asyncio.sleep(0.1)
    assert not follower.settled and seen == []  # nothing read before the cache has a State
    synced.set()
    async with asyncio.timeout(5):
        while not seen:
            await asyncio.sleep(0.01)
    assert follower.settled and seen[0] is not None and seen[0].name == "main+gate"
    stop.set()
    await task

    nothing = ChartFollower(Sources(), fetch=server.fetch, interval=3600)
    handed: list[ChartSource | None] = []
    stop = asyncio.Event()
    task = asyncio.create_task(nothing.run(SimpleNamespace(state=None, set_chart=handed.append), stop=stop))
    async with asyncio.timeout(5):
        while not nothing.settled:
            await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    stop.set()
    await task
    assert handed == [None]  # no chart named: said all the same
