"""A wide request costs what it is, never its square: one tenant's pool cannot hold the loop.

The webhook serves every tenant on one event loop. A pool of 20,000 refused roles, or an UPDATE of
a pool with 10,000 refused labels left as stored, is a few hundred kilobytes; each answer line is
compared with the request's values, and the ratchet compares each denial's field with the stored
object's. These tests count that work (no clock): the answer carries at most
:data:`~workerclass.webhook.review.MAX_ANSWERED` denials and warnings, so at most that many lines
are compared with the values, and the ratchet compares each value it finds once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from workerclass.adapters.tls import ReloadingContext
from workerclass.webhook import StaticSource
from workerclass.webhook import review as wire
from workerclass.webhook.server import WebhookServer

from .cases import pool, table_state
from .conftest import fast_settings
from .helpers import CertFiles, Client, Running, review

VALIDATE = "/validate/kubernetesnodes"


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
