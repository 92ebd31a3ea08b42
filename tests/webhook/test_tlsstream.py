"""The TLS stream's close (:meth:`workerclass.webhook.tlsstream.TLSStream.shutdown`) when the
client has gone already: the socket is aborted, nothing raises into the HTTP server's close."""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

import pytest

from workerclass.webhook.tlsstream import TLSStream


class Raw(asyncio.Transport):
    """A socket transport whose peer is gone: ``write_eof`` fails as the kernel says (ENOTCONN)."""

    def __init__(self, *, gone: bool) -> None:
        super().__init__()
        self.gone = gone
        self.aborted = self.eof = False

    def is_closing(self) -> bool:
        return self.aborted

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        if self.gone:
            raise OSError(107, "Transport endpoint is not connected")
        self.eof = True

    def abort(self) -> None:
        self.aborted = True

    def resume_reading(self) -> None:
        pass


class Lingering(TLSStream):
    lingered = 0

    def lingering(self) -> None:
        self.lingered += 1


def stream(raw: Raw) -> Lingering:
    out = Lingering(
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH),
        asyncio.Protocol(),
        buffer=memoryview(bytearray(1024)),
        handshake_timeout=5.0,
    )
    out.connection_made(raw)
    return out


@pytest.mark.asyncio
async def test_a_close_after_the_client_went_aborts_without_raising() -> None:
    raw = Raw(gone=True)
    tls = stream(raw)
    tls.shutdown()  # raised OSError into aiohttp's close before
    assert raw.aborted and not raw.eof
    assert tls.lingered == 0 and tls.timer is None  # nothing to linger for


@pytest.mark.asyncio
async def test_a_close_with_the_client_there_sends_eof_and_lingers() -> None:
    raw = Raw(gone=False)
    tls: Any = stream(raw)
    tls.shutdown()
    assert raw.eof and not raw.aborted
    assert tls.lingered == 1 and tls.timer is not None
    tls.timer.cancel()
