"""``FaultyProxy`` sits in front of a ``RegistryServer`` on another 127.0.0.1 port and
misbehaves on purpose: drops or mangles ``Docker-Content-Digest``, answers slowly, or demands
a Bearer token from its own token endpoint (its server scaffolding is
``local_http.LocalHttpServer``).
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Literal
from urllib.parse import parse_qs, urlsplit

from tests.support.local_http import LocalHttpServer, Request, forward, registry_headers, reply
from tests.support.registry import RegistryServer

ProxyMode = Literal[
    "pass", "drop-digest", "malformed-digest", "slow", "bearer", "bearer-foreign-realm"
]


class FaultyProxy(LocalHttpServer):
    """A threaded HTTP proxy on 127.0.0.1 in front of ``upstream``, misbehaving per ``mode``.

    ``bearer`` mode answers every ``/v2/`` request without a valid token with a 401 Bearer
    challenge whose realm is this proxy's ``/token``; ``/token`` issues a token for valid
    Basic credentials (counted in ``tokens_issued``) and the proxy then forwards upstream
    with the registry's own Basic credentials.
    """

    def __init__(
        self,
        upstream: RegistryServer,
        *,
        mode: ProxyMode = "pass",
        delay_seconds: float = 0.0,
        token_lifetime_seconds: int = 300,
    ) -> None:
        super().__init__()
        self.upstream = upstream
        self.mode = mode
        self.delay_seconds = delay_seconds
        self.token_lifetime_seconds = token_lifetime_seconds
        #: repository -> the body ``/token`` answers for its scope instead of a token (an
        #: oversized or malformed token answer, say); other scopes get real tokens
        self.token_answers: dict[str, bytes] = {}
        self.tokens_issued = 0
        self._valid_tokens: set[str] = set()

    @property
    def requests(self) -> list[tuple[str, str, str]]:
        """(method, path, Authorization scheme) of every request so far."""
        with self._lock:
            return [(s.method, s.path, s.auth_scheme) for s in self.seen]

    def handle(self, handler: Request) -> None:
        auth = handler.headers.get("Authorization", "")
        if self.delay_seconds:
            time.sleep(self.delay_seconds)
        if handler.path.startswith("/token"):
            self._issue_token(handler, auth)
            return
        if self.mode in {"bearer", "bearer-foreign-realm"}:
            token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None
            if token is None or token not in self._valid_tokens:
                host = "localhost" if self.mode == "bearer-foreign-realm" else "127.0.0.1"
                repository = handler.path.removeprefix("/v2/").partition("/manifests/")[0]
                challenge = (
                    f'Bearer realm="http://{host}:{self.port}/token",'
                    f'service="autoroll-test",scope="repository:{repository}:pull"'
                )
                reply(handler, 401, {"WWW-Authenticate": challenge}, b"{}")
                return
        upstream = forward(
            handler,
            f"{self.upstream.url}{handler.path}",
            authorization=self.upstream.authorization if self.mode.startswith("bearer") else auth,
        )
        headers = registry_headers(upstream)
        if self.mode == "drop-digest":
            headers.pop("Docker-Content-Digest", None)
        elif self.mode == "malformed-digest" and "Docker-Content-Digest" in headers:
            headers["Docker-Content-Digest"] = "sha256:not-a-digest"
        get = handler.command == "GET"
        body = upstream.content if get else b""
        length = len(body) if get else int(upstream.headers.get("Content-Length", "0"))
        reply(handler, upstream.status_code, headers, body, length=length)

    def _issue_token(self, handler: Request, auth: str) -> None:
        if auth != self.upstream.authorization:
            reply(handler, 401, {"WWW-Authenticate": 'Basic realm="token"'}, b"{}")
            return
        scope = parse_qs(urlsplit(handler.path).query).get("scope", [""])[0]
        repository = scope.removeprefix("repository:").rpartition(":")[0]
        if repository in self.token_answers:
            answer = self.token_answers[repository]
            reply(handler, 200, {"Content-Type": "application/json"}, answer)
            return
        token = secrets.token_hex(16)
        with self._lock:
            self._valid_tokens.add(token)
            self.tokens_issued += 1
        body = json.dumps({"token": token, "expires_in": self.token_lifetime_seconds}).encode()
        reply(handler, 200, {"Content-Type": "application/json"}, body)
