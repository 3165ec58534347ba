"""The ``PINNING*`` settings block: the pod-pinning admission webhook (docs/adr/028)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from autoroll.config.errors import Problem
from autoroll.config.leader import parse_object_name
from autoroll.config.parsers import bounded, parse_bool, parse_listen_addr
from autoroll.config.reader import Reader

_DNS_NAME: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
#: Bounds of the serving certificate's lifetime the controller makes: an hour (tests and the
#: cautious) to a year; it is made again at two thirds of it.
MIN_CERT_SECONDS: Final = 60
MAX_CERT_SECONDS: Final = 366 * 86400


class PinningTLS(StrEnum):
    """Where the webhook's serving certificate comes from."""

    CONTROLLER = "controller"  # made and rotated by the controller, its CA put in the caBundle
    FILES = "files"  # tls.crt/tls.key in a directory (cert-manager's Secret), reloaded on change


@dataclass(frozen=True, slots=True)
class Pinning:
    """The pinning webhook (``PINNING=true``): where it listens, its TLS, and the names the
    API server calls it by (``PINNING_DNS_NAMES``: the Service's, for the certificate)."""

    host: str = "0.0.0.0"
    port: int = 8443
    tls: PinningTLS = PinningTLS.CONTROLLER
    tls_dir: str = "/etc/autoroll/pinning-tls"
    #: the MutatingWebhookConfiguration whose caBundle the controller keeps (controller TLS)
    webhook_configuration: str = ""
    dns_names: tuple[str, ...] = ()
    cert_seconds: int = 7 * 86400  # a week, made again after two thirds of it

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}"


def read_pinning(reader: Reader) -> Pinning | None:
    """The ``PINNING*`` variables; None when pinning is off (the default). The others are
    read (and checked) either way, so a typo is reported instead of silently ignored."""
    enabled = reader.optional("PINNING", False, parse_bool)
    addr = reader.optional(
        "PINNING_ADDR", ("0.0.0.0", 8443), parse_listen_addr, default_text="0.0.0.0:8443"
    )
    tls = reader.optional("PINNING_TLS", PinningTLS.CONTROLLER, _parse_tls)
    tls_dir = reader.optional("PINNING_TLS_DIR", "/etc/autoroll/pinning-tls", _parse_path)
    webhook = reader.optional("PINNING_WEBHOOK_CONFIGURATION", "", parse_object_name)
    none: tuple[str, ...] = ()
    names = reader.optional("PINNING_DNS_NAMES", none, _parse_names, default_text="(none)")
    seconds = reader.optional("PINNING_CERT_SECONDS", 7 * 86400, _parse_cert_seconds)
    if not enabled:
        return None
    if tls is PinningTLS.CONTROLLER:
        if not webhook and "PINNING_WEBHOOK_CONFIGURATION" not in reader.env:
            reader.problems.append(
                Problem(
                    "PINNING_WEBHOOK_CONFIGURATION",
                    "is required with PINNING_TLS=controller: the MutatingWebhookConfiguration"
                    " whose caBundle the controller keeps (the chart sets it)",
                )
            )
        if not names and "PINNING_DNS_NAMES" not in reader.env:
            reader.problems.append(
                Problem(
                    "PINNING_DNS_NAMES",
                    "is required with PINNING_TLS=controller: the names the API server calls"
                    " the webhook by (<service>.<namespace>.svc; the chart sets it)",
                )
            )
    return Pinning(
        host=addr[0],
        port=addr[1],
        tls=tls,
        tls_dir=tls_dir,
        webhook_configuration=webhook,
        dns_names=names,
        cert_seconds=seconds,
    )


def redacted_pinning(pinning: Pinning | None) -> dict[str, str]:
    if pinning is None:
        return {"PINNING": "false"}
    return {
        "PINNING": "true",
        "PINNING_ADDR": pinning.addr,
        "PINNING_TLS": str(pinning.tls),
        "PINNING_TLS_DIR": pinning.tls_dir,
        "PINNING_WEBHOOK_CONFIGURATION": pinning.webhook_configuration,
        "PINNING_DNS_NAMES": ",".join(pinning.dns_names),
        "PINNING_CERT_SECONDS": str(pinning.cert_seconds),
    }


def _parse_tls(raw: str) -> PinningTLS:
    try:
        return PinningTLS(raw.strip().lower())
    except ValueError:
        raise ValueError(
            "expected controller (the controller makes and rotates its certificate) or files"
            " (tls.crt and tls.key in PINNING_TLS_DIR, cert-manager's Secret)"
        ) from None


def _parse_path(raw: str) -> str:
    if not raw.startswith("/"):
        raise ValueError("expected an absolute directory path")
    return raw


def _parse_names(raw: str) -> tuple[str, ...]:
    names = tuple(n.strip().lower() for n in raw.split(",") if n.strip())
    bad = [n for n in names if len(n) > 253 or not _DNS_NAME.fullmatch(n)]
    if not names or bad:
        raise ValueError(
            "expected DNS names separated by commas (autoroll-pinning.autoroll.svc,"
            " autoroll-pinning.autoroll.svc.cluster.local)"
        )
    return names


def _parse_cert_seconds(raw: str) -> int:
    form = f"expected whole seconds, {MIN_CERT_SECONDS} to {MAX_CERT_SECONDS}"
    return bounded(raw, int, MIN_CERT_SECONDS, MAX_CERT_SECONDS, form)
