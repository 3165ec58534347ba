"""Bearer tokens for the registry client, and what a refusal says to fix.

HTTP Basic is sent up front with each credential the client tries; a 401 with a Bearer
challenge sends it here. With a credential, the realm must be on the registry's own origin
(scheme, host and port; an https registry's realm never plain http) or a host the registry's
configuration names (``realm_hosts``: Docker Hub's ``auth.docker.io``), so the credentials go
nowhere else; without one (anonymous) any realm of the registry's scheme may be asked, as
nothing secret is sent. A token answer is read within ``MAX_TOKEN_BYTES`` and the JSON depth
cap (``autoroll.core.boundedjson``). A token is cached per credential (by a hash of it) and
scope until shortly before its ``expires_in`` runs out, then fetched again; lookups that need
one at once wait for the one fetch (a lock per credential and scope). A refused request's
``StatusError`` names what to fix: FORGEJO_USER, FORGEJO_TOKEN and its ``read:package``
scope for the Forgejo shorthand's credentials, the Secret for a pull secret's.
"""

from __future__ import annotations

import base64
import hashlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from authchallenge import Challenge

from autoroll.core import boundedjson
from autoroll.core.keyring import Credential
from autoroll.registry.errors import (
    BadResponseError,
    BudgetError,
    ChallengeError,
    StatusError,
    TokenError,
)
from autoroll.registry.limits import Deadline
from autoroll.registry.manifests import MAX_TOKEN_BYTES, read_capped
from autoroll.registry.wire import Wire

#: The source name of the registry's own credentials from ``FORGEJO_USER``/``FORGEJO_TOKEN``;
#: a refusal of these names what to fix in those variables.
FORGEJO_SOURCE: Final = "FORGEJO_TOKEN"
#: How long a token is kept when its answer gives no ``expires_in`` (the distribution token
#: spec's default lifetime).
DEFAULT_TOKEN_SECONDS: Final = 60.0


@dataclass(slots=True)
class Token:
    value: str
    expires_at: float


def basic_header(credential: Credential) -> str:
    """``Basic base64(user:password)``."""
    pair = f"{credential.username}:{credential.password}".encode()
    return "Basic " + base64.b64encode(pair).decode("ascii")


def fingerprint(credential: Credential | None) -> str:
    """What a token is cached under: a hash of the credential (never the credential), so a
    rotated Secret's new password gets tokens of its own."""
    if credential is None:
        return "anonymous"
    text = f"{credential.username}\0{credential.password}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def refused_hint(credential: Credential | None, header: str, repository: str) -> str:
    """What to fix when the registry refuses ``credential`` (None: asked anonymously)."""
    offered = f" ({header.strip()[:80]})" if header.strip() else ""
    if credential is None:
        return (
            f"the registry refused an anonymous request{offered}; give the pods an"
            " imagePullSecret for it (with pullSecrets on for this registry), or the registry"
            " a Secret of its own"
        )
    if credential.source == FORGEJO_SOURCE:
        return f"the registry refused user {credential.username!r} and its token{offered}; " + (
            access_hint(credential, repository)
        )
    return f"the registry refused {credential}{offered}; " + access_hint(credential, repository)


def access_hint(credential: Credential | None, repository: str) -> str:
    """What must be true of ``credential`` for it to read ``repository``."""
    owner = repository.partition("/")[0]
    if credential is None:
        return f"{repository!r} needs credentials: anonymous pulls are refused"
    if credential.source == FORGEJO_SOURCE:
        return (
            "FORGEJO_TOKEN must be a valid token of FORGEJO_USER with the read:package"
            f" scope, and {credential.username!r} must see {owner!r}'s packages (a private"
            " owner's only as itself or as a member of its organisation)"
        )
    return (
        f"fix the credentials in {credential.source} (for registry key {credential.key!r}):"
        f" they must be valid and allowed to pull {repository!r}"
    )


def forbidden_hint(credential: Credential | None, repository: str) -> str:
    """Why a 403 answer: the credential is valid but may not read ``repository``."""
    if credential is not None and credential.source == FORGEJO_SOURCE:
        return (
            f"user {credential.username!r} may not read {repository!r}: FORGEJO_TOKEN lacks"
            " access to it (a token limited to public packages cannot read a private owner's;"
            " grant read:package on all packages)"
        )
    who = "an anonymous request" if credential is None else str(credential)
    return f"{who} may not read {repository!r}; grant it pull access"


class TokenFlow:
    """Bearer tokens of one registry, cached per credential and scope until shortly before
    they expire; one fetch per credential and scope however many lookups ask."""

    def __init__(
        self,
        *,
        wire: Wire,
        base_url: str,
        clock: Callable[[], float],
        on_token: Callable[[str], None] | None = None,
        realm_hosts: frozenset[str] = frozenset(),
    ) -> None:
        self._wire = wire
        self._base_url = base_url
        self._clock = clock
        self._on_token = on_token  # the log redactor learns each token as it is issued
        self._realm_hosts = realm_hosts  # other realms credentials may go to (Docker Hub's)
        self._tokens: dict[tuple[str, str], Token] = {}
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._locks_guard = threading.Lock()

    def fresh_token(self, credential: Credential | None, scope: str) -> Token | None:
        token = self._tokens.get((fingerprint(credential), scope))
        return token if token is not None and token.expires_at > self._clock() else None

    def _lock_for(self, key: tuple[str, str]) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(key, threading.Lock())

    def token_for(
        self,
        challenge: Challenge,
        credential: Credential | None,
        scope: str,
        deadline: Deadline,
        *,
        refused: Token | None,
    ) -> str:
        """A Bearer token for ``scope`` with ``credential`` (None: anonymous), fetched once
        however many lookups ask.

        ``refused`` is the token the registry just refused (None when Basic was sent). A
        lookup that waited for the lock while another fetched takes that token instead of
        fetching its own; only a token that was itself refused is fetched anew.
        """
        params = challenge.params  # names lower-cased by the parser
        realm = params.get("realm", "")
        self._check_realm(realm, anonymous=credential is None)
        key = (fingerprint(credential), scope)
        lock = self._lock_for(key)
        # The wait counts against the tick's budget like any request would.
        if not lock.acquire(timeout=deadline.remaining()):
            raise BudgetError("the per-tick registry budget ran out waiting for a token")
        try:
            cached = self.fresh_token(credential, scope)
            if cached is not None and cached is not refused:
                return cached.value
            return self._fetch_token(realm, params, credential, key, deadline)
        finally:
            lock.release()

    def _fetch_token(
        self,
        realm: str,
        params: Mapping[str, str],
        credential: Credential | None,
        key: tuple[str, str],
        deadline: Deadline,
    ) -> str:
        """GET a token from ``realm`` (with the Basic credentials, unless anonymous)."""
        query = {k: params[k] for k in ("service", "scope") if params.get(k)}
        headers = {"Accept": "application/json"}
        if credential is not None:
            headers["Authorization"] = basic_header(credential)
        response = self._wire.send("GET", realm, deadline, headers, kind="token", params=query)
        if response.status_code == 401:
            response.close()
            raise StatusError(401, realm, _token_refused(credential))
        if response.status_code != 200:
            self._wire.note_answer(response)
            response.close()
            raise TokenError(f"token endpoint {realm} answered HTTP {response.status_code}")
        try:
            body = read_capped(response, deadline, cap=MAX_TOKEN_BYTES)
        except BadResponseError as exc:
            # Over the cap: no real token answer is this large; the registry's, not ours.
            raise TokenError(f"token endpoint {realm} answered {exc.reason}: {exc}") from exc
        try:
            document = boundedjson.loads(body, max_bytes=MAX_TOKEN_BYTES)
            value = document.get("token") or document.get("access_token")
            expires_in = float(document.get("expires_in") or DEFAULT_TOKEN_SECONDS)
        except (ValueError, AttributeError, TypeError) as exc:
            raise TokenError(f"token endpoint {realm} answered malformed JSON ({exc})") from exc
        if not isinstance(value, str) or not value:
            raise TokenError(f"token endpoint {realm} answered without a token")
        if self._on_token is not None:
            self._on_token(value)  # before any line could carry it
        # Cached until its expires_in, renewed a little before: never used as it lapses.
        lifetime = max(0.0, expires_in - min(10.0, expires_in * 0.1))
        now = self._clock()
        self._tokens = {k: t for k, t in self._tokens.items() if t.expires_at > now}
        self._tokens[key] = Token(value, now + lifetime)
        return value

    def _check_realm(self, realm: str, *, anonymous: bool) -> None:
        """Credentials go only to the registry's own origin or a configured realm host
        (``realm_refusal``); an anonymous request may ask any realm of the same scheme."""
        refusal = realm_refusal(realm, self._base_url, extra_hosts=self._realm_hosts)
        if refusal is not None and not (anonymous and _same_scheme(realm, self._base_url)):
            raise ChallengeError(refusal)


def _token_refused(credential: Credential | None) -> str:
    if credential is None:
        return "the token endpoint refused an anonymous request"
    if credential.source == FORGEJO_SOURCE:
        return (
            f"the token endpoint refused user {credential.username!r}; FORGEJO_TOKEN is wrong"
            " or expired, or lacks the read:package scope (check FORGEJO_USER too)"
        )
    return f"the token endpoint refused {credential}; fix the credentials in {credential.source}"


def _same_scheme(realm: str, base_url: str) -> bool:
    """Is ``realm`` https, or plain http for a plain-http registry?"""
    scheme = urlsplit(realm).scheme.lower()
    return scheme == "https" or (scheme == "http" and base_url.startswith("http://"))


_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) with the scheme's default port filled in; ValueError if the
    port is not a number."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or _DEFAULT_PORTS.get(scheme)


def realm_refusal(
    realm: str, base_url: str, *, extra_hosts: frozenset[str] = frozenset()
) -> str | None:
    """Why the Basic credentials may not go to ``realm``, or None when they may (pure).

    The realm must be on the registry's own host AND port, and never plain http for an
    https registry; an https realm for a plain-http registry is another origin as well,
    and refused. Comparing the host alone would send the credentials to any other port of
    the same machine, whoever listens there. ``extra_hosts`` are other https hosts the
    registry's configuration names as its token service (Docker Hub's ``auth.docker.io``).
    """
    try:
        scheme, host, port = _origin(realm)
        own_scheme, own_host, own_port = _origin(base_url)
    except ValueError:
        return f"Bearer challenge with an unreadable realm: {realm[:200]!r}"
    if scheme not in _DEFAULT_PORTS or not host:
        return f"Bearer challenge without a usable realm: {realm[:200]!r}"
    if scheme == "https" and host in extra_hosts and port == 443:
        return None
    if host != own_host:
        return f"refusing to send credentials to realm host {host!r}"
    if own_scheme == "https" and scheme != "https":
        return "refusing a realm that downgrades https to http"
    if port != own_port or scheme != own_scheme:
        return (
            f"refusing to send credentials to {scheme}://{host}:{port}: only the registry's"
            f" own origin {own_scheme}://{own_host}:{own_port} gets them"
        )
    return None
