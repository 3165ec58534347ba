"""Signing in to one registry with a chain of credentials, as the kubelet pulls.

The kubelet tries each credential its keyring found for an image, in order, and stops at the
first pull that works; with none it pulls anonymously (k8s.io/kubernetes v1.37.2
``pkg/kubelet/kuberuntime/kuberuntime_image.go``: ``PullImage``). ``SignIn.send`` does the
same for one request: each credential in turn (Basic up front; on a 401 with a Bearer
challenge, a token for that credential), the next one only after a refusal (401 or 403),
and a refusal of all of them is one ``StatusError`` that names each credential's source and
what to fix. Any other answer (200, 404, 429, 5xx) is the registry's answer, whoever got it.
"""

from __future__ import annotations

from collections.abc import Sequence

import requests
from authchallenge import parse_challenges

from autoroll.core.keyring import Credential
from autoroll.core.lookups import ANONYMOUS
from autoroll.registry.auth import (
    TokenFlow,
    access_hint,
    basic_header,
    forbidden_hint,
    refused_hint,
)
from autoroll.registry.errors import StatusError
from autoroll.registry.limits import Deadline
from autoroll.registry.manifests import MANIFEST_ACCEPT
from autoroll.registry.wire import Wire


class SignIn:
    """Requests to one registry with the best credential of a chain (module docstring)."""

    def __init__(self, *, wire: Wire, tokens: TokenFlow) -> None:
        self._wire = wire
        self._tokens = tokens

    def send(
        self,
        method: str,
        url: str,
        repository: str,
        deadline: Deadline,
        chain: Sequence[Credential],
        *,
        kind: str,
    ) -> tuple[requests.Response, str]:
        """The answer to one request and the source of the credential that got it
        (``ANONYMOUS`` with an empty chain); ``StatusError`` when every one was refused."""
        if not chain:
            return self._attempt(method, url, repository, deadline, None, kind=kind), ANONYMOUS
        refusals: list[StatusError] = []
        for credential in chain:
            try:
                response = self._attempt(method, url, repository, deadline, credential, kind=kind)
            except StatusError as refused:
                if refused.status not in (401, 403):
                    raise
                refusals.append(refused)
                continue
            return response, credential.source
        if len(refusals) == 1:
            raise refusals[0]
        # Every credential refused: one error saying each one's refusal, the last's status.
        tried = "; ".join(f"{i}. {r.hint}" for i, r in enumerate(refusals, 1))
        raise StatusError(
            refusals[-1].status, url, f"all {len(refusals)} credentials were refused: {tried}"
        )

    def _attempt(
        self,
        method: str,
        url: str,
        repository: str,
        deadline: Deadline,
        credential: Credential | None,
        *,
        kind: str,
    ) -> requests.Response:
        """One request with ``credential`` (a cached token for it, else Basic; nothing when
        anonymous); on a Bearer challenge, a token for it and one retry."""
        scope = f"repository:{repository}:pull"
        token = self._tokens.fresh_token(credential, scope)
        response = self._request(method, url, deadline, _authorization(credential, token), kind)
        if response.status_code == 401:
            header = response.headers.get("WWW-Authenticate", "")
            response.close()
            challenges = parse_challenges(header)
            bearer = next((c for c in challenges if c.scheme.lower() == "bearer"), None)
            if bearer is None:
                # Gitea and Forgejo answer a token without the read:package scope, and a
                # user who may not see the owner's packages, with ``Basic realm="…"`` only.
                raise StatusError(401, url, refused_hint(credential, header, repository))
            value = self._tokens.token_for(bearer, credential, scope, deadline, refused=token)
            response = self._request(method, url, deadline, f"Bearer {value}", kind)
            if response.status_code == 401:
                response.close()
                raise StatusError(
                    401,
                    url,
                    "the Bearer token was refused; " + access_hint(credential, repository),
                )
        if response.status_code == 403:
            response.close()
            raise StatusError(403, url, forbidden_hint(credential, repository))
        return response

    def _request(
        self, method: str, url: str, deadline: Deadline, authorization: str, kind: str
    ) -> requests.Response:
        headers = {"Accept": MANIFEST_ACCEPT}
        if authorization:
            headers["Authorization"] = authorization
        return self._wire.send(method, url, deadline, headers, kind=kind)


def _authorization(credential: Credential | None, token: object) -> str:
    """The Authorization header: a fresh token's, else Basic, else none (anonymous)."""
    value = getattr(token, "value", None)
    if value:
        return f"Bearer {value}"
    return basic_header(credential) if credential is not None else ""


__all__ = ["SignIn"]
