"""The webhook paths of API.md section 5: which kind each admits and which core function decides.

Kept apart from the server (no aiohttp here) so that the install manifests are generated from
the same table the server routes by.
"""

from __future__ import annotations

from dataclasses import dataclass

from .review import Target

COZYSTACK = "cozystack.io"
APPS = "apps.cozystack.io"


@dataclass(frozen=True, slots=True)
class Route:
    """One webhook path: its metric/log name, the kind it admits, and which core function decides."""

    path: str
    name: str
    target: Target
    mutating: bool
    decider: str  # "mutate" or "validate"


_NODES = Target("KubernetesNodes", APPS)
_CLASSES = Target("WorkerClass", COZYSTACK)
_PLANES = Target("ComputePlane", APPS)

ROUTES: tuple[Route, ...] = (
    Route("/mutate/kubernetesnodes", "mutate-kubernetesnodes", _NODES, True, "mutate"),
    Route("/validate/kubernetesnodes", "validate-kubernetesnodes", _NODES, False, "validate"),
    Route("/validate/workerclasses", "validate-workerclasses", _CLASSES, False, "validate"),
    Route("/validate/computeplanes", "validate-computeplanes", _PLANES, False, "validate"),
)
