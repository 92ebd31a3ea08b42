"""URLs, image references and repositories in classes and pools: credentials in them are refused
as ``Invalid`` and never quoted back, and a URL's port is a number.
"""

from __future__ import annotations

import pytest

from tests.builders import has_denial, make_class, make_pool, make_state
from workerclass.admission import admit

# Design page: "Classes contain OS and bootstrap settings, not GPU licenses or tenant credentials."
SECRET = "s3cr3t-value"


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        pytest.param(
            make_pool(talos={"registryMirrors": {"docker.io": {"endpoints": [f"https://user:{SECRET}@m.example"]}}}),
            "spec.talos.registryMirrors.docker.io.endpoints[0]",
            id="pool-mirror-endpoint",
        ),
        pytest.param(
            make_class(talos={"imageFactoryURL": f"https://u:{SECRET}@factory.example"}),
            "spec.talos.imageFactoryURL",
            id="class-factory-url",
        ),
        pytest.param(
            make_pool(kubevirt={"osImage": {"factory": {"endpoint": f"https://{SECRET}@factory.example/x"}}}),
            "spec.kubevirt.osImage.factory.endpoint",
            id="pool-factory-endpoint",
        ),
        pytest.param(
            make_class(
                "fixed",
                "kairos",
                image={
                    "kubernetesVersion": "v1.35.6",
                    "reference": f"u:{SECRET}@registry.example.com/w@sha256:" + "a" * 64,
                },
            ),
            "spec.image.reference",
            id="class-image-reference",
        ),
    ],
)
def test_credentials_in_urls_and_references_are_refused_without_echoing_them(obj: dict, field: str) -> None:
    decision = admit(make_state(), "CREATE", obj)
    assert not decision.allowed
    assert has_denial(decision.denials, "Invalid", field), [str(v) for v in decision.denials]
    assert all(SECRET not in v.message for v in decision.denials)


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        pytest.param(
            make_class(
                "fixed", "kairos", image={"kubernetesVersion": "v1.35.6", "reference": f"robot:{SECRET}@r.example/k:v1"}
            ),
            "spec.image.reference",
            id="unpinned-reference-with-credentials",
        ),
        pytest.param(
            make_class(talos={"installerRepository": f"robot:{SECRET}@factory.example/installer"}),
            "spec.talos.installerRepository",
            id="installer-repository",
        ),
        pytest.param(
            make_pool(talos={"registryMirrors": {"docker.io": {"endpoints": [f"https://user:{SECRET}/x@m.example"]}}}),
            "spec.talos.registryMirrors.docker.io.endpoints[0]",
            id="url-with-slash-in-password",
        ),
    ],
)
def test_values_that_may_carry_credentials_are_never_quoted(obj: dict, field: str) -> None:
    decision = admit(make_state(), "CREATE", obj)
    assert has_denial(decision.denials, "Invalid", field), [str(v) for v in decision.denials]
    assert all(SECRET not in v.message for v in decision.denials)


def test_a_url_port_must_be_a_number() -> None:
    pool = make_pool(talos={"registryMirrors": {"docker.io": {"endpoints": ["https://mirror.example:notaport"]}}})
    assert has_denial(
        admit(make_state(), "CREATE", pool).denials, "Invalid", "spec.talos.registryMirrors.docker.io.endpoints[0]"
    )
