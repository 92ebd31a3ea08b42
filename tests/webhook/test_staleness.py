"""A source's staleness lines on the answers: every decided answer carries them, after the decision's own warnings.

The source is a fixed state that also says its data is not fully current (as the cluster cache
does while a watch is broken: ``tests/adapters/test_kube_staleness.py``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from workerclass.adapters.tls import ReloadingContext
from workerclass.webhook import StaticSource
from workerclass.webhook.server import WebhookServer
from workerclass.webhook.sources import WARNING_LIMIT, staleness

from .cases import pool, table_state, worker_class
from .conftest import fast_settings
from .helpers import CertFiles, Client, Running, review

LINE = "workerclass: deciding on helmreleases.helm.toolkit.fluxcd.io as of 12s ago (watch failed, 500 InternalError)"


class StaleSource(StaticSource):
    def __init__(self) -> None:
        super().__init__(table_state())
        self.lines: Sequence[object] = (LINE,)

    def staleness(self) -> Sequence[object]:
        return self.lines


@pytest.fixture
def stale(certs: CertFiles) -> Iterator[tuple[StaleSource, Client]]:
    source = StaleSource()
    running = Running(WebhookServer(source, tls=ReloadingContext(certs.cert, certs.key), settings=fast_settings()))
    client = Client(running.port, certs.client_context())
    yield source, client
    client.close()
    running.close()


def test_allowed_patched_and_denied_answers_carry_the_lines(stale: tuple[StaleSource, Client]) -> None:
    _, client = stale
    patched = client.post_review("/mutate/kubernetesnodes", review(pool())).response
    assert patched["allowed"] is True and "patch" in patched and patched["warnings"] == [LINE]
    kairos = client.post_review("/validate/kubernetesnodes", review(pool(workerClassName="kairos"))).response
    assert kairos["allowed"] is True and len(kairos["warnings"]) > 1 and kairos["warnings"][-1] == LINE  # after its own
    denied = client.post_review("/validate/kubernetesnodes", review(pool(workerClassName="no-such-class"))).response
    assert denied["allowed"] is False and denied["warnings"] == [LINE]
    deleted = client.post_review(
        "/validate/workerclasses", review(None, operation="DELETE", old=worker_class("talos-example-r1"))
    ).response
    assert deleted["allowed"] is False and deleted["warnings"] == [LINE]


def test_answers_not_decided_on_the_data_carry_none(stale: tuple[StaleSource, Client]) -> None:
    """A request that cannot be decided (400) is refused on its own terms, not on the cluster's data."""
    _, client = stale
    sent = review(pool())
    sent["request"]["operation"] = "CONNECT"
    refused = client.post_review("/validate/kubernetesnodes", sent).response
    assert refused["status"]["code"] == 400 and "warnings" not in refused


def test_a_current_source_adds_nothing(stale: tuple[StaleSource, Client]) -> None:
    source, client = stale
    source.lines = ()
    answer = client.post_review("/validate/kubernetesnodes", review(pool(workerClassName="talos"))).response
    assert answer["allowed"] is True and "warnings" not in answer


def test_lines_are_cut_and_bounded() -> None:
    source = StaleSource()
    source.lines = ["x" * 1000, "", 7, *(f"line {index}" for index in range(40))]
    lines = staleness(source)
    assert lines[0] == "x" * WARNING_LIMIT and WARNING_LIMIT == 256
    assert "" not in lines and 7 not in lines and len(lines) <= 16
    assert staleness(StaticSource(table_state())) == [] and staleness(object()) == []
