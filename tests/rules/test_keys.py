"""Private key material in pool and class values: every string and mapping key below a value is searched."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from workerclass.rules.keys import holds_private, looks_private, private_key_paths

PEM = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"


def _every_string(value: Any) -> list[str]:
    """The strings a search must read: string leaves and string keys, dicts and lists descended."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        out = [key for key in value if isinstance(key, str)]
        for child in value.values():
            out += _every_string(child)
        return out
    if isinstance(value, list):
        return [text for child in value for text in _every_string(child)]
    return []


# Markers in the spellings the search must see through: any letter case, a Kelvin sign for the K
# (its lower case is "k"), PuTTY's header, JSON's escaped characters beside them, and mere mentions.
_TEXTS = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        [
            PEM,
            PEM.lower(),
            "-----BEGIN RSA PRIVATE \u212aEY-----",
            '"\\\n-----BEGIN EC PRIVATE KEY-----\t"',
            "PuTTY-User-Key-File-3: ssh-ed25519",
            "putty-user-key-file-2: ssh-rsa",
            "a private key is never stored",
            "ssh-ed25519 AAAA user@host",
        ]
    ),
)
_KEYS = st.one_of(_TEXTS, st.integers(-3, 3), st.none())
_VALUES = st.recursive(
    st.one_of(_TEXTS, st.integers(-(2**70), 2**70), st.floats(allow_nan=False), st.booleans(), st.none()),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(_KEYS, children, max_size=4),
        st.tuples(children),  # not descended: no string of it is searched
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(_VALUES)
def test_holds_private_finds_exactly_the_strings_that_look_private(value: Any) -> None:
    assert holds_private(value) == any(looks_private(text) for text in _every_string(value))


def test_a_value_nested_beyond_any_serializer_is_still_searched() -> None:
    value: Any = PEM
    for _ in range(2_000):
        value = {"k": [value]}
    assert holds_private(value)
    assert next(private_key_paths(value, "spec")).startswith("spec.k[0]")
