"""What indexing skips is said: kinds workerclass does not read (one line per kind, a near miss by
name with "did you mean"), a pool-named HelmRelease without its label, duplicates and nameless
objects as error lines when an errors list is given."""

from __future__ import annotations

from typing import Any

import pytest

from workerclass.state import Document, LoadError, State


def _obj(kind: str, name: str, api_version: str = "apps.cozystack.io/v1alpha1", **extra: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": "tenant-x"}, **extra}


def _documents(*objects: dict[str, Any]) -> list[Document]:
    return [Document(obj, f"state.yaml#{index + 1}", line=1 + 10 * index) for index, obj in enumerate(objects)]


def test_kinds_not_read_are_warned_once_per_kind_with_a_count() -> None:
    state = State.from_documents(
        _documents(
            _obj("ConfigMap", "a", "v1"),
            _obj("ConfigMap", "b", "v1"),
            _obj("Secret", "token", "v1"),
            _obj("KubernetesNodes", "example-a", spec={"cluster": "example"}),
        )
    )
    assert list(state.warnings) == [
        "skipped 2 ConfigMap objects (first at state.yaml:1): workerclass does not read this kind",
        "skipped 1 Secret object (first at state.yaml:21): workerclass does not read this kind",
    ]
    assert len(state.pools) == 1


@pytest.mark.parametrize(
    ("kind", "meant"),
    [("KubernetesNode", "KubernetesNodes"), ("kubernetesnodes", "KubernetesNodes"), ("WorkerClas", "WorkerClass")],
    ids=["singular", "lower-case", "typo"],
)
def test_a_kind_close_to_one_read_says_which_was_meant(kind: str, meant: str) -> None:
    state = State.from_documents(_documents(_obj(kind, "example-a")))
    assert list(state.warnings) == [
        f"state.yaml:1: skipped {kind} tenant-x/example-a: workerclass does not read kind {kind}; did you mean {meant}?"
    ]


def test_a_pool_named_helm_release_without_its_label_is_warned() -> None:
    unlabelled = _obj("HelmRelease", "kubernetes-nodes-example-a", "helm.toolkit.fluxcd.io/v2", spec={"values": {}})
    other = _obj("HelmRelease", "ingress", "helm.toolkit.fluxcd.io/v2", spec={"values": {}})
    state = State.from_documents(_documents(unlabelled, other))
    assert state.pools == {}
    assert list(state.warnings) == [
        "state.yaml:1: skipped HelmRelease tenant-x/kubernetes-nodes-example-a: named like a pool's release but "
        "without the label apps.cozystack.io/application.kind: KubernetesNodes, so not read as a pool",
        "skipped 1 HelmRelease object (first at state.yaml:11): not a KubernetesNodes pool's release",
    ]


def test_duplicates_and_nameless_objects_are_error_lines_when_asked() -> None:
    documents = _documents(
        _obj("KubernetesNodes", "example-a", spec={"cluster": "example"}),
        _obj("KubernetesNodes", "example-a", spec={"cluster": "example"}),
        _obj("KubernetesNodes", "", spec={"cluster": "example"}),
    )
    errors: list[str] = []
    state = State.from_documents(documents, errors=errors)
    assert [record.line for record in state.objects] == [1]
    assert errors == [
        "state.yaml:11: duplicate KubernetesNodes tenant-x/example-a, also defined at state.yaml:1: skipped",
        "state.yaml:21: KubernetesNodes has no metadata.name: skipped",
    ]
    with pytest.raises(LoadError, match="duplicate KubernetesNodes"):
        State.from_documents(documents)
