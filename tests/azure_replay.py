"""Recorded Azure responses replayed through the Azure SDKs' own pipeline: a ``requests`` adapter
mounted on the session of azure-core's ``RequestsTransport`` answers each GET from a JSON file, so
the clients parse real response bodies and no test touches the network."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import requests
import urllib3
from azure.core.credentials import AccessToken
from azure.core.pipeline.transport import RequestsTransport
from requests.adapters import BaseAdapter

RECORDED = Path(__file__).resolve().parent / "fixtures" / "azure"
SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"


class FakeCredential:
    """A token credential that never signs anyone in."""

    def get_token(self, *_scopes: str, **_options: object) -> AccessToken:
        return AccessToken("recorded", int(time.time()) + 3600)


class _Replay(BaseAdapter):
    def __init__(self, answers: dict[str, object]):
        super().__init__()
        self.answers, self.seen = answers, []

    def send(self, request, **_options):
        url = urlparse(request.url)
        path, where = url.path, parse_qs(url.query).get("$filter", [None])[0]
        self.seen.append((request.method, request.url))
        key = (path, where) if (path, where) in self.answers else path
        status, body = (
            (200, self.answers[key]) if key in self.answers else (404, {"error": {"code": "NotFound", "message": path}})
        )
        data = json.dumps(body).encode()
        response = requests.Response()
        response.status_code, response.url, response.request = status, request.url, request
        response.headers["Content-Type"] = "application/json"
        response.raw = urllib3.HTTPResponse(
            body=io.BytesIO(data), status=status, preload_content=False, headers={"Content-Type": "application/json"}
        )
        return response

    def close(self) -> None:
        pass


def _routes(region: str) -> dict[str, object]:
    base = f"/subscriptions/{SUBSCRIPTION}/providers"
    return {
        "usages": f"{base}/Microsoft.Compute/locations/{region}/usages",
        # Resource SKUs: one path for every region, told apart by the location filter preflight sends.
        "skus": (f"{base}/Microsoft.Compute/skus", f"location eq '{region}'"),
        "kubernetes_versions": f"{base}/Microsoft.ContainerService/locations/{region}/kubernetesVersions",
        "feature": f"{base}/Microsoft.Features/providers/Microsoft.ContainerService/features/ManagedGPUExperiencePreview",
    }


def transport(*files: str, region: str = "eastus", elsewhere: dict[str, tuple[str, ...]] | None = None):
    """A transport answering from recorded files (``usages_enough``, ``skus``, ...) for ``region``, and for each region of
    ``elsewhere`` from its own files."""
    answers = {}
    for where, names in [(region, files), *(elsewhere or {}).items()]:
        routes = _routes(where)
        for name in names:
            route = next(path for prefix, path in routes.items() if name.startswith(prefix))
            answers[route] = json.loads((RECORDED / f"{name}.json").read_text())
    session, adapter = requests.Session(), _Replay(answers)
    session.mount("https://", adapter)
    return RequestsTransport(session=session, session_owner=False), adapter
