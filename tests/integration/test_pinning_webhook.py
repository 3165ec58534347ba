"""The pinning webhook's listener over real TLS on 127.0.0.1: AdmissionReviews answered from
the view, and the certificate the controller makes, published and rotated, checked by a
client that trusts only the published caBundle (as the API server does).

The rotation clock is a fake one that starts hours in the past and is moved forward, so
every certificate made is valid now for the real TLS handshakes (Python's ssl checks dates
against the real clock). The CA's own rotation lies days ahead of that, so it is checked
by signature (each serving certificate is signed by a CA the bundle held before it was
served), not by handshakes.
"""

from __future__ import annotations

import base64
import http.client
import json
import ssl
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from prometheus_client import CollectorRegistry

from autoroll.core.images import TagRef
from autoroll.core.model import Digest
from autoroll.edge.admission import AdmissionServer
from autoroll.edge.webhook_pki import (
    CA_LIFETIMES,
    ControllerCertificates,
    FileCertificates,
    issue,
    new_authority,
    pem_certificates,
)
from autoroll.instruments.pinning_metrics import PinningMetrics

HOST = "forgejo.example"
APP = TagRef(HOST, "team/app", "latest")
OLD = Digest("sha256:" + "0" * 64)
NAMES = ("autoroll-pinning.autoroll.svc", "autoroll-pinning.autoroll.svc.cluster.local")
LIFETIME = timedelta(hours=6)


class Config:
    """The MutatingWebhookConfiguration's caBundle, as the API server would read it."""

    def __init__(self, bundle: bytes = b"") -> None:
        self.bundle = bundle
        self.writes: list[bytes] = []

    def ca_bundle(self) -> bytes:
        return self.bundle

    def set_ca_bundle(self, pem: bytes) -> None:
        self.bundle = pem
        self.writes.append(pem)


class View:
    def approved(self, key: str, ref: TagRef) -> Digest | None:
        return OLD if (key, ref) == ("shop/deployment/web", APP) else None

    def knows(self, key: str) -> bool:
        return key == "shop/deployment/web"


class Clock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


def review(uid: str = "u-1", *, operation: str = "CREATE", kind: str = "Pod") -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": kind},
            "operation": operation,
            "namespace": "shop",
            "object": {
                "metadata": {
                    "generateName": "web-5d8f7-",
                    "labels": {"pod-template-hash": "5d8f7"},
                    "ownerReferences": [
                        {
                            "apiVersion": "apps/v1",
                            "kind": "ReplicaSet",
                            "name": "web-5d8f7",
                            "controller": True,
                        }
                    ],
                },
                "spec": {"containers": [{"name": "app", "image": f"{HOST}/team/app:latest"}]},
            },
        },
    }


class _ByServiceName(http.client.HTTPSConnection):
    """Connects to 127.0.0.1 but checks the certificate for the Service's DNS name."""

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        self.sock = self._context.wrap_socket(self.sock, server_hostname=NAMES[0])  # type: ignore[attr-defined]


def post(port: int, bundle: bytes, body: bytes) -> tuple[int, dict[str, Any], bytes]:
    """POST as the API server does: trusting only ``bundle``, by the Service's name."""
    context = ssl.create_default_context(cadata=bundle.decode())
    connection = _ByServiceName("127.0.0.1", port, context=context, timeout=5)
    try:
        connection.request("POST", "/pin", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        served = connection.sock.getpeercert(binary_form=True)
        assert isinstance(served, bytes)
        return response.status, json.loads(response.read()), served
    finally:
        connection.close()


@pytest.fixture
def metrics() -> PinningMetrics:
    return PinningMetrics(CollectorRegistry())


@pytest.fixture
def started(metrics: PinningMetrics) -> Iterator[tuple[ControllerCertificates, Config, Clock, int]]:
    clock = Clock(datetime.now(UTC) - timedelta(hours=5))
    config = Config()
    certificates = ControllerCertificates(
        dns_names=NAMES, lifetime=LIFETIME, config=config, clock=clock
    )
    certificates.start()
    server = AdmissionServer(
        "127.0.0.1",
        0,
        context=certificates.context,
        approvals=View(),
        registries={HOST},
        metrics=metrics,
    )
    server.start()
    try:
        yield certificates, config, clock, server.port
    finally:
        server.stop()


def test_a_pod_of_an_enrolled_workload_is_answered_with_its_pin(
    started: tuple[ControllerCertificates, Config, Clock, int], metrics: PinningMetrics
) -> None:
    _, config, _, port = started
    status, answer, _ = post(port, config.bundle, json.dumps(review()).encode())
    assert status == 200
    response = answer["response"]
    assert (response["uid"], response["allowed"], response["patchType"]) == (
        "u-1",
        True,
        "JSONPatch",
    )
    assert json.loads(base64.b64decode(response["patch"])) == [
        {
            "op": "replace",
            "path": "/spec/containers/0/image",
            "value": f"{HOST}/team/app:latest@{OLD}",
        }
    ]
    assert metrics.admissions.labels(result="pinned")._value.get() == 1
    assert metrics.admission_seconds._sum.get() > 0


@pytest.mark.parametrize(
    ("body", "status", "result"),
    [
        (json.dumps(review(operation="UPDATE")).encode(), 200, "not-a-pod"),
        (json.dumps(review(kind="Service")).encode(), 200, "not-a-pod"),
        (b"{not json", 400, "bad-request"),
        (json.dumps({"kind": "AdmissionReview"}).encode(), 400, "bad-request"),
        (b"[" * 10_000 + b"]" * 10_000, 400, "bad-request"),  # deep: refused, never a crash
    ],
)
def test_anything_else_is_let_in_unchanged_or_refused_as_not_a_review(
    started: tuple[ControllerCertificates, Config, Clock, int],
    metrics: PinningMetrics,
    body: bytes,
    status: int,
    result: str,
) -> None:
    _, config, _, port = started
    got, answer, _ = post(port, config.bundle, body)
    assert got == status
    if status == 200:
        assert answer["response"] == {"uid": "u-1", "allowed": True}
    assert metrics.admissions.labels(result=result)._value.get() == 1


def test_the_serving_certificate_rotates_and_every_connection_verifies_against_the_bundle(
    started: tuple[ControllerCertificates, Config, Clock, int],
) -> None:
    certificates, config, clock, port = started
    body = json.dumps(review()).encode()
    _, _, first = post(port, config.bundle, body)
    clock.at += LIFETIME / 2  # not due yet
    certificates.check()
    assert post(port, config.bundle, body)[2] == first
    clock.at += LIFETIME / 4  # past two thirds: a new one, same CA
    certificates.check()
    status, _, second = post(port, config.bundle, body)
    assert status == 200 and second != first
    assert x509.load_der_x509_certificate(second).not_valid_after_utc > clock.at
    assert len(config.writes) == 1  # the CA did not change: the bundle was not written again


def test_the_ca_rotates_a_whole_rotation_after_its_successor_is_published() -> None:
    clock = Clock(datetime(2026, 1, 1, tzinfo=UTC))
    config = Config()
    certificates = ControllerCertificates(
        dns_names=NAMES, lifetime=LIFETIME, config=config, clock=clock
    )
    certificates.start()
    trusted_when_served: list[tuple[x509.Certificate, list[x509.Certificate]]] = []
    for _ in range(CA_LIFETIMES * 3 * 2):  # three CA lifetimes, a check every half rotation
        before = pem_certificates(config.bundle)
        clock.at += LIFETIME / 3
        certificates.check()
        served = x509.load_pem_x509_certificate(certificates.serving.cert_pem)
        trusted_when_served.append((served, before))
        assert served.not_valid_after_utc > clock.at
        assert 1 <= len(pem_certificates(config.bundle)) <= 4
    issuers = {served.issuer.rfc4514_string() for served, _ in trusted_when_served}
    assert len({s.serial_number for s, _ in trusted_when_served}) > CA_LIFETIMES
    authorities = {c.serial_number for _, b in trusted_when_served for c in b}
    assert len(authorities) >= 3, issuers  # the CA itself was replaced, twice at least
    for served, bundle in trusted_when_served:
        # Signed by a CA the API server had been given before this certificate was served.
        assert any(_signed_by(served, ca) for ca in bundle)


def _signed_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, Exception):
        return False
    return True


def test_a_valid_ca_already_in_the_bundle_is_kept_beside_the_new_one() -> None:
    now = datetime.now(UTC)
    previous = new_authority(now, timedelta(days=10)).pem
    expired = new_authority(now - timedelta(days=20), timedelta(days=10)).pem
    config = Config(previous + expired)
    ControllerCertificates(dns_names=NAMES, lifetime=LIFETIME, config=config).start()
    kept = pem_certificates(config.bundle)
    assert len(kept) == 2
    assert pem_certificates(previous)[0] in kept


def test_a_certificate_from_files_is_loaded_again_when_the_secret_changes(
    tmp_path: Path, metrics: PinningMetrics
) -> None:
    now = datetime.now(UTC)
    authority = new_authority(now, timedelta(days=1))
    bundle = authority.pem

    def write() -> None:
        serving = issue(authority, NAMES, now, timedelta(hours=1))
        (tmp_path / "tls.crt").write_bytes(serving.cert_pem)
        (tmp_path / "tls.key").write_bytes(serving.key_pem)

    write()
    files = FileCertificates(str(tmp_path), on_new=metrics.certificate_rotations.inc)
    files.start()
    server = AdmissionServer(
        "127.0.0.1", 0, context=files.context, approvals=View(), registries={HOST}
    )
    server.start()
    try:
        body = json.dumps(review()).encode()
        first = post(server.port, bundle, body)[2]
        files.check()
        assert post(server.port, bundle, body)[2] == first  # unchanged: not loaded again
        write()  # cert-manager renewed it; the kubelet updated the mount
        (tmp_path / "tls.key").write_bytes(b"half written")
        files.check()  # a pair that does not load keeps the last good one
        assert post(server.port, bundle, body)[2] == first
        write()
        files.check()
        assert post(server.port, bundle, body)[2] != first
        assert metrics.certificate_rotations._value.get() == 2
    finally:
        server.stop()


def test_no_certificate_files_is_said_at_start(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="PINNING_TLS_DIR"):
        FileCertificates(str(tmp_path)).start()
