"""A WorkerClass in use: the live pools that select it, and why it must be retained.

The design page: "Retain custom classes and the worker controller while live classified pools
depend on them." :func:`deletion_blocker` is the validating webhook's ``ClassInUse`` message on
DELETE and the controller's reason for holding the finalizer, word for word.

What a tenant may read says counts, never names: a WorkerClass is cluster-scoped and readable
wherever tenants pick classes (its status), and the webhook's answers reach whoever can call its
port. :func:`counted` is how every such text says which pools; :func:`pool_list` (names) is for
the hoster's own logs only. The hoster finds the names against the cluster (:data:`LIST_POOLS`).
"""

from __future__ import annotations

from ..state import State

__all__ = [
    "LIST_POOLS",
    "SHOWN_POOLS",
    "counted",
    "counted_as",
    "deletion_blocker",
    "in_use_message",
    "pool_list",
    "selecting",
]

#: how many pool identities a log line lists before "..."
SHOWN_POOLS = 5
#: how the hoster lists the pools a count stands for
LIST_POOLS = "the hoster lists them with workerclass resolve over the cluster's pools"


def counted(identities: list[str], noun: str = "pool(s)") -> str:
    """``N pool(s) in M namespace(s)``: which pools, said without naming a pool or a namespace."""
    namespaces = {identity.split("/", 1)[0] for identity in identities}
    return counted_as(len(identities), len(namespaces), noun)


def counted_as(pools: int, namespaces: int, noun: str = "pool(s)") -> str:
    """:func:`counted`'s words for ``pools`` pools in ``namespaces`` namespaces, already counted."""
    return f"{pools} {noun} in {namespaces} namespace(s)"


def pool_list(identities: list[str]) -> str:
    """The first :data:`SHOWN_POOLS` identities, then how many more: for the hoster's logs only."""
    shown = ", ".join(identities[:SHOWN_POOLS])
    return shown + (f", ... ({len(identities) - SHOWN_POOLS} more)" if len(identities) > SHOWN_POOLS else "")


def selecting(state: State, name: str) -> list[str]:
    """``NS/NAME`` of the live pools that select ``name``, each once (a KubernetesNodes and a
    HelmRelease of the same name are one pool seen twice when a STATE holds both)."""
    return sorted({pool.identity for pool in state.pools_selecting(name)})


def in_use_message(name: str, pools: list[str]) -> str:
    """Why WorkerClass ``name`` cannot go while ``pools`` (``NS/NAME``) select it: the webhook's
    ``ClassInUse`` message and the controller's reason for holding a deletion."""
    namespaces = {identity.split("/", 1)[0] for identity in pools}
    return in_use_message_as(name, len(pools), len(namespaces))


def in_use_message_as(name: str, pools: int, namespaces: int) -> str:
    """:func:`in_use_message` of ``pools`` pools in ``namespaces`` namespaces, already counted."""
    return (
        f"{counted_as(pools, namespaces, 'live pool(s)')} select WorkerClass {name}; move or remove them "
        f"before deleting the class ({LIST_POOLS})"
    )


def deletion_blocker(state: State, name: str) -> str | None:
    """Why WorkerClass ``name`` must be retained, or ``None`` when no live pool selects it."""
    pools = selecting(state, name)
    return in_use_message(name, pools) if pools else None
