"""A stand-in for a registry that honours only Bearer tokens on manifests, in front of Gitea.

Gitea itself answers every request; the proxy only withholds Basic credentials from
manifest requests, which the real Gitea cannot be made to do. Kept apart because only the
tests of that Bearer flow use it.
"""

from __future__ import annotations

import threading

import requests

from tests.support.gitea import GiteaServer
from tests.support.local_http import LocalHttpServer, Request, reply


class BasicWithholdingProxy(LocalHttpServer):
    """Forwards to Gitea, but sends manifest requests on without a Basic Authorization.

    Gitea takes Basic credentials on every registry path, so a client that sends them never
    meets its Bearer flow. Registries that honour only tokens on manifests make clients
    take it; this proxy makes Gitea one of them, and nothing else: Gitea itself answers
    every request (its two challenges, its token endpoint, its check of the token it
    issued). ``Host`` is forwarded, so Gitea's realm names this proxy and token requests
    pass through it too (counted in ``token_requests``).

    ``hold`` > 1 makes that many Basic-stripped manifest requests wait for each other
    before any is forwarded, so lookups running at once are all refused before any of
    them can ask for a token.
    """

    def __init__(self, upstream: GiteaServer, *, hold: int = 1) -> None:
        super().__init__()
        self.upstream = upstream
        self._together = threading.Barrier(hold, timeout=30) if hold > 1 else None
        self.challenges: list[str] = []  # WWW-Authenticate of every 401 passed back

    @property
    def token_requests(self) -> int:
        with self._lock:
            return sum(1 for s in self.seen if s.path.startswith("/v2/token"))

    def handle(self, handler: Request) -> None:
        auth = handler.headers.get("Authorization", "")
        if "/manifests/" in handler.path and auth.startswith("Basic "):
            auth = ""
            if self._together is not None:
                self._together.wait()
        answer = requests.request(
            handler.command,
            f"{self.upstream.url}{handler.path}",
            headers={
                "Accept": handler.headers.get("Accept", ""),
                "Authorization": auth,
                "Host": self.host,
            },
            timeout=30,
            allow_redirects=False,
        )
        headers = {
            k: v
            for k, v in answer.headers.items()
            if k.lower() in {"content-type", "docker-content-digest"}
        }
        if answer.status_code == 401:
            # Several WWW-Authenticate lines, as Gitea sent them (urllib3 keeps them apart).
            lines = answer.raw.headers.getlist("WWW-Authenticate")
            with self._lock:
                self.challenges.append(", ".join(lines))
            handler.send_response(401)
            for line in lines:
                handler.send_header("WWW-Authenticate", line)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        head = handler.command == "HEAD"
        length = int(answer.headers.get("Content-Length", "0")) if head else None
        reply(handler, answer.status_code, headers, answer.content, length=length)
