"""A WorkerClass in use: the live pools that select it, and why it must be retained.

The design page: "Retain custom classes and the worker controller while live classified pools
depend on them." :func:`deletion_blocker` is the validating webhook's ``ClassInUse`` message on
DELETE and the controller's reason for holding the finalizer, word for word.
"""

from __future__ import annotations

from ..state import State

__all__ = ["SHOWN_POOLS", "deletion_blocker", "in_use_message", "pool_list", "selecting"]

#: how many pool identities a message lists before "..."
SHOWN_POOLS = 5


def pool_list(identities: list[str]) -> str:
    """The first :data:`SHOWN_POOLS` identities, then how many more."""
    shown = ", ".join(identities[:SHOWN_POOLS])
    return shown + (f", ... ({len(identities) - SHOWN_POOLS} more)" if len(identities) > SHOWN_POOLS else "")


def selecting(state: State, name: str) -> list[str]:
    """``NS/NAME`` of the live pools that select ``name``, each once (a KubernetesNodes and a
    HelmRelease of the same name are one pool seen twice when a STATE holds both)."""
    return sorted({pool.identity for pool in state.pools_selecting(name)})


def in_use_message(name: str, pools: list[str]) -> str:
    """Why WorkerClass ``name`` cannot go while ``pools`` (``NS/NAME``) select it: the webhook's
    ``ClassInUse`` message and the controller's reason for holding a deletion."""
    return (
        f"{len(pools)} live pool(s) select WorkerClass {name}: {pool_list(pools)}; "
        "move or remove them before deleting the class"
    )


def deletion_blocker(state: State, name: str) -> str | None:
    """Why WorkerClass ``name`` must be retained, or ``None`` when no live pool selects it."""
    pools = selecting(state, name)
    return in_use_message(name, pools) if pools else None
