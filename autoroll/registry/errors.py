"""The registry client's error tree; each error becomes ``Unknown(reason)`` at the edge.

Error tree (raised internally ``from`` the cause, turned into ``Unknown(reason)`` at the edge)::

    RegistryError                 reason label
    ├── TransportError            network           connection refused/reset, DNS, TLS
    │   ├── RequestTimeoutError   timeout           connect or read timeout
    │   └── UntrustedCertError    tls-untrusted     the certificate chains to no trusted root
    │                                               (a private CA not given: caBundle)
    ├── BudgetError               budget-exhausted  the call's overall budget is spent
    ├── WrongHostError            other-host        a ref or manifest not on this registry's host
    ├── BackoffError              backoff           a Retry-After from this registry is running
    ├── StatusError               unauthorized | forbidden | not-found | rate-limited
    │                             | http-3xx | http-4xx | http-5xx
    ├── RedirectError             redirect-refused  to another origin, or too many hops
    ├── ChallengeError            bad-challenge     a realm we refuse to send credentials to
    ├── TokenError                token-failed      the realm refused or answered garbage
    └── BadResponseError          missing-digest | malformed-digest | digest-mismatch
                                  | bad-manifest | too-large

A digest of another algorithm (``sha512:…``) is ``malformed-digest``: pods record sha256
digests, so it could only ever compare unequal — unknown, never "changed". A manifest
without a config digest, an index inside an index, or an index with no runnable child is
``bad-manifest``: its content is unknown, never empty (empty would make every pod stale).
So is a manifest nested past ``autoroll.core.boundedjson``'s depth cap, refused before the JSON
parser could recurse into ``RecursionError``; a token answer over ``MAX_TOKEN_BYTES`` or
nested past the cap is ``token-failed`` (docs/adr/020-one-bad-input-stops-only-itself.md).
"""

from __future__ import annotations

from autoroll.core.model import Unknown


class RegistryError(Exception):
    """Base of the tree; ``reason`` is the metrics label."""

    reason = "error"

    def to_unknown(self) -> Unknown:
        return Unknown(self.reason, str(self))


class TransportError(RegistryError):
    reason = "network"


class RequestTimeoutError(TransportError):
    reason = "timeout"


class UntrustedCertError(TransportError):
    """Its own reason, not ``network``: retrying never helps, naming the CA value does."""

    reason = "tls-untrusted"


class WrongHostError(RegistryError):
    reason = "other-host"


class BudgetError(RegistryError):
    reason = "budget-exhausted"


class BackoffError(RegistryError):
    reason = "backoff"


class RedirectError(RegistryError):
    reason = "redirect-refused"


class StatusError(RegistryError):
    def __init__(self, status: int, url: str, hint: str = "") -> None:
        super().__init__(f"HTTP {status} from {url}" + (f": {hint}" if hint else ""))
        self.status = status
        self.hint = hint or f"HTTP {status}"
        self.reason = status_reason(status)


class ChallengeError(RegistryError):
    reason = "bad-challenge"


class TokenError(RegistryError):
    reason = "token-failed"


class BadResponseError(RegistryError):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


def status_reason(status: int) -> str:
    named = {401: "unauthorized", 403: "forbidden", 404: "not-found", 429: "rate-limited"}
    if status in named:
        return named[status]
    return f"http-{status // 100}xx"
