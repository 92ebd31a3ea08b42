"""Where the checked objects were read, and what could not be read: :class:`Source`, :class:`Unreadable`.

A STATE folder holds what GitOps keeps; a live read (``preflight --live``) holds what the API
server answered, and names each list it refused (RBAC's 403, a group it does not serve) as an
:class:`Unreadable`. The checks use this in three ways:

- they say where they looked ("not in STATE", "not in the cluster");
- a finding that an unreadable list would make false (a Service "missing" because Services could
  not be listed) becomes a failure naming the list and its HTTP status instead: preflight cannot
  call an installation safe that it could not see;
- cert-manager's CA-injection annotation without a ``caBundle`` is a promise in a folder (the
  cainjector fills the field in the cluster), but a broken injection when read live.

Its edge: plain values.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FOLDER", "Source", "Unreadable"]


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A list the API server refused: which kind, as RBAC names the resource, where, and its status."""

    kind: str
    #: ``plural.group`` as RBAC and kubectl name it (``deployments.apps``; core kinds: ``services``)
    resource: str
    #: the namespace listed; ``None`` for a cluster-scoped list or a list across all namespaces
    namespace: str | None
    #: the HTTP status code and reason (``403 Forbidden``), never the server's message
    status: str

    @property
    def text(self) -> str:
        where = f" in namespace {self.namespace}" if self.namespace else ""
        return f"cannot list {self.resource}{where}: {self.status}"


@dataclass(frozen=True, slots=True)
class Source:
    """Where the objects come from: a STATE folder, or the API server (``live``) with its refusals."""

    live: bool = False
    unreadable: tuple[Unreadable, ...] = ()

    @property
    def where(self) -> str:
        return "the cluster" if self.live else "STATE"

    def unread(self, kind: str, namespace: str | None = None) -> Unreadable | None:
        """The refused list that hides objects of ``kind`` in ``namespace`` (``None``: anywhere), if any.

        A refused list across all namespaces hides every namespace's objects.
        """
        for entry in self.unreadable:
            if entry.kind == kind and (entry.namespace is None or namespace is None or entry.namespace == namespace):
                return entry
        return None


#: a STATE folder: nothing refused, the checks word their findings for a folder
FOLDER = Source()
