"""Bearer tokens for the registry client: one fetch per scope, only from the registry's origin.

HTTP Basic (user + token) is sent up front; a 401 with a Bearer challenge sends the client
here. The realm must be on the registry's own origin (scheme, host and port; an https
registry's realm never plain http), so the credentials go nowhere else. A token answer is read
within ``MAX_TOKEN_BYTES`` and the JSON depth cap (``autoroll.core.boundedjson``). A token is cached
per scope until shortly before it expires; lookups that need one at once wait for the one fetch
(a lock per scope), and a refused request's ``StatusError`` names what to fix (FORGEJO_USER,
FORGEJO_TOKEN and its ``read:package`` scope, access to the owner).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

import requests
from authchallenge import Challenge

from autoroll.core import boundedjson
from autoroll.registry.errors import (
    BadResponseError,
    BudgetError,
    ChallengeError,
    RequestTimeoutError,
    StatusError,
    TokenError,
    TransportError,
    UntrustedCertError,
)
from autoroll.registry.limits import Deadline, Limits, RegistryObserver
from autoroll.registry.manifests import MAX_TOKEN_BYTES, read_capped
from autoroll.registry.tls import is_untrusted, untrusted_message


@dataclass(slots=True)
class Token:
    value: str
    expires_at: float


class TokenFlow:
    """The token cache and the one token fetch per scope, for one registry."""

    def __init__(
        self,
        *,
        session: requests.Session,
        user: str,
        basic: str,
        base_url: str,
        clock: Callable[[], float],
        limits: Limits,
        observer: RegistryObserver,
        check_quiet: Callable[[], None],
        note_retry_after: Callable[[requests.Response], None],
        on_token: Callable[[str], None] | None = None,
        ca_file: str | None = None,
    ) -> None:
        self._session = session
        self._ca_file = ca_file  # named in a refused certificate's message
        self._user = user
        self._basic = basic
        self._base_url = base_url
        self._clock = clock
        self._limits = limits
        self._observer = observer
        self._check_quiet = check_quiet  # the client's back-off applies to the realm too
        self._note_retry_after = note_retry_after
        self._on_token = on_token  # the log redactor learns each token as it is issued
        self._tokens: dict[str, Token] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    def refused_hint(self, header: str, repository: str) -> str:
        offered = f" ({header.strip()[:80]})" if header.strip() else ""
        return f"the registry refused user {self._user!r} and its token{offered}; " + (
            self.access_hint(repository)
        )

    def access_hint(self, repository: str) -> str:
        owner = repository.partition("/")[0]
        return (
            "FORGEJO_TOKEN must be a valid token of FORGEJO_USER with the read:package"
            f" scope, and {self._user!r} must see {owner!r}'s packages (a private owner's"
            " only as itself or as a member of its organisation)"
        )

    def fresh_token(self, scope: str) -> Token | None:
        token = self._tokens.get(scope)
        return token if token is not None and token.expires_at > self._clock() else None

    def _lock_for(self, scope: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(scope, threading.Lock())

    def token_for(
        self, challenge: Challenge, scope: str, deadline: Deadline, *, refused: Token | None
    ) -> str:
        """A Bearer token for ``scope``: fetched once per scope however many lookups ask.

        ``refused`` is the token the registry just refused (None when Basic was sent). A
        lookup that waited for the lock while another fetched takes that token instead of
        fetching its own; only a token that was itself refused is fetched anew.
        """
        params = challenge.params  # names lower-cased by the parser
        realm = params.get("realm", "")
        self._check_realm(realm)
        lock = self._lock_for(scope)
        # The wait counts against the tick's budget like any request would.
        if not lock.acquire(timeout=deadline.remaining()):
            raise BudgetError("the per-tick registry budget ran out waiting for a token")
        try:
            cached = self.fresh_token(scope)
            if cached is not None and cached is not refused:
                return cached.value
            return self._fetch_token(realm, params, scope, deadline)
        finally:
            lock.release()

    def _fetch_token(
        self, realm: str, params: Mapping[str, str], scope: str, deadline: Deadline
    ) -> str:
        """GET a token from ``realm`` with the Basic credentials, and cache it for ``scope``."""
        query = {k: params[k] for k in ("service", "scope") if params.get(k)}
        self._check_quiet()
        self._observer.request_sent("token")
        try:
            response = self._session.get(
                realm,
                params=query,
                headers={"Authorization": self._basic, "Accept": "application/json"},
                timeout=(
                    min(self._limits.connect_seconds, deadline.remaining()),
                    min(self._limits.read_seconds, deadline.remaining()),
                ),
                allow_redirects=False,
                stream=True,
            )
        except requests.Timeout as exc:
            raise RequestTimeoutError(f"token request to {realm}: {type(exc).__name__}") from exc
        except requests.exceptions.SSLError as exc:
            if is_untrusted(exc):
                message = untrusted_message(exc, ca_file=self._ca_file)
                raise UntrustedCertError(f"token request to {realm}: {message}") from exc
            raise TransportError(f"token request to {realm}: {type(exc).__name__}") from exc
        except requests.RequestException as exc:
            raise TransportError(f"token request to {realm}: {type(exc).__name__}") from exc
        if response.status_code == 401:
            response.close()
            raise StatusError(
                401,
                realm,
                f"the token endpoint refused user {self._user!r}; FORGEJO_TOKEN is wrong or"
                " expired, or lacks the read:package scope (check FORGEJO_USER too)",
            )
        if response.status_code != 200:
            self._note_retry_after(response)
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
            expires_in = float(document.get("expires_in", 60))
        except (ValueError, AttributeError, TypeError) as exc:
            raise TokenError(f"token endpoint {realm} answered malformed JSON ({exc})") from exc
        if not isinstance(value, str) or not value:
            raise TokenError(f"token endpoint {realm} answered without a token")
        if self._on_token is not None:
            self._on_token(value)  # before any line could carry it
        # Renew a little early so a token never expires between check and use.
        lifetime = max(0.0, expires_in - min(10.0, expires_in * 0.1))
        self._tokens[scope] = Token(value, self._clock() + lifetime)
        return value

    def _check_realm(self, realm: str) -> None:
        """Credentials go only to the registry's own origin (``realm_refusal``)."""
        refusal = realm_refusal(realm, self._base_url)
        if refusal is not None:
            raise ChallengeError(refusal)


_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) with the scheme's default port filled in; ValueError if the
    port is not a number."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or _DEFAULT_PORTS.get(scheme)


def realm_refusal(realm: str, base_url: str) -> str | None:
    """Why the Basic credentials may not go to ``realm``, or None when they may (pure).

    The realm must be on the registry's own host AND port, and never plain http for an
    https registry; an https realm for a plain-http registry is another origin as well,
    and refused. Comparing the host alone would send the credentials to any other port of
    the same machine, whoever listens there.
    """
    try:
        scheme, host, port = _origin(realm)
        own_scheme, own_host, own_port = _origin(base_url)
    except ValueError:
        return f"Bearer challenge with an unreadable realm: {realm[:200]!r}"
    if scheme not in _DEFAULT_PORTS or not host:
        return f"Bearer challenge without a usable realm: {realm[:200]!r}"
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
