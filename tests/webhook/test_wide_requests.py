"""A wide request costs what it is, never its square: one tenant's pool cannot hold the loop.

The webhook serves every tenant on one event loop. A pool of 20,000 refused roles, or an UPDATE of
a pool with 10,000 refused labels left as stored, is a few hundred kilobytes; each answer line is
compared with the request's values, and the ratchet compares each denial's field with the stored
object's. These tests count that work (no clock): the answer carries at most
:data:`~workerclass.webhook.review.MAX_ANSWERED` denials and warnings, so at most that many lines
are compared with the values, and the ratchet compares each value it finds once.
"""

from __future__ import annotations

import copy
import gc
import importlib
import json
import string
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from workerclass import validate
from workerclass.adapters.tls import ReloadingContext
from workerclass.webhook import StaticSource
from workerclass.webhook import review as wire
from workerclass.webhook.routes import ROUTES
from workerclass.webhook.server import WebhookServer

from .cases import pool, table_state
from .conftest import fast_settings
from .helpers import CertFiles, Client, Running, review

VALIDATE = "/validate/kubernetesnodes"
#: the module (the package's ``ratchet`` is its function)
ratchet_module = importlib.import_module("workerclass.admission.ratchet")


@pytest.fixture
def client(certs: CertFiles) -> Iterator[Client]:
    running = Running(
        WebhookServer(
            StaticSource(table_state()), tls=ReloadingContext(certs.cert, certs.key), settings=fast_settings()
        )
    )
    client = Client(running.port, certs.client_context())
    yield client
    client.close()
    running.close()


def test_thousands_of_denials_are_answered_as_fifty_and_a_count(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    compared: list[str] = []
    real = wire.scrubbed

    def counting(text: str, values: list[str]) -> str:
        compared.append(text)
        return real(text, values)

    monkeypatch.setattr(wire, "scrubbed", counting)
    roles = [f"-r{index}" for index in range(3000)]  # none a role name, none of a safe shape
    reply = client.post_review(VALIDATE, review(pool("wide", workerClassName="talos", roles=roles)))
    assert reply.status == 200
    answer = json.loads(reply.body)["response"]
    assert answer["allowed"] is False
    causes = answer["status"]["details"]["causes"]
    assert [cause["field"] for cause in causes] == [f"spec.roles[{index}]" for index in range(wire.MAX_ANSWERED)]
    assert answer["status"]["message"].endswith(
        f"; and {3000 - wire.MAX_ANSWERED} more denials not shown (fix these first)"
    )
    assert len(compared) <= wire.MAX_ANSWERED + len(answer.get("warnings", ()))


def test_an_update_leaving_thousands_of_refused_labels_compares_each_value_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pairs: list[tuple[Any, Any]] = []
    real = ratchet_module._same

    def counting(left: Any, right: Any) -> bool:
        pairs.append((left, right))
        return real(left, right)

    monkeypatch.setattr(ratchet_module, "_same", counting)
    labels = {f"team{index}": "-refused-" for index in range(2000)}
    roles = [f"-r{index}" for index in range(2000)]
    old = pool("wide", workerClassName="talos", labels=labels, roles=roles)
    new = copy.deepcopy(old)
    new["spec"]["maxReplicas"] = 7
    decision = validate(table_state(), "UPDATE", new, old)
    assert decision.allowed, [str(v) for v in decision.denials[:3]]
    assert len(decision.warnings) >= 4000  # each stored refusal said (the door answers fifty)
    # one comparison per label (each its own value), one for the whole roles list
    assert len(pairs) <= len(labels) + 1 + 5


class _CountingDict(dict[str, Any]):
    """A dict that counts how often its keys are walked."""

    walks = 0

    def __iter__(self) -> Iterator[str]:
        type(self).walks += 1
        return super().__iter__()


def test_the_ratchet_indexes_a_wide_mapping_once() -> None:
    labels = _CountingDict({f"team{index}": "-refused-" for index in range(500)})
    values = {"labels": labels}
    fields = [f"spec.labels.team{index}" for index in range(500)]
    indexes: dict[int, dict[str, Any]] = {}
    _CountingDict.walks = 0
    found = [ratchet_module.value_at({"spec": values}, field, indexes) for field in fields]
    assert found == ["-refused-"] * 500
    assert _CountingDict.walks == 1


#: where a tenant's text reached a cache that kept it: (spec overrides of a classified pool, given
#: a string of 20,000 letters and one of 20,000 digits, both distinct per request)
_CACHED_FIELDS: dict[str, Callable[[str, str], dict[str, Any]]] = {
    "unknown-key": lambda text, digits: {text: 1},
    "label-key": lambda text, digits: {"labels": {text: "v"}},
    "mirror-key": lambda text, digits: {"talos": {"registryMirrors": {text: {"endpoints": ["https://m.example"]}}}},
    "pod-cpu-limit": lambda text, digits: {"podCpuLimit": digits},
    "kubelet-memory": lambda text, digits: {"kubelet": {"systemReservedMemory": digits + "Mi"}},
    "kubectl-image": lambda text, digits: {"images": {"kubectl": text}},
    "talos-version": lambda text, digits: {"talos": {"version": "v1.13.6-" + text}},
}


@pytest.mark.parametrize("spec", _CACHED_FIELDS.values(), ids=_CACHED_FIELDS.keys())
def test_distinct_requests_leave_no_text_behind(spec: Callable[[str, str], dict[str, Any]]) -> None:
    """A module's cache of 4,096 entries kept each request's string whole: 4,096 requests of a
    megabyte, 4 GiB for as long as the webhook runs. 30 requests of 20,000 characters each now
    leave less than a tenth of what they carried (traced after a collection)."""
    server = WebhookServer(StaticSource(table_state()), tls=None, settings=fast_settings())
    routes = {route.path: route for route in ROUTES}
    paths = [routes["/mutate/kubernetesnodes"], routes["/validate/kubernetesnodes"]]
    bodies = []
    for index in range(30):
        text = f"{index:05d}" + string.ascii_lowercase[index % 26] * 19_995
        digits = "1" * 19_995 + f"{index:05d}"
        obj = pool(f"wide{index}", workerClassName="talos", **spec(text, digits))
        bodies.append(json.dumps(review(obj, uid=f"u{index}")).encode())
    server._decide(paths[1], bodies[0])  # the modules' first use (imports, compiled patterns) is not a request's
    sent = sum(len(body) for body in bodies[1:])
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for body in bodies[1:]:
            for path in paths:
                server._decide(path, body)
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert retained < sent / 10, f"{retained} bytes kept of {sent} sent"
