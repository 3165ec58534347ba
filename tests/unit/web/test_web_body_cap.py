"""The webhook's body cap: one MiB is read, more is 413 before reading it all (declared or
chunked), an unsigned request is refused before its body is read, short reads are read whole.
"""

from __future__ import annotations

import io

import pytest
from flask import Flask
from flask.testing import FlaskClient

from autoroll.edge.web import MAX_BODY_BYTES
from autoroll.instruments.metrics import Metrics
from tests.support.endless_body import Endless
from tests.support.web_app import CountingNudge, outcome, sign


def test_a_body_of_exactly_one_mib_is_read(client: FlaskClient, nudge: CountingNudge) -> None:
    body = b"a" * MAX_BODY_BYTES
    response = client.post("/webhook", data=body, headers={"X-Forgejo-Signature": sign(body)})
    assert response.status_code == 202
    assert nudge.count == 1


def call_raw(app: Flask, stream: io.RawIOBase, **extra: str) -> str:
    """Drive the WSGI app with a hand-made input stream; return the status line."""
    environ: dict[str, object] = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/webhook",
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": stream,
        "HTTP_X_FORGEJO_SIGNATURE": "00" * 32,
        **extra,
    }
    statuses: list[str] = []

    def start_response(status: str, headers: object, exc_info: object = None) -> None:
        statuses.append(status)

    b"".join(app.wsgi_app(environ, start_response))  # type: ignore[arg-type]
    return statuses[0]


def test_a_declared_length_over_one_mib_is_413_before_reading(
    app: Flask, nudge: CountingNudge, metrics: Metrics
) -> None:
    stream = Endless()
    status = call_raw(app, stream, CONTENT_LENGTH=str(MAX_BODY_BYTES + 1))
    assert status.startswith("413")
    assert stream.served == 0
    assert nudge.count == 0
    assert outcome(metrics, "too-large") == 1


def test_a_chunked_body_over_one_mib_is_413_without_reading_it_all(
    app: Flask, nudge: CountingNudge
) -> None:
    stream = Endless()
    # gunicorn marks de-chunked bodies as terminated by the server.
    status = call_raw(app, stream, **{"wsgi.input_terminated": "1"})
    assert status.startswith("413")
    assert nudge.count == 0
    assert stream.served <= MAX_BODY_BYTES + 64 * 1024


@pytest.mark.parametrize(
    "headers",
    [
        {"HTTP_X_FORGEJO_SIGNATURE": ""},  # no header carries a signature
        {"HTTP_X_FORGEJO_SIGNATURE": "", "HTTP_X_HUB_SIGNATURE_256": "sha256="},
        {"HTTP_X_FORGEJO_SIGNATURE": "", "CONTENT_LENGTH": str(MAX_BODY_BYTES)},
        {"HTTP_X_FORGEJO_SIGNATURE": "", "wsgi.input_terminated": "1"},  # chunked
    ],
)
def test_an_unsigned_request_is_403_before_a_byte_of_its_body_is_read(
    app: Flask, nudge: CountingNudge, metrics: Metrics, headers: dict[str, str]
) -> None:
    stream = Endless()
    status = call_raw(app, stream, **headers)
    assert status.startswith("403")
    assert stream.served == 0
    assert nudge.count == 0
    assert outcome(metrics, "missing-signature") == 1


def test_a_body_arriving_in_short_reads_is_read_whole(app: Flask, nudge: CountingNudge) -> None:
    body = b"b" * 100_000

    class Trickle(io.RawIOBase):
        def __init__(self) -> None:
            self.buffer = io.BytesIO(body)

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
            chunk = self.buffer.read(min(len(buffer), 1000))
            buffer[: len(chunk)] = chunk
            return len(chunk)

    status = call_raw(
        app, Trickle(), CONTENT_LENGTH=str(len(body)), HTTP_X_FORGEJO_SIGNATURE=sign(body)
    )
    assert status.startswith("202")
    assert nudge.count == 1
