"""Parsers shared by the settings blocks: each returns the value or raises ValueError with the
expected form, which ``Reader`` reports under the variable's name."""

from __future__ import annotations

import re
import ssl
from collections.abc import Callable
from typing import Final, TypeVar

from autoroll.core.model import WorkloadKind

#: A webhook secret shorter than this is guessable enough to forge signatures offline.
MIN_WEBHOOK_SECRET_BYTES: Final = 16

_HOST_PORT: Final = re.compile(
    r"(?P<host>[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*"
    r"|\[[0-9A-Fa-f:.]+\])(?::(?P<port>[0-9]{1,5}))?"
)
#: WORKLOAD_KINDS by default: every kind autoroll can roll.
ALL_KINDS: Final = ",".join(WorkloadKind)
_TRUE: Final = frozenset({"true", "1", "yes", "on"})
_FALSE: Final = frozenset({"false", "0", "no", "off"})

N = TypeVar("N", int, float)


def parse_forgejo_host(raw: str) -> str:
    if "://" in raw or "/" in raw:
        raise ValueError(
            "expected a bare host[:port] such as forgejo.example.org, without scheme or path"
        )
    match = _HOST_PORT.fullmatch(raw)
    if match is None:
        raise ValueError(
            "expected a bare host[:port] such as forgejo.example.org or forgejo.local:3000"
        )
    port = match.group("port")
    if port is not None and not 1 <= int(port) <= 65535:
        raise ValueError("port must be 1-65535")
    return raw.lower()


def parse_nonblank(raw: str) -> str:
    if raw.strip() != raw or not raw:
        raise ValueError("expected a non-empty value without surrounding whitespace")
    return raw


def check_nonblank(raw: str) -> None:
    if raw.strip() != raw:
        raise ValueError("has surrounding whitespace (a trailing newline from a file?)")


def check_webhook_secret(raw: str) -> None:
    check_nonblank(raw)
    size = len(raw.encode("utf-8"))
    if size < MIN_WEBHOOK_SECRET_BYTES:
        raise ValueError(
            f"is {size} bytes; expected at least {MIN_WEBHOOK_SECRET_BYTES}"
            " (e.g. the output of openssl rand -hex 32)"
        )


def bounded(raw: str, number: Callable[[str], N], low: N, high: N, form: str) -> N:
    """``raw`` read by ``number`` (``int`` or ``float``) and within ``low`` to ``high``;
    ValueError(``form``) otherwise, the same words whether it is no number or out of range."""
    try:
        value = number(raw)
    except ValueError:
        raise ValueError(form) from None
    if not low <= value <= high:  # also rejects nan and inf
        raise ValueError(form)
    return value


def parse_interval(raw: str) -> int:
    return bounded(raw, int, 5, 86400, "expected a whole number of seconds, 5 to 86400")


def parse_pass_timeout(raw: str) -> int:
    return bounded(raw, int, 5, 3600, "expected a whole number of seconds, 5 to 3600")


def parse_resync(raw: str) -> int:
    return bounded(raw, int, 60, 86400, "expected a whole number of seconds, 60 to 86400")


def parse_tag_interval(raw: str) -> int:
    return bounded(raw, int, 0, 300, "expected a whole number of seconds, 0 (off) to 300")


def parse_selector(raw: str) -> str:
    requirements = [part.strip() for part in raw.split(",")]
    if any(not part for part in requirements):
        raise ValueError(
            "expected a label selector such as aethnet.se/autoroll=true (no empty terms)"
        )
    return raw


def parse_kinds(raw: str) -> str:
    """Kind names, comma-separated, any case: returned canonical (lowercase, in the order of
    ``WorkloadKind``), each named once."""
    expected = ALL_KINDS
    kinds: list[WorkloadKind] = []
    for part in raw.split(","):
        name = part.strip().lower()
        try:
            kind = WorkloadKind(name)
        except ValueError:
            raise ValueError(
                f"{part.strip()!r} is not a workload kind; expected a comma-separated list of"
                f" {expected} (e.g. {expected})"
            ) from None
        if kind in kinds:
            raise ValueError(f"{kind} is listed twice; name each kind once")
        kinds.append(kind)
    # One order whatever the spelling, so logs and requests are stable.
    return ",".join(k for k in WorkloadKind if k in kinds)


def parse_listen_addr(raw: str) -> tuple[str, int]:
    host, colon, port = raw.rpartition(":")
    if not colon or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError("expected host:port such as 0.0.0.0:8080 or [::]:8080")
    if not _HOST_PORT.fullmatch(host):
        raise ValueError("expected host:port such as 0.0.0.0:8080 or [::]:8080")
    return host, int(port)


def parse_bool(raw: str) -> bool:
    lowered = raw.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError("expected true or false")


def parse_ca_file(raw: str) -> str:
    """REGISTRY_CA_FILE: an absolute path to PEM certificates that load as trust anchors.

    Loaded once here, so a wrong mount or a key file in place of a certificate stops the
    start with the variable named, instead of every registry call failing later.
    """
    if not raw.startswith("/"):
        raise ValueError("expected an absolute path to a PEM file, such as /etc/autoroll/ca/ca.crt")
    try:
        ssl.create_default_context().load_verify_locations(cafile=raw)
    except FileNotFoundError:
        raise ValueError(
            "no such file; mount the CA there (chart: caBundle.configMap, caBundle.secret"
            " or caBundle.pem)"
        ) from None
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(
            f"cannot be read as PEM CA certificates ({exc.__class__.__name__}: {exc});"
            " expected one or more -----BEGIN CERTIFICATE----- blocks"
        ) from None
    return raw
