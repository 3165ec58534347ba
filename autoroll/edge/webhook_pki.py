"""The pinning webhook's TLS: a certificate the controller makes and rotates, or one mounted
from a Secret (cert-manager), and the ``ssl.SSLContext`` each new connection is served with.

The API server calls a webhook over TLS only, checking the serving certificate against the
configuration's ``caBundle`` and the Service's DNS name. Two sources (docs/adr/028):

- ``ControllerCertificates`` (``PINNING_TLS=controller``, the default): the controller makes
  its own CA and a serving certificate for the Service's names, in memory, and writes the
  CA into the MutatingWebhookConfiguration's caBundle (``WebhookConfigPort``). The serving
  certificate is made again at two thirds of its lifetime (``PINNING_CERT_SECONDS``). The CA
  lives eight certificate lifetimes; with three left, the next CA is made and added to the
  caBundle *beside* the current one, and the first serving certificate it signs is used only
  at the next rotation, a whole rotation later: the API server has long seen the bundle by
  then. A CA retired stays in the bundle until the last certificate it signed has expired.
  At start, the CAs already in the bundle that are still valid are kept (at most three), so
  another replica's or a previous pod's certificate keeps working during a rolling update.
- ``FileCertificates`` (``PINNING_TLS=files``): ``tls.crt`` and ``tls.key`` in a directory,
  cert-manager's Secret mounted there; loaded again when either file changes (the kubelet
  updates a mounted Secret within about a minute of cert-manager renewing it), and the
  caBundle is cert-manager's cainjector's job.

Keys are EC P-256 and never leave the process: each context is loaded from files in a
private directory (0700) on a tmpfs, removed as soon as they are loaded.
"""

from __future__ import annotations

import contextlib
import logging
import os
import ssl
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final, Protocol

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

log = logging.getLogger(__name__)

#: A CA lives this many serving-certificate lifetimes; the next one is made with three left.
CA_LIFETIMES: Final = 8
NEXT_CA_AT: Final = 3
#: CAs kept in the bundle at most (current, next, retired, a previous pod's).
MAX_BUNDLE: Final = 4
#: Certificates are dated this far back, so a clock slightly behind ours accepts them.
BACKDATE: Final = timedelta(minutes=5)
_SHM: Final = "/dev/shm"


class WebhookConfigPort(Protocol):
    """The caBundle of the MutatingWebhookConfiguration (``autoroll.kube.KubeWebhookConfig``)."""

    def ca_bundle(self) -> bytes: ...

    def set_ca_bundle(self, pem: bytes) -> None: ...


@dataclass(frozen=True, slots=True)
class Authority:
    """A CA: its certificate and key."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)


@dataclass(frozen=True, slots=True)
class Serving:
    """A serving certificate (PEM), its key (PEM), who signed it and when it was made."""

    cert_pem: bytes
    key_pem: bytes
    authority: Authority
    not_before: datetime
    not_after: datetime
    serial: int


def new_authority(now: datetime, lifetime: timedelta) -> Authority:
    """A self-signed CA valid from ``now`` (backdated a little) for ``lifetime``."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "autoroll pinning webhook CA")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + lifetime)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return Authority(cert, key)


def issue(
    authority: Authority, dns_names: Sequence[str], now: datetime, lifetime: timedelta
) -> Serving:
    """A serving certificate for ``dns_names`` signed by ``authority``, never outliving it."""
    key = ec.generate_private_key(ec.SECP256R1())
    not_after = min(now + lifetime, authority.cert.not_valid_after_utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_names[0])]))
        .issuer_name(authority.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(not_after)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in dns_names]), False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(authority.key.public_key()), False
        )
        .sign(authority.key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    return Serving(cert_pem, key_pem, authority, now, not_after, cert.serial_number)


def server_context(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    """A TLS 1.2+ server context for the pair (loaded from private files, removed at once)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    base = _SHM if os.path.isdir(_SHM) and os.access(_SHM, os.W_OK) else None
    directory = tempfile.mkdtemp(prefix="autoroll-pinning-", dir=base)  # 0700
    cert_file, key_file = Path(directory, "tls.crt"), Path(directory, "tls.key")
    try:
        cert_file.write_bytes(cert_pem)
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(key_pem)
        context.load_cert_chain(cert_file, key_file)
    finally:
        for path in (cert_file, key_file):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        os.rmdir(directory)
    return context


def pem_certificates(bundle: bytes) -> list[x509.Certificate]:
    """The certificates of a PEM bundle (none when it does not parse)."""
    try:
        return list(x509.load_pem_x509_certificates(bundle)) if bundle.strip() else []
    except ValueError:
        return []


def _utcnow() -> datetime:
    return datetime.now(UTC)


class ControllerCertificates:
    """The controller's own CA and serving certificate, rotated (module docstring).
    ``check`` is called now and then (``CertificateRotator``); ``context`` is read by every
    new connection. ``start`` makes the first pair and publishes the CA: a failure there
    raises, so a webhook that cannot be trusted is said at boot."""

    def __init__(
        self,
        *,
        dns_names: Sequence[str],
        lifetime: timedelta,
        config: WebhookConfigPort,
        clock: Callable[[], datetime] = _utcnow,
        on_new: Callable[[Serving], None] | None = None,
    ) -> None:
        if not dns_names:
            raise ValueError("the serving certificate needs at least one DNS name")
        self._names = tuple(dns_names)
        self._lifetime = lifetime
        self._config = config
        self._clock = clock
        self._on_new = on_new
        self._lock = threading.Lock()
        self._ca: Authority | None = None
        self._next: Authority | None = None
        self._kept: list[x509.Certificate] = []  # other CAs still trusted (retired, a pod's)
        self._serving: Serving | None = None
        self._context: ssl.SSLContext | None = None
        self._last_published = b""

    @property
    def serving(self) -> Serving:
        if self._serving is None:
            raise RuntimeError("no certificate yet: call start()")
        return self._serving

    def context(self) -> ssl.SSLContext:
        if self._context is None:
            raise RuntimeError("no certificate yet: call start()")
        return self._context

    def start(self) -> None:
        now = self._clock()
        self._kept = [
            c for c in pem_certificates(self._config.ca_bundle()) if c.not_valid_after_utc > now
        ][-(MAX_BUNDLE - 1) :]
        self._ca = new_authority(now, self._lifetime * CA_LIFETIMES)
        self._publish(now)
        self._use(issue(self._ca, self._names, now, self._lifetime))

    def check(self) -> None:
        """Rotate what is due, and put the bundle back if someone replaced it."""
        with self._lock:
            now = self._clock()
            assert self._ca is not None and self._serving is not None
            before = self._last_published  # what the API server had before this check
            left = self._ca.cert.not_valid_after_utc - now
            if self._next is None and left < self._lifetime * NEXT_CA_AT:
                # Published a whole rotation before it signs anything.
                self._next = new_authority(now, self._lifetime * CA_LIFETIMES)
            self._kept = [c for c in self._kept if c.not_valid_after_utc > now]
            self._publish(now)
            if now < self._serving.not_before + self._lifetime * 2 / 3 and left > timedelta(0):
                return
            if self._next is not None and self._next.pem in before:
                self._kept.append(self._ca.cert)  # until its last certificate expires
                self._ca, self._next = self._next, None
            self._use(issue(self._ca, self._names, now, self._lifetime))

    def bundle(self) -> bytes:
        """The CAs the API server is to trust: ours, the next, and the kept ones."""
        assert self._ca is not None
        certs = [*self._kept, self._ca.cert, *([self._next.cert] if self._next else [])]
        unique = {c.fingerprint(hashes.SHA256()): c for c in certs}
        return b"".join(
            c.public_bytes(serialization.Encoding.PEM) for c in list(unique.values())[-MAX_BUNDLE:]
        )

    def _publish(self, now: datetime) -> None:
        wanted = self.bundle()
        current = self._config.ca_bundle()
        if {c.fingerprint(hashes.SHA256()) for c in pem_certificates(current)} != {
            c.fingerprint(hashes.SHA256()) for c in pem_certificates(wanted)
        }:
            self._config.set_ca_bundle(wanted)
            log.info("pinning webhook: caBundle set (%d CAs)", len(pem_certificates(wanted)))
        self._last_published = wanted

    def _use(self, serving: Serving) -> None:
        self._context = server_context(serving.cert_pem, serving.key_pem)
        self._serving = serving
        log.info(
            "pinning webhook: serving certificate %x, valid until %s",
            serving.serial,
            serving.not_after.isoformat(timespec="seconds"),
        )
        if self._on_new is not None:
            self._on_new(serving)


class FileCertificates:
    """``tls.crt`` and ``tls.key`` in ``directory`` (cert-manager's Secret), loaded again
    when they change. A pair that does not load keeps the last good one (and says so)."""

    def __init__(self, directory: str, *, on_new: Callable[[], None] | None = None) -> None:
        self._dir = Path(directory)
        self._on_new = on_new
        self._stamp: tuple[bytes, bytes] | None = None
        self._context: ssl.SSLContext | None = None

    def context(self) -> ssl.SSLContext:
        if self._context is None:
            raise RuntimeError("no certificate loaded yet: call start()")
        return self._context

    def start(self) -> None:
        self.check()
        if self._context is None:
            raise FileNotFoundError(
                f"PINNING_TLS_DIR={self._dir}: no loadable tls.crt and tls.key (is the"
                " cert-manager Certificate ready, and its Secret mounted there?)"
            )

    def check(self) -> None:
        try:
            pair = ((self._dir / "tls.crt").read_bytes(), (self._dir / "tls.key").read_bytes())
        except OSError as exc:
            log.warning(
                "pinning webhook: reading %s: %s; keeping the last certificate", self._dir, exc
            )
            return
        if pair == self._stamp:
            return
        try:
            context = server_context(*pair)
        except (ssl.SSLError, ValueError) as exc:
            log.warning(
                "pinning webhook: %s does not load (%s); keeping the last one", self._dir, exc
            )
            return
        self._context, self._stamp = context, pair
        log.info("pinning webhook: serving certificate loaded from %s", self._dir)
        if self._on_new is not None:
            self._on_new()


class Certificates(Protocol):
    def start(self) -> None: ...

    def check(self) -> None: ...

    def context(self) -> ssl.SSLContext: ...


class CertificateRotator:
    """A thread that calls ``check`` every ``interval`` seconds; one failure is logged and
    survived (the API may be down), never the end of serving."""

    def __init__(self, certificates: Certificates, *, interval: float) -> None:
        self._certificates = certificates
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="autoroll-pinning-tls", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._certificates.check()
            except Exception as exc:
                log.warning("pinning webhook: certificate check failed: %s; trying again", exc)


__all__ = [
    "Authority",
    "CertificateRotator",
    "Certificates",
    "ControllerCertificates",
    "FileCertificates",
    "Serving",
    "WebhookConfigPort",
    "issue",
    "new_authority",
    "pem_certificates",
    "server_context",
]
