"""The webhook's fixtures (test certificates, a served table state): the cache tests serve through it."""

from tests.webhook.conftest import certs, client, served, source, tmp_certs

__all__ = ["certs", "client", "served", "source", "tmp_certs"]
