"""TLS material from files: a server SSLContext that follows certificate rotation.

Its edge: PEM files on disk in, an :class:`ssl.SSLContext` for the listening socket out. The
files are polled (cert-manager and kubelet replace a Secret mount by an atomic symlink swap, which
inotify on the file itself misses); when their bytes change, a *new* context is built from them
and, only if the pair loads (key matches certificate), it becomes current. The listening context
never has a certificate loaded into it in place: its ``sni_callback`` hands every new handshake
the current context, so connections in flight keep theirs and none is dropped, and a half-written
rotation (new certificate, old key) is never served; the previous pair stays until the next poll.

Errors and logs name the files, never their contents.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import hashlib
import logging
import ssl
from pathlib import Path

from cryptography import x509

logger = logging.getLogger("workerclass.tls")

#: TLS 1.2 suites: forward-secret AEAD only (TLS 1.3 suites are fixed by OpenSSL and all good)
TLS12_CIPHERS = "ECDHE+AESGCM:ECDHE+CHACHA20"


class TLSFileError(Exception):
    """The certificate or key files cannot be read or do not form a pair."""


def server_context(cert_file: Path, key_file: Path) -> ssl.SSLContext:
    """A TLS 1.2+ server context with the chain and key loaded. Raises :class:`TLSFileError`."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers(TLS12_CIPHERS)
    context.options |= ssl.OP_NO_COMPRESSION | ssl.OP_CIPHER_SERVER_PREFERENCE
    context.set_alpn_protocols(["http/1.1"])
    # No TLS 1.3 session tickets: the API server does not resume webhook sessions, and each
    # ticket costs a handshake's CPU and memory for nothing
    context.num_tickets = 0
    try:
        context.load_cert_chain(str(cert_file), str(key_file))
    except FileNotFoundError as error:
        raise TLSFileError(f"{error.filename}: no such file") from None
    except OSError as error:
        # ssl.SSLError is an OSError: a bad PEM or a key that does not match the certificate
        reason = getattr(error, "reason", None) or error.strerror or type(error).__name__
        raise TLSFileError(f"{cert_file} / {key_file}: cannot load the certificate and key ({reason})") from None
    return context


def certificate_not_after(cert_pem: bytes) -> datetime.datetime | None:
    """When the first certificate of a PEM chain expires, or ``None`` if it cannot be parsed."""
    try:
        return x509.load_pem_x509_certificate(cert_pem).not_valid_after_utc
    except ValueError:
        return None


class ReloadingContext:
    """A listening SSLContext whose certificate follows the files.

    ``context`` is what the server listens with. :meth:`reload` (or the :meth:`run` poller) swaps
    the context new handshakes get; connections already open are unaffected.
    """

    def __init__(self, cert_file: str | Path, key_file: str | Path, *, interval: float = 5.0) -> None:
        self.cert_file = Path(cert_file)
        self.key_file = Path(key_file)
        self.interval = interval
        self.reloads = 0
        self.failures = 0
        self.not_after: datetime.datetime | None = None
        digest, cert_pem = self._read()
        self.context = server_context(self.cert_file, self.key_file)
        self._current = self.context
        self._digest = digest
        self.not_after = certificate_not_after(cert_pem)
        self.context.sni_callback = self._select

    @property
    def current(self) -> ssl.SSLContext:
        return self._current

    def _select(self, connection: ssl.SSLObject, server_name: str | None, context: ssl.SSLContext) -> None:
        # Called for every handshake (with or without SNI); switching ``connection.context``
        # gives this connection the current certificate.
        current = self._current
        if current is not context:
            connection.context = current

    def _read(self) -> tuple[str, bytes]:
        try:
            cert_pem = self.cert_file.read_bytes()
            key_pem = self.key_file.read_bytes()
        except OSError as error:
            raise TLSFileError(f"{error.filename}: cannot read ({error.strerror or type(error).__name__})") from None
        return hashlib.sha256(cert_pem + b"\0" + key_pem).hexdigest(), cert_pem

    def reload(self) -> bool:
        """Swap in the files' pair if their bytes changed and they load; ``True`` when swapped.

        Raises :class:`TLSFileError` when the files changed but do not load (the old pair stays).
        """
        digest, cert_pem = self._read()
        if digest == self._digest:
            return False
        try:
            fresh = server_context(self.cert_file, self.key_file)
        except TLSFileError:
            self.failures += 1
            raise
        # Record what was read before loading: if the files changed again in between, the next
        # poll sees a digest that differs from this one and loads again.
        self._digest = digest
        self._current = fresh
        self.not_after = certificate_not_after(cert_pem)
        self.reloads += 1
        logger.info("TLS certificate reloaded from %s (expires %s)", self.cert_file, self.not_after)
        return True

    async def run(self) -> None:
        """Poll the files every ``interval`` seconds until cancelled."""
        while True:
            await asyncio.sleep(self.interval)
            try:
                await asyncio.to_thread(self.reload)
            except TLSFileError as error:
                logger.warning("TLS files changed but were not loaded, keeping the previous pair: %s", error)

    def start(self) -> asyncio.Task[None]:
        return asyncio.create_task(self.run(), name="workerclass-tls-reload")


async def stop_task(task: asyncio.Task[None] | None) -> None:
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
