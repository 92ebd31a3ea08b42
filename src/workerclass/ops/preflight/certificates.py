"""Whether the API server can trust the serving certificate: a base64 ``caBundle`` holding a PEM
certificate, or cert-manager's CA injection annotation (check ``caBundle``).

Read from a folder, the annotation is enough (cert-manager's cainjector fills ``caBundle`` in the
cluster); read live, the cainjector should have done so already, so an annotated configuration
whose ``caBundle`` is still empty is a broken injection and fails. What no check here can see is
a well-formed ``caBundle`` of the wrong CA: that takes the serving certificate itself, which
preflight does not fetch (it would need the Secret or a connection to the Service).
"""

from __future__ import annotations

import base64
import binascii

from .expectations import CA_ANNOTATIONS
from .objects import FoundWebhook, as_map
from .source import FOLDER, Source
from .verdicts import Check

__all__ = ["ca_bundle"]

_PEM_CERTIFICATE = b"-----BEGIN CERTIFICATE-----"


def ca_bundle(webhook: FoundWebhook, source: Source = FOLDER) -> Check | None:
    bundle = as_map(webhook.spec.get("clientConfig")).get("caBundle")
    field = webhook.field("clientConfig.caBundle")
    if isinstance(bundle, str) and bundle:
        try:
            decoded = base64.b64decode(bundle, validate=True)
        except (binascii.Error, ValueError):
            return Check("caBundle", "fail", f"{webhook.name} caBundle is not base64", webhook.object, field)
        if _PEM_CERTIFICATE not in decoded:
            return Check(
                "caBundle",
                "fail",
                f"{webhook.name} caBundle holds no PEM certificate: the API server cannot verify the serving "
                "certificate, so every matched request fails",
                webhook.object,
                field,
            )
        return None
    annotation = next(
        (key for key in CA_ANNOTATIONS if isinstance(webhook.annotations.get(key), str) and webhook.annotations[key]),
        None,
    )
    if annotation is not None and not source.live:
        return None
    if annotation is not None:
        return Check(
            "caBundle",
            "fail",
            f"{webhook.name} has no clientConfig.caBundle although its configuration asks cert-manager to inject "
            f"one ({annotation}: {webhook.annotations[annotation]}): the CA was not injected (is cert-manager's "
            "cainjector running, and that certificate issued?), so the API server cannot trust the serving "
            "certificate and every matched request fails",
            webhook.object,
            field,
        )
    return Check(
        "caBundle",
        "fail",
        f"{webhook.name} has no clientConfig.caBundle and its configuration no {CA_ANNOTATIONS[0]} annotation: "
        "the API server cannot trust the serving certificate, so every matched request fails",
        webhook.object,
        field,
    )
