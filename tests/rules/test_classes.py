"""rules.classes: the rules of a class on its own, with the messages admission gives for them."""

from __future__ import annotations

from tests.builders import make_state
from workerclass.model import parse_class_spec
from workerclass.resolve.classes import class_rule_violations
from workerclass.rules.classes import (
    BUILTIN_FAMILIES,
    class_being_deleted,
    class_immutable,
    class_spec_violations,
    reference_problem,
)

DIGEST = "a" * 64


def test_the_built_in_names_keep_their_family() -> None:
    assert BUILTIN_FAMILIES == {"talos": "talos", "kairos": "kairos"}
    spec, _ = parse_class_spec({"bootstrap": "kairos"})
    (violation,) = class_spec_violations(spec, {"bootstrap": "kairos"}, name="talos")
    assert (violation.code, violation.field) == ("Invalid", "spec.bootstrap")
    assert violation.message == (
        "the built-in class name 'talos' is the talos offer and must keep bootstrap talos; "
        "publish a kairos class under another name"
    )


def test_a_kairos_class_carries_no_talos_settings() -> None:
    raw = {"bootstrap": "kairos", "talos": {"version": "v1.13.6"}}
    spec, _ = parse_class_spec(raw)
    codes = {(v.code, v.field) for v in class_spec_violations(spec, raw)}
    assert ("TalosSettingOnKairos", "spec.talos.version") in codes


def test_one_os_image_source_is_a_rule_of_its_own_and_stops_the_baseline() -> None:
    raw = {"bootstrap": "talos", "kubevirt": {"osImage": {"builtin": {}, "factory": {}}}}
    spec, _ = parse_class_spec(raw)
    own = class_spec_violations(spec, raw)
    assert [(v.code, v.field) for v in own] == [("OsImageSourceConflict", "spec.kubevirt.osImage")]
    assert class_rule_violations(make_state().platform, spec, raw) == own


def test_references_are_pinned_and_carry_no_credentials() -> None:
    assert reference_problem(f"ghcr.io/acme/disk@sha256:{DIGEST}", "f", "x") is None
    unpinned = reference_problem("ghcr.io/acme/disk:v1", "f", "a disk")
    assert unpinned is not None and unpinned.code == "ImageNotPinned"
    secret = reference_problem(f"user:pw@ghcr.io/acme/disk@sha256:{DIGEST}", "f", "a disk")
    assert secret is not None and secret.code == "Invalid" and "pw" not in secret.message


def test_class_changes() -> None:
    immutable = class_immutable("base")
    assert (immutable.code, immutable.field) == ("ClassImmutable", "spec")
    assert "publish another class (for example base-r2)" in immutable.message
    deleting = class_being_deleted("base", "spec.workerClassName")
    assert (deleting.code, deleting.message) == (
        "ClassNotFound",
        "WorkerClass base is being deleted: select another class",
    )
