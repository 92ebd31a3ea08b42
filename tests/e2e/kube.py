"""A small REST client for the tests' own requests to the test API server (an admin or any identity).

The product's code talks to the cluster through lightkube; the tests check it from the outside
with plain REST over httpx, so a bug in how we drive lightkube cannot hide in the checker. Kinds
are mapped to their resources by the server's discovery (re-read when a CRD appears), and writes
are server-side applies, JSON merge patches or JSON patches, as ``kubectl`` sends them.
"""

from __future__ import annotations

import json
import ssl
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx2 as httpx  # what lightkube itself brings (the maintained httpx fork)
import yaml

APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


class KubeError(Exception):
    """A request the API server refused: its HTTP code, its Status reason and message."""

    def __init__(self, code: int, status: Mapping[str, Any], method: str, path: str) -> None:
        self.code = code
        self.status = dict(status)
        self.reason = str(status.get("reason", ""))
        self.message = str(status.get("message", ""))
        super().__init__(f"{method} {path}: {code} {self.reason}: {self.message}")


@dataclass(frozen=True)
class ApiResource:
    group_version: str
    plural: str
    kind: str
    namespaced: bool

    def path(self, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
        base = "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
        if sub:
            base += f"/{sub}"
        return base


class Kube:
    """REST calls as one identity; ``http`` is exposed for watches and odd requests."""

    def __init__(self, url: str, context: ssl.SSLContext, *, timeout: float = 30.0) -> None:
        self.url = url
        self.http = httpx.Client(base_url=url, verify=context, timeout=timeout)
        self._resources: dict[tuple[str, str], ApiResource] = {}

    def close(self) -> None:
        self.http.close()

    # ------------------------------------------------------------------ discovery

    def _discover(self) -> None:
        found: dict[tuple[str, str], ApiResource] = {}
        versions = ["v1"]
        groups = self._json("GET", "/apis")
        for group in groups.get("groups", []):
            versions += [version["groupVersion"] for version in group.get("versions", [])]
        for group_version in versions:
            path = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
            try:
                listing = self._json("GET", path)
            except KubeError:
                continue
            for resource in listing.get("resources", []):
                if "/" in resource["name"]:
                    continue
                found[(group_version, resource["kind"])] = ApiResource(
                    group_version, resource["name"], resource["kind"], bool(resource["namespaced"])
                )
        self._resources = found

    def resource(self, api_version: str, kind: str) -> ApiResource:
        key = (api_version, kind)
        if key not in self._resources:
            self._discover()
        if key not in self._resources:
            raise LookupError(f"the API server does not serve {kind} in {api_version}")
        return self._resources[key]

    def resource_of(self, obj: Mapping[str, Any]) -> ApiResource:
        return self.resource(str(obj["apiVersion"]), str(obj["kind"]))

    # ------------------------------------------------------------------ requests

    def _json(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "application/json",
        params: Mapping[str, Any] | None = None,
    ) -> Any:
        content = None
        if body is not None:
            content = body if isinstance(body, bytes | str) else json.dumps(body)
        answer = self.http.request(
            method, path, content=content, headers={"Content-Type": content_type}, params=dict(params or {})
        )
        data: Any = {}
        if answer.content:
            try:
                data = answer.json()
            except ValueError:
                data = {"message": answer.text[:500]}
        if answer.status_code >= 400:
            raise KubeError(answer.status_code, data if isinstance(data, dict) else {}, method, path)
        return data

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._json(method, path, **kwargs)

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        result: dict[str, Any] = self._json("GET", self.resource(api_version, kind).path(namespace, name))
        return result

    def find(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        try:
            return self.get(api_version, kind, name, namespace)
        except KubeError as error:
            if error.code == 404:
                return None
            raise

    def list(
        self, api_version: str, kind: str, namespace: str | None = None, *, labels: str | None = None
    ) -> list[dict[str, Any]]:
        params = {"labelSelector": labels} if labels else None
        items: list[dict[str, Any]] = self._json(
            "GET", self.resource(api_version, kind).path(namespace), params=params
        ).get("items", [])
        return items

    def create(self, obj: Mapping[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        meta = obj.get("metadata", {})
        params = {"dryRun": "All"} if dry_run else None
        result: dict[str, Any] = self._json(
            "POST", self.resource_of(obj).path(meta.get("namespace")), body=obj, params=params
        )
        return result

    def replace(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        result: dict[str, Any] = self._json(
            "PUT", self.resource_of(obj).path(meta.get("namespace"), meta["name"]), body=obj
        )
        return result

    def apply(
        self,
        obj: Mapping[str, Any],
        *,
        manager: str = "workerclass-e2e",
        dry_run: bool = False,
        force: bool = True,
        sub: str | None = None,
    ) -> dict[str, Any]:
        meta = obj["metadata"]
        params: dict[str, Any] = {"fieldManager": manager}
        if force:
            params["force"] = "true"
        if dry_run:
            params["dryRun"] = "All"
        result: dict[str, Any] = self._json(
            "PATCH",
            self.resource_of(obj).path(meta.get("namespace"), meta["name"], sub),
            body=yaml.safe_dump(dict(obj)),
            content_type=APPLY,
            params=params,
        )
        return result

    def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        content_type: str = MERGE,
        sub: str | None = None,
    ) -> dict[str, Any]:
        result: dict[str, Any] = self._json(
            "PATCH",
            self.resource(api_version, kind).path(namespace, name, sub),
            body=patch,
            content_type=content_type,
        )
        return result

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        missing_ok: bool = True,
        dry_run: bool = False,
    ) -> None:
        params = {"dryRun": "All"} if dry_run else None
        try:
            self._json("DELETE", self.resource(api_version, kind).path(namespace, name), params=params)
        except KubeError as error:
            if not (missing_ok and error.code == 404):
                raise

    # ------------------------------------------------------------------ waiting

    def wait_established(self, names: Iterable[str], *, timeout: float = 60.0) -> None:
        """Every CRD of ``names`` has ``Established=True`` (and discovery serves it)."""
        pending = set(names)
        deadline = time.monotonic() + timeout
        while pending and time.monotonic() < deadline:
            for name in sorted(pending):
                crd = self.find("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
                conditions = {
                    c["type"]: c["status"] for c in (((crd or {}).get("status") or {}).get("conditions") or [])
                }
                if conditions.get("Established") == "True":
                    pending.discard(name)
            if pending:
                time.sleep(0.1)
        if pending:
            raise TimeoutError(f"CRDs not Established in {timeout:g}s: {sorted(pending)}")
        self._resources = {}  # discovery changed

    def wait_listable(self, crds: Iterable[Mapping[str, Any]], *, timeout: float = 120.0) -> None:
        """Every CRD's objects can be listed: an Established CRD is answered 429 (its watch cache still
        initializing) for some seconds on a fresh API server, which a controller retries through but a
        measurement or a tight wait would count."""
        pending = {
            f"/apis/{crd['spec']['group']}/{version['name']}/{crd['spec']['names']['plural']}"
            for crd in crds
            for version in crd["spec"]["versions"]
            if version.get("served", True)
        }
        deadline = time.monotonic() + timeout
        while pending and time.monotonic() < deadline:
            for path in sorted(pending):
                if self.http.get(path, params={"limit": "1"}).status_code != 429:
                    pending.discard(path)
            if pending:
                time.sleep(0.2)
        if pending:
            raise TimeoutError(f"still answered 429 after {timeout:g}s: {sorted(pending)}")
