"""The one request path to one registry's origin: who asks, and where an answer may come from.

Every request the registry client sends (a HEAD by tag, a GET or HEAD by digest) goes through
``RegistryOrigin.send``. It asks with a chain of credentials (``signin``): the one it is
given (a lookup's pull credentials, then the registry's own), or, for a request by digest,
the chain that last answered its repository's HEAD, else the registry's own (a chart
Secret's that serve the repository, then the Forgejo shorthand's). Anything but a 200 raises.

Redirects: a 3xx whose ``Location`` is on the registry's own origin (same scheme, host and
port) is followed with the same credentials, at most ``MAX_REDIRECTS`` hops. A redirect
to any other origin is not followed at all (``Unknown("redirect-refused")``): a manifest
answer from elsewhere is not the registry's, and following would hand the credentials to
that host. A 3xx without a ``Location`` is ``http-3xx``.

A manifest or index read by digest must hash to that digest (``get_manifest``), and a
reference on another host than this registry's is refused before anything is sent
(``check_host``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Final
from urllib.parse import urljoin, urlsplit

import requests

from autoroll.core.images import host_matches
from autoroll.core.keyring import Credential
from autoroll.core.model import Digest
from autoroll.registry.errors import BadResponseError, RedirectError, StatusError, WrongHostError
from autoroll.registry.limits import Deadline
from autoroll.registry.manifests import manifest_document, read_capped
from autoroll.registry.signin import SignIn
from autoroll.registry.wire import Wire

#: Same-origin redirects followed per request; registries that redirect use one hop.
MAX_REDIRECTS: Final = 3
_REDIRECT_STATUSES: Final = frozenset({301, 302, 303, 307, 308})


class RegistryOrigin:
    """Sends requests to one registry with the right credentials (module docstring).

    Shared by the client's worker threads: the chains are single dict operations, and what
    ``signin`` and ``wire`` keep is safe for that.
    """

    def __init__(
        self,
        *,
        base: str,
        scheme: str,
        host: str,
        own: Callable[[str], tuple[Credential, ...]],
        wire: Wire,
        signin: SignIn,
    ) -> None:
        """``own`` gives the registry's own credentials for a repository (the client's)."""
        self._base = base
        self._scheme = scheme
        self._host = host
        self._own = own
        self._wire = wire
        self._signin = signin
        #: the chain that last got an answer per repository: GETs by digest there use it
        self._chains: dict[str, tuple[Credential, ...]] = {}

    def answered(self, repository: str, chain: tuple[Credential, ...]) -> None:
        """``chain`` got the answer to ``repository``'s HEAD: GETs by digest there use it."""
        self._chains[repository] = chain

    def refused(self, repository: str) -> None:
        """``repository``'s HEAD was refused (401, 403): its chain is not kept for GETs."""
        self._chains.pop(repository, None)

    def check_host(self, host: str, what: str) -> None:
        if not host_matches(host, self._host):
            raise WrongHostError(f"{what} is not on {self._host}")

    def get_manifest(
        self, repository: str, digest: Digest, deadline: Deadline
    ) -> tuple[dict[str, object], str]:
        """GET a manifest or index by digest: its JSON object, verified against the digest."""
        url = f"{self._base}/v2/{repository}/manifests/{digest}"
        response, _ = self.send("GET", url, repository, deadline, kind="manifest-get")
        body = read_capped(response, deadline)
        if hashlib.sha256(body).hexdigest() != digest.value.removeprefix("sha256:"):
            raise BadResponseError("digest-mismatch", f"{url}: body does not hash to {digest}")
        return manifest_document(body, url), url

    def send(
        self,
        method: str,
        url: str,
        repository: str,
        deadline: Deadline,
        *,
        kind: str,
        chain: Sequence[Credential] | None = None,
    ) -> tuple[requests.Response, str]:
        """One request, following same-origin redirects; anything but a 200 raises. Asked
        with ``chain``, or the chain the repository's last HEAD used (else the registry's
        own credentials); the source of the credential that answered comes back with it."""
        if chain is None:
            chain = self._chains.get(repository) or self._own(repository)
        response, source = self._signin.send(method, url, repository, deadline, chain, kind=kind)
        hops = 0
        while response.status_code in _REDIRECT_STATUSES and response.headers.get("Location"):
            location = response.headers["Location"]
            response.close()
            hops += 1
            if hops > MAX_REDIRECTS:
                raise RedirectError(f"{url}: more than {MAX_REDIRECTS} redirects")
            url = self._redirect_target(url, location)
            response, source = self._signin.send(
                method, url, repository, deadline, chain, kind=kind
            )
        self._wire.note_answer(response)
        if response.status_code != 200:
            response.close()
            raise StatusError(response.status_code, url)
        return response, source

    def _redirect_target(self, url: str, location: str) -> str:
        """The absolute redirect target, only if it is on the registry's own origin."""
        target = urljoin(url, location)
        parts = urlsplit(target)
        if parts.scheme != self._scheme or parts.netloc.lower() != self._host.lower():
            # Not followed at all: no credentials, and no answer from a host we do not ask.
            raise RedirectError(
                f"{url}: redirect to {parts.scheme}://{parts.netloc} refused"
                f" (only {self._base} is followed)"
            )
        return target


__all__ = ["MAX_REDIRECTS", "RegistryOrigin"]
