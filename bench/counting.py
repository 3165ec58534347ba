"""Count requests at the edges: around the Kubernetes client's REST layer and a requests Session.

Nothing in ``autoroll`` is changed to be measured: the benchmark hands the controller an
``ApiClient`` and a ``requests.Session`` that count every request the clients issue (the
registry's auth round-trips included), by verb and resource. A reconnect urllib3 makes
inside one Kubernetes call is not seen separately; none happen on 127.0.0.1.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests
from requests.adapters import HTTPAdapter


def kube_request_kind(method: str, url: str) -> str:
    """``<verb> <resource>`` for one Kubernetes API call, e.g. ``list pods``, ``delete pods``.

    Paths are ``/api/v1/…`` or ``/apis/<group>/<version>/…``, optionally
    ``namespaces/<ns>/``, then ``<resource>[/<name>[/<subresource>]]``.
    """
    parts = urlsplit(url)
    segments = [s for s in parts.path.split("/") if s]
    rest = segments[2:] if segments[:1] == ["api"] else segments[3:]
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) != 2:
        rest = rest[2:]  # drop namespaces/<ns>, unless the namespace object itself is meant
    resource = rest[0] if rest else "?"
    named = len(rest) >= 2
    if len(rest) >= 3:
        resource = f"{resource}/{rest[2]}"
    method = method.upper()
    if method == "GET":
        if parse_qs(parts.query).get("watch", [""])[0] in {"true", "1"}:
            verb = "watch"
        else:
            verb = "get" if named else "list"
    else:
        verb = {
            "POST": "create",
            "PUT": "update",
            "PATCH": "patch",
            "DELETE": "delete" if named else "deletecollection",
        }.get(method, method.lower())
    return f"{verb} {resource}"


def count_kubernetes(api_client: Any, counts: Counter[str]) -> Any:
    """Make ``api_client`` add one to ``counts[kube_request_kind(...)]`` per HTTP request."""
    rest = api_client.rest_client
    inner = rest.request

    def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        counts[kube_request_kind(method, url)] += 1
        return inner(method, url, *args, **kwargs)

    rest.request = request
    return api_client


class CountingAdapter(HTTPAdapter):
    """An ``HTTPAdapter`` that counts each request it sends, by HTTP method.

    Locked: the registry client sends several HEADs at once, and ``counts[k] += 1`` is a
    read-modify-write that two threads can interleave.
    """

    def __init__(self, counts: Counter[str]) -> None:
        super().__init__()
        self.counts = counts
        self._lock = threading.Lock()

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            self.counts[str(request.method)] += 1
        return super().send(request, *args, **kwargs)


def counting_session(counts: Counter[str]) -> requests.Session:
    """A Session that counts by method; ignores proxy and CA environment (127.0.0.1 only)."""
    session = requests.Session()
    session.trust_env = False
    adapter = CountingAdapter(counts)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session
