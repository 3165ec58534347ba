"""How each receiver authenticates a delivery, as pure functions (no request in sight).

Three schemes, one per what the sender can do:

- ``HMAC``: the sender signs the raw body with the shared secret and sends
  ``sha256=<hex>`` in a header (GitHub's ``X-Hub-Signature-256``, the generic ``X-Signature``);
  checked after the body is read (within its cap);
- ``HEADER``: the sender sends a static header it was configured with: the distribution
  registry's and GitLab's endpoint ``headers``, Harbor's "auth header", an Event Grid delivery
  property. ``Authorization: Bearer <token>`` or ``Authorization: <token>``; checked before a
  byte of the body is read;
- ``PATH``: the sender can do neither (Docker Hub, Quay): the token is the last segment of the
  URL it posts to; checked before the body is read.

Every comparison is constant-time (``hmac.compare_digest``). A credential that is absent,
empty, or a bare ``sha256=`` / ``Bearer`` carries nothing: the request is *unsigned*
(``missing``), not wrongly signed.
"""

from __future__ import annotations

import hashlib
import hmac
from enum import StrEnum
from typing import Final

#: The prefix of an HMAC signature header's value.
SHA256_PREFIX: Final = "sha256="
_BEARER: Final = "bearer "


class Auth(StrEnum):
    HMAC = "hmac"  # a signature of the raw body in a header
    HEADER = "header"  # a static token in the Authorization header
    PATH = "path"  # a token as the last path segment


def presented(auth: Auth, value: str | None) -> str | None:
    """The credential a request carries (a header's value or the path token), or None
    when it carries nothing."""
    given = (value or "").strip()
    if auth is Auth.HMAC and given.lower().startswith(SHA256_PREFIX):
        # Anything but sha256 (sha1=, sha512=) is kept as presented, so it is refused as a
        # bad signature rather than as a missing one.
        return given if given[len(SHA256_PREFIX) :].strip() else None
    if auth is Auth.HEADER and given.lower() == _BEARER.strip():
        return None
    if auth is Auth.HEADER and given.lower().startswith(_BEARER):
        return given[len(_BEARER) :].strip() or None
    return given or None


def hmac_valid(secret: bytes, body: bytes, credential: str) -> bool:
    """Is ``credential`` (``sha256=<hex>``) the HMAC-SHA256 of ``body`` keyed with ``secret``?"""
    if credential[: len(SHA256_PREFIX)].lower() != SHA256_PREFIX:
        return False
    expected = hmac.new(secret, body, hashlib.sha256).hexdigest().encode("ascii")
    given = credential[len(SHA256_PREFIX) :].strip().lower().encode("ascii", errors="replace")
    return hmac.compare_digest(expected, given)


def token_valid(secret: str, credential: str) -> bool:
    """Is ``credential`` (a header's token, ``Bearer`` already taken off, or a path token)
    the secret token?"""
    return hmac.compare_digest(secret.encode("utf-8"), credential.encode("utf-8", errors="replace"))


__all__ = ["SHA256_PREFIX", "Auth", "hmac_valid", "presented", "token_valid"]
