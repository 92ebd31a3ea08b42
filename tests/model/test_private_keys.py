"""Private keys in every armour are ``PrivateKeyMaterial`` wherever they appear.

No message ever quotes the value that held the key; ``imageFactoryCA`` holds PEM certificates
and nothing else; the walk is iterative, so values nested deeper than the recursion limit are
no crash.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import CERTIFICATE, CERTIFICATE_2, make_class, make_pool, make_release, make_state
from workerclass import admit
from workerclass.api.bounds import MAX_DEPTH

BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"
ARMOURS = {
    "pem-rsa": f"-----BEGIN RSA PRIVATE KEY-----\n{BODY}\n-----END RSA PRIVATE KEY-----\n",
    "pem-pkcs8": f"-----BEGIN PRIVATE KEY-----\n{BODY}\n-----END PRIVATE KEY-----\n",
    "pem-encrypted": f"-----BEGIN ENCRYPTED PRIVATE KEY-----\n{BODY}\n-----END ENCRYPTED PRIVATE KEY-----\n",
    "pem-ec": f"-----BEGIN EC PRIVATE KEY-----\n{BODY}\n-----END EC PRIVATE KEY-----\n",
    "pem-rsa-encrypted-headers": (
        "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0123\n\n"
        f"{BODY}\n-----END RSA PRIVATE KEY-----\n"
    ),
    "openssh": f"-----BEGIN OPENSSH PRIVATE KEY-----\n{BODY}\n-----END OPENSSH PRIVATE KEY-----\n",
    "pgp": f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{BODY}\n=abcd\n-----END PGP PRIVATE KEY BLOCK-----\n",
    "ssh2-encrypted": (
        f'---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: "rsa-key"\n{BODY}\n'
        "---- END SSH2 ENCRYPTED PRIVATE KEY ----\n"
    ),
    "ssh2": f"---- BEGIN SSH2 PRIVATE KEY ----\n{BODY}\n---- END SSH2 PRIVATE KEY ----\n",
    "putty": (
        f"PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPublic-Lines: 2\n{BODY}\nPrivate-Lines: 1\n{BODY}\n"
    ),
    "putty-v2": f"PuTTY-User-Key-File-2: ssh-rsa\nEncryption: aes256-cbc\n{BODY}\n",
    "inline-in-text": (
        f"note: here is my key -----BEGIN OPENSSH PRIVATE KEY----- {BODY} -----END OPENSSH PRIVATE KEY-----"
    ),
}

#: where a key can sit in a pool (spec overrides -> the field path it is reported at)
PLACES: list[tuple[str, Any, str]] = [
    ("label", lambda key: {"labels": {"team": key}}, "spec.labels.team"),
    (
        "taint-value",
        lambda key: {"taints": [{"key": "k", "value": key, "effect": "NoSchedule"}]},
        "spec.taints[0].value",
    ),
    ("imageFactoryCA", lambda key: {"talos": {"imageFactoryCA": key}}, "spec.talos.imageFactoryCA"),
    (
        "imageFactoryCA-after-cert",
        lambda key: {"talos": {"imageFactoryCA": CERTIFICATE + key}},
        "spec.talos.imageFactoryCA",
    ),
    ("kubelet", lambda key: {"kubelet": {"systemReservedMemory": key}}, "spec.kubelet.systemReservedMemory"),
    ("maxUnhealthy", lambda key: {"maxUnhealthy": key}, "spec.maxUnhealthy"),
    ("images", lambda key: {"images": {"kubectl": key}}, "spec.images.kubectl"),
    (
        "mirror-passthrough",
        lambda key: {"talos": {"registryMirrors": {"ghcr.io": {"endpoints": ["https://m.example"], "auth": key}}}},
        "spec.talos.registryMirrors.ghcr.io.auth",
    ),
    (
        "kernel-parameter",
        lambda key: {"kernelModules": [{"name": "nvme", "parameters": [key]}]},
        "spec.kernelModules[0].parameters[0]",
    ),
    ("unknown-field", lambda key: {"surprise": {"deep": [key]}}, "spec.surprise.deep[0]"),
    ("sshKeys", lambda key: {"workerClassName": "kairos", "sshKeys": [key]}, "spec.sshKeys[0]"),
]


def _secret_lines(key: str) -> list[str]:
    return [line.strip() for line in key.splitlines() if len(line.strip()) > 8]


@pytest.mark.parametrize("armour", list(ARMOURS), ids=list(ARMOURS))
@pytest.mark.parametrize(("place", "build", "field"), PLACES, ids=[p[0] for p in PLACES])
def test_every_armour_is_private_key_material_everywhere(armour: str, place: str, build: Any, field: str) -> None:
    key = ARMOURS[armour]
    decision = admit(make_state(), "CREATE", make_pool(**build(key)))
    assert not decision.allowed
    assert any(v.code == "PrivateKeyMaterial" and v.field == field for v in decision.denials), [
        str(v) for v in decision.denials
    ]
    for violation in decision.denials:
        for line in _secret_lines(key):
            assert line not in violation.message, (violation.code, violation.field)
        assert BODY not in violation.message


@pytest.mark.parametrize("armour", ["pem-rsa", "pgp", "ssh2-encrypted", "putty"])
def test_private_keys_in_a_helm_release_and_a_class(armour: str) -> None:
    key = ARMOURS[armour]
    release = make_release("md1", labels={"team": key})
    decision = admit(make_state(), "CREATE", release)
    assert any(v.code == "PrivateKeyMaterial" and v.field == "spec.values.labels.team" for v in decision.denials)
    klass = make_class("leaky", talos={"imageFactoryCA": key})
    decision = admit(make_state(), "CREATE", klass)
    assert any(v.code == "PrivateKeyMaterial" for v in decision.denials), [str(v) for v in decision.denials]
    assert all(BODY not in v.message for v in decision.denials)


def test_a_mention_of_a_private_key_is_no_key() -> None:
    decision = admit(make_state(), "CREATE", make_pool(labels={"note": "no-private-key-here"}))
    assert decision.allowed, [str(v) for v in decision.denials]


@pytest.mark.parametrize(
    ("ca", "allowed"),
    [
        (CERTIFICATE, True),
        (CERTIFICATE + CERTIFICATE_2, True),
        ("\n" + CERTIFICATE + "\n\n" + CERTIFICATE_2 + "\n", True),
        ("trust me", False),
        ("# our CA\n" + CERTIFICATE, False),
        (CERTIFICATE + "and some text", False),
        (CERTIFICATE.replace("CERTIFICATE", "X509 CRL"), False),
        ("-----BEGIN CERTIFICATE-----\nnot base64 !!\n-----END CERTIFICATE-----\n", False),
    ],
    ids=["one", "two", "whitespace-around", "text", "comment-before", "text-after", "crl", "not-base64"],
)
def test_image_factory_ca_holds_certificates_and_nothing_else(ca: str, allowed: bool) -> None:
    decision = admit(make_state(), "CREATE", make_pool(talos={"imageFactoryCA": ca}))
    assert decision.allowed is allowed, [str(v) for v in decision.denials]
    if not allowed:
        assert any(v.code == "Invalid" and v.field == "spec.talos.imageFactoryCA" for v in decision.denials)
        assert all("trust me" not in v.message and "some text" not in v.message for v in decision.denials)


def _nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("leaf", [ARMOURS["openssh"], "harmless"], ids=["key", "no-key"])
def test_values_nested_deep_but_within_bounds_are_read_whole(leaf: str) -> None:
    pool = make_pool()
    pool["spec"]["surprise"] = _nested(MAX_DEPTH - 4, leaf)  # set after building: the builder deep-copies
    decision = admit(make_state(), "CREATE", pool)
    assert decision.allowed is (leaf == "harmless")
    codes = {v.code for v in decision.denials}
    assert ("PrivateKeyMaterial" in codes) is (leaf != "harmless")
    assert any(w.startswith("spec.surprise: unknown field") for w in decision.warnings)  # no one reads it


@pytest.mark.parametrize("leaf", [ARMOURS["openssh"], "harmless"], ids=["key", "no-key"])
def test_values_nested_a_thousand_deep_are_refused_without_a_crash_or_an_echo(leaf: str) -> None:
    pool = make_pool()
    pool["spec"]["surprise"] = _nested(1000, leaf)
    decision = admit(make_state(), "CREATE", pool)
    assert not decision.allowed
    assert {v.code for v in decision.denials} == {"ObjectTooLarge"}
    assert all("PRIVATE KEY" not in v.message and "harmless" not in v.message for v in decision.denials)


def test_a_deep_mapping_under_the_mirror_passthrough_is_no_crash() -> None:
    for depth, code in ((MAX_DEPTH - 10, "PrivateKeyMaterial"), (1200, "ObjectTooLarge")):
        deep: Any = {"k": ARMOURS["pgp"]}
        for _ in range(depth):
            deep = {"k": deep}
        pool = make_pool()
        pool["spec"]["talos"] = {"registryMirrors": {"ghcr.io": {"endpoints": ["https://m.example"], "x": deep}}}
        decision = admit(make_state(), "CREATE", pool)
        assert any(v.code == code for v in decision.denials), depth
        decision = admit(make_state(), "UPDATE", pool, old=make_pool())
        assert any(v.code == code for v in decision.denials), depth


@pytest.mark.parametrize(
    "spec",
    [
        {"labels": {"https://admin:s3cr3t@registry.example/v2/": "x"}},
        {"talos": {"registryMirrors": {"https://admin:s3cr3t@m": {"endpoints": 3}}}},
        {"admin:s3cr3t@host": 1},
    ],
    ids=["label-key", "mirror-host", "unknown-key"],
)
def test_a_map_key_is_never_quoted_in_a_message(spec: dict[str, Any]) -> None:
    """The field path names the key (each door decides how to show a path); messages never do,
    and a warning (plain text) names only a key with a field name's shape."""
    decision = admit(make_state(), "CREATE", make_pool(**spec))
    assert decision.denials or decision.warnings
    assert all("s3cr3t" not in v.message for v in decision.denials), [v.message for v in decision.denials]
    assert all("s3cr3t" not in w for w in decision.warnings), decision.warnings


def test_a_key_that_is_a_private_key_is_never_in_a_field_path() -> None:
    pool = make_pool(labels={ARMOURS["pgp"]: "x"})
    decision = admit(make_state(), "CREATE", pool)
    assert any(v.code == "PrivateKeyMaterial" and v.field == "spec.labels" for v in decision.denials)
    assert all(BODY not in str(v) for v in decision.denials)


def test_a_registry_host_with_a_port_keeps_its_path() -> None:
    pool = make_pool(talos={"registryMirrors": {"registry.local:5000": {"endpoints": "x"}}})
    fields = {v.field for v in admit(make_state(), "CREATE", pool).denials}
    assert "spec.talos.registryMirrors.registry.local:5000.endpoints" in fields
