"""A hand-written fake of a registry's HTTP session for the registry client's tests: scripted
answers, a clock, ``make`` to build the client over them, index bodies and their digests.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
from collections.abc import Callable
from typing import Any

import requests

from autoroll.core.images import TagRef
from autoroll.core.model import Digest, Unknown
from autoroll.registry import OCI_INDEX, Limits, RegistryClient

HOST = "registry.example"
REF = TagRef(HOST, "team/app", "latest")
D1 = "sha256:" + "1" * 64
BASIC = "Basic " + base64.b64encode(b"robot:s3cret").decode()

Handler = Callable[[str, str, dict[str, Any]], requests.Response]


def response(
    status: int, headers: dict[str, str] | None = None, body: bytes = b""
) -> requests.Response:
    r = requests.Response()
    r.status_code = status
    r.headers.update(headers or {})
    r.raw = io.BytesIO(body)
    r.url = "fake"
    return r


class FakeSession(requests.Session):
    """Answers from ``handler``; records (method, url, headers) of every request."""

    def __init__(self, handler: Handler) -> None:
        super().__init__()
        self.handler = handler
        self.sent: list[tuple[str, str, dict[str, Any]]] = []

    def request(
        self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any
    ) -> requests.Response:
        method, url = str(method), str(url)
        self.sent.append((method, url, dict(kwargs.get("headers") or {})))
        return self.handler(method, url, kwargs)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make(
    handler: Handler,
    *,
    base: str = f"https://{HOST}",
    clock: Clock | None = None,
    user: str = "robot",
    token: str = "s3cret",
    **limits: Any,
) -> tuple[RegistryClient, FakeSession]:
    session = FakeSession(handler)
    # One lookup at a time unless a test asks for more: these tests script answers and move
    # a fake clock, which only has a meaning when requests go out in a known order.
    limits.setdefault("lookup_concurrency", 1)
    client = RegistryClient(
        session=session,
        base_url=base,
        user=user,
        token=token,
        limits=Limits(**limits),
        clock=clock or Clock(),
    )
    return client, session


def index_body(*children: str, media_type: str = OCI_INDEX) -> bytes:
    return json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": media_type,
            "manifests": [{"digest": c} for c in children],
        }
    ).encode()


def digest_of(body: bytes) -> Digest:
    return Digest("sha256:" + hashlib.sha256(body).hexdigest())


def reason(answer: object) -> str:
    assert isinstance(answer, Unknown), answer
    return answer.reason


def refs(count: int) -> list[TagRef]:
    return [TagRef(HOST, f"team/app-{k}", "latest") for k in range(count)]
