"""The built-in class names talos and kairos keep their bootstrap family: a class under one of them
with the other family is refused (and pools selecting such a class from a folder fail closed);
within its family a built-in name may be redefined.
"""

from __future__ import annotations

import pytest

from tests.builders import has_denial, make_class, make_pool, make_state, refused, resolved
from workerclass.admission import admit


@pytest.mark.parametrize(
    ("name", "bootstrap"),
    [pytest.param("talos", "kairos", id="talos-as-kairos"), pytest.param("kairos", "talos", id="kairos-as-talos")],
)
def test_a_builtin_name_keeps_its_family(name: str, bootstrap: str) -> None:
    obj = make_class(name, bootstrap)
    decision = admit(make_state(), "CREATE", obj)
    assert not decision.allowed
    assert has_denial(decision.denials, "Invalid", "spec.bootstrap")
    # A folder that redefines it anyway: pools selecting it fail closed.
    state = make_state(classes=[obj])
    assert has_denial(refused(state, make_pool(workerClassName=name)), "Invalid", "spec.workerClassName")


def test_a_builtin_name_may_be_redefined_within_its_family() -> None:
    obj = make_class("talos", talos={"version": "v1.13.6"})
    assert admit(make_state(), "CREATE", obj).allowed
    assert resolved(make_state(classes=[obj]), make_pool())["class"] == "talos"
