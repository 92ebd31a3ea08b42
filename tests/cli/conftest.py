"""The webhook's test-certificate fixture: ``serve webhook`` runs as a process with those files."""

from tests.webhook.conftest import tmp_certs

__all__ = ["tmp_certs"]
