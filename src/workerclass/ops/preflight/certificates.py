"""Whether the API server can trust the serving certificate: a base64 ``caBundle`` or cert-manager's
CA injection annotation (check ``caBundle``)."""

from __future__ import annotations

import base64
import binascii

from .expectations import CA_ANNOTATIONS
from .objects import FoundWebhook, as_map
from .verdicts import Check

__all__ = ["ca_bundle"]


def ca_bundle(webhook: FoundWebhook) -> Check | None:
    bundle = as_map(webhook.spec.get("clientConfig")).get("caBundle")
    if isinstance(bundle, str) and bundle:
        try:
            base64.b64decode(bundle, validate=True)
        except (binascii.Error, ValueError):
            return Check(
                "caBundle",
                "fail",
                f"{webhook.name} caBundle is not base64",
                webhook.object,
                webhook.field("clientConfig.caBundle"),
            )
        return None
    if any(isinstance(webhook.annotations.get(key), str) and webhook.annotations.get(key) for key in CA_ANNOTATIONS):
        return None
    return Check(
        "caBundle",
        "fail",
        f"{webhook.name} has no clientConfig.caBundle and its configuration no {CA_ANNOTATIONS[0]} annotation: "
        "the API server cannot trust the serving certificate, so every matched request fails",
        webhook.object,
        webhook.field("clientConfig.caBundle"),
    )
