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
from workerclass.adapters.flux import ChartFollower, ChartRef, chart_ref, parse_chart_source, verify_digest
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
        #: every (kind, namespace, name) asked for
        self.read: list[tuple[str, str, str]] = []

    async def get(self, resource: Any, name: str, *, namespace: str | None = None) -> Any:
        kind = resource._api_info.resource.kind
        self.read.append((kind, namespace or "", name))
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
    chart = await follower.refresh()
    assert chart is not None and chart.known and chart.gated and chart.name == "main+gate"
    assert chart.given  # its text: the controller renders Talos pools with it
    assert "sha256:" + hashlib.sha256(gated).hexdigest() in chart.artifacts
    assert follower.problem == "" and follower.settled
    await follower.refresh()
    assert server.fetched == 1  # the same digest is not downloaded again


@pytest.mark.parametrize(
    ("setup", "says"),
    [
        ("no-artifact", "has no artifact yet"),
        ("bad-digest", "do not match the artifact's digest"),
        ("other-algorithm", "is not sha256:<64 hex digits>"),
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
    chart = await follower.refresh()
    assert chart is not None and chart.problem and says in chart.problem, chart
    assert URL not in chart.problem and "source-controller" not in chart.problem  # never the URL
    state = make_state().with_chart(chart)
    decision = validate(state, "CREATE", make_pool("new", workerClassName="talos"))
    assert [(d.code, d.field) for d in decision.denials] == [("ChartNotGated", "spec.workerClassName")]
    assert "cannot be verified" in decision.denials[0].message


def release(namespace: str, name: str, ref: dict[str, str]) -> dict[str, Any]:
    """A pool HelmRelease as a tenant may write it, naming ``ref`` as its chart."""
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {
            "name": f"kubernetes-nodes-{name}",
            "namespace": namespace,
            "labels": {"apps.cozystack.io/application.kind": "KubernetesNodes"},
        },
        "spec": {"chartRef": dict(ref), "values": {"cluster": "example", "version": "v1.35"}},
    }


async def test_tenant_releases_never_choose_the_chart(gated: bytes, caplog: pytest.LogCaptureFixture) -> None:
    """Four releases in one tenant naming its own HelmChart, three elsewhere naming the cluster's
    ExternalArtifact, no ApplicationDefinition and no hoster setting: no chart is known (the shipped
    facts stand in), nothing a tenant wrote is read, and the follower says so (log and note)."""
    sources, server = cluster_with(gated)
    del sources.objects[("ApplicationDefinition", "", "kubernetes-nodes")]
    evil = {"kind": "HelmChart", "name": "anything", "namespace": "tenant-evil"}
    sources.objects[("HelmChart", "tenant-evil", "anything")] = {
        "kind": "HelmChart",
        "metadata": {"name": "anything", "namespace": "tenant-evil"},
        "status": {"artifact": {"url": URL, "digest": "sha256:" + hashlib.sha256(gated).hexdigest()}},
    }
    real = {"kind": ARTIFACT[0], "name": ARTIFACT[2], "namespace": ARTIFACT[1]}
    pools = [release("tenant-evil", f"evil-{n}", evil) for n in range(4)]
    pools += [release("tenant-example", f"pool-{n}", real) for n in range(3)]
    follower = ChartFollower(sources, fetch=server.fetch)
    with caplog.at_level("WARNING", logger="workerclass.charts"):
        chart = await follower.refresh()
    assert chart is None and server.fetched == 0
    assert ("HelmChart", "tenant-evil", "anything") not in sources.read
    assert "no chart known" in follower.note and "--chart-source" in follower.note
    assert any("no chart known" in record.getMessage() for record in caplog.records)
    state = make_state(pools)
    assert state.chart.assumed  # the shipped facts' chart: ChartNotGated is not checked


async def test_the_hoster_setting_names_the_source(gated: bytes) -> None:
    """``--chart-source`` names the Flux source: read without the ApplicationDefinition, and in
    place of one that names another source."""
    sources, server = cluster_with(gated)
    del sources.objects[("ApplicationDefinition", "", "kubernetes-nodes")]
    pinned = ChartRef(*ARTIFACT)
    chart = await ChartFollower(sources, source=pinned, fetch=server.fetch).refresh()
    assert chart is not None and chart.name == "main+gate" and chart.problem == ""
    sources.objects[("ApplicationDefinition", "", "kubernetes-nodes")] = definition(kind="HelmChart")
    sources.read.clear()
    chart = await ChartFollower(sources, source=pinned, fetch=server.fetch).refresh()
    assert chart is not None and chart.name == "main+gate"
    assert not any(kind == "ApplicationDefinition" for kind, _, _ in sources.read)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("ExternalArtifact/cozy-system/kubernetes-nodes", ""),
        ("HelmChart/cozy-system/kubernetes-nodes", ""),
        ("GitRepository/cozy-system/x", "ExternalArtifact, HelmChart or OCIRepository"),
        ("ExternalArtifact/x", "KIND/NAMESPACE/NAME"),
        ("ExternalArtifact/Cozy_System/x", "not a namespace name"),
        ("ExternalArtifact/cozy-system/a/b", "KIND/NAMESPACE/NAME"),
    ],
    ids=["external-artifact", "helm-chart", "other-kind", "no-namespace", "bad-namespace", "too-many-parts"],
)
async def test_the_hoster_setting_is_parsed(text: str, says: str) -> None:
    if not says:
        ref = parse_chart_source(text)
        assert f"{ref.kind}/{ref.namespace}/{ref.name}" == text
        return
    with pytest.raises(ValueError, match=says):
        parse_chart_source(text)


async def test_admission_follows_the_chart_the_cluster_runs(gated: bytes, ungated: bytes) -> None:
    """Gated: a class may be selected. Without the gate: a class-selecting CREATE is refused, a
    classless UPDATE is not, and an UPDATE that keeps a stored class only warns (ratcheting)."""
    for data, refused in ((gated, False), (ungated, True)):
        sources, server = cluster_with(data)
        chart = await ChartFollower(sources, fetch=server.fetch).refresh()
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
    assert "not sha256" in verify_digest(data, "sha512:" + hashlib.sha512(data).hexdigest())  # refused, not skipped
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


async def test_the_cache_notes_what_the_follower_says() -> None:
    from workerclass.adapters.kube import ClusterCache

    follower = ChartFollower(Sources())
    cache = ClusterCache(SimpleNamespace(), charts=follower)
    assert cache.notes == ()
    await follower.refresh()  # nothing served, no --chart-source: no chart known
    assert cache.notes == (follower.note,) and "no chart known" in cache.notes[0]


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
