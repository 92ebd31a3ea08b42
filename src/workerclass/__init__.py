"""workerclass: Cozystack worker classes and Kairos worker pools.

The core is a library first; the webhook, the controller and the CLI are its users::

    from workerclass import State, admit, resolve, render

    state = State.load("STATE")
    decision = admit(state, "CREATE", obj, old=None)
    effective = resolve(state, pool)     # or raises Denied(denials)
    manifests = render(effective)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .admission import Decision, admit, mutate, validate
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
    "mutate",
    "render",
    "resolve",
    "validate",
]

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .render import render as render
else:

    def __getattr__(name: str) -> Any:
        # The renderer is imported lazily so admission-only users (the webhook) skip it.
        if name == "render":
            from .render import render

            return render
        raise AttributeError(name)
