"""The webhook receivers' settings block: each registry's receiver is on when its secret is set.

    DISTRIBUTION_WEBHOOK_TOKEN  GITLAB_WEBHOOK_TOKEN   HARBOR_WEBHOOK_TOKEN
    GITHUB_WEBHOOK_SECRET       GENERIC_WEBHOOK_SECRET CLOUDEVENTS_WEBHOOK_TOKEN
    DOCKERHUB_WEBHOOK_TOKEN     QUAY_WEBHOOK_TOKEN

Each may come from a file instead (``<NAME>_FILE``, as every secret: ``config.reader``). Unset
means that receiver is off (its route answers 404); the variable names come from the one
table of receivers (``autoroll.core.receivers.sources``). Forgejo's ``WEBHOOK_SECRET`` stays
in the main block: ``/webhook`` is always on. docs/adr/025-webhook-receivers.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from autoroll.config.errors import Secret
from autoroll.config.parsers import MIN_WEBHOOK_SECRET_BYTES, check_webhook_secret
from autoroll.config.reader import Reader
from autoroll.core.receivers.auth import Auth
from autoroll.core.receivers.sources import RECEIVERS, Source

#: A token a sender puts in a header: visible ASCII, no spaces (a header value, one token).
_HEADER_TOKEN: Final = re.compile(r"[\x21-\x7e]+")
#: A token in a URL path: unreserved characters only (RFC 3986), so it needs no encoding and
#: no proxy rewrites it.
_PATH_TOKEN: Final = re.compile(r"[A-Za-z0-9._~-]+")


@dataclass(frozen=True, slots=True)
class Receivers:
    """The receivers that are on, each with its secret (never printed: ``Secret``)."""

    secrets: tuple[tuple[Source, Secret], ...] = ()

    def secret(self, source: Source) -> Secret | None:
        return dict(self.secrets).get(source)

    @property
    def on(self) -> tuple[Source, ...]:
        return tuple(source for source, _ in self.secrets)


def _checker(auth: Auth) -> Callable[[str], None]:
    """The check of a secret used as ``auth`` uses it: every one as long as an HMAC key, and a
    token also fit for where it travels."""

    def check(raw: str) -> None:
        check_webhook_secret(raw)
        if auth is Auth.PATH and not _PATH_TOKEN.fullmatch(raw):
            raise ValueError(
                "a token in a URL path may hold only letters, digits and . _ ~ -"
                f" (at least {MIN_WEBHOOK_SECRET_BYTES}; e.g. the output of openssl rand -hex 32)"
            )
        if auth is Auth.HEADER and not _HEADER_TOKEN.fullmatch(raw):
            raise ValueError(
                "a token sent in the Authorization header may hold only visible ASCII, no spaces"
                " (e.g. the output of openssl rand -hex 32)"
            )

    return check


def read_receivers(reader: Reader) -> Receivers:
    found: list[tuple[Source, Secret]] = []
    for source, receiver in RECEIVERS.items():
        check = _checker(receiver.auth)
        secret = reader.optional_secret(receiver.variable, check)
        if secret is not None:
            found.append((source, secret))
    return Receivers(tuple(found))


def redacted_receivers(receivers: Receivers) -> dict[str, str]:
    """The variable of each receiver that is on, its value ``<redacted>`` (the off ones are
    left out, as unset variables are)."""
    return {RECEIVERS[source].variable: "<redacted>" for source in receivers.on}


__all__ = ["Receivers", "read_receivers", "redacted_receivers"]
