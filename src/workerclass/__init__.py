"""workerclass: Cozystack worker classes and Kairos worker pools.

The core is a library first; the webhook, the controller and the CLI are its users::

    from workerclass import State, admit, load_state, resolve, render

    state = load_state("STATE")
    decision = admit(state, "CREATE", obj, old=None)
    effective = resolve(state, pool)     # or raises Denied(denials)
    manifests = render(effective)
"""

from __future__ import annotations

from .adapters.folder import load_state
from .admission import Decision, admit, mutate, validate
from .render import render
from .resolve import Effective, resolve
from .state import LoadError, State
from .violations import Denied, Violation

__all__ = [
    "Decision",
    "Denied",
    "Effective",
    "LoadError",
    "State",
    "Violation",
    "admit",
    "load_state",
    "mutate",
    "render",
    "resolve",
    "validate",
]

__version__ = "0.1.0"
