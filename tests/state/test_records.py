"""One object into one record: the parent cluster a pool object names reads the same with or without
parsing the rest of its values."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from workerclass.api.resources import APPLICATION_KIND_LABEL
from workerclass.state import pool_cluster, pool_from_object

_ANY = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=6), st.lists(st.integers(), max_size=2))
_CLUSTER = st.one_of(
    _ANY, st.sampled_from(["", "example", "a.b"]), st.dictionaries(st.text(max_size=3), _ANY, max_size=2)
)
_VALUES = st.one_of(
    _ANY,
    st.fixed_dictionaries({}, optional={"cluster": _CLUSTER, "maxReplicas": _ANY, "workerClassName": _ANY}),
)
_LABELS = st.one_of(
    st.none(),
    st.just({APPLICATION_KIND_LABEL: "KubernetesNodes"}),
    st.just({APPLICATION_KIND_LABEL: "Kubernetes"}),
    st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=1),
)


@st.composite
def _objects(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["KubernetesNodes", "HelmRelease", "Kubernetes", "WorkerClass", None]))
    values = draw(_VALUES)
    spec: Any = draw(st.one_of(st.just({"values": values}), _ANY)) if kind == "HelmRelease" else values
    metadata = {"name": "example-p1", "namespace": "tenant-example"}
    if (labels := draw(_LABELS)) is not None:
        metadata["labels"] = labels
    obj: dict[str, Any] = {"metadata": metadata, "spec": spec}
    if kind is not None:
        obj["kind"] = kind
    return obj


@settings(max_examples=300, deadline=None)
@given(_objects())
def test_the_cluster_of_a_pool_object_is_its_records(obj: dict[str, Any]) -> None:
    record = pool_from_object(obj)
    assert pool_cluster(obj) == (record.cluster if record is not None else None)
