"""How a receiver tells a delivery from its sender apart from anything else: ``receivers.auth``."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from autoroll.core.receivers.auth import Auth, hmac_valid, presented, token_valid
from autoroll.core.receivers.sources import RECEIVERS, Source

SECRET = "0123456789abcdef-secret"
BODY = b'{"image": "registry.example.org/team/app:latest"}'


def signature(body: bytes = BODY, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@pytest.mark.parametrize(
    ("auth", "value", "expected"),
    [
        # Nothing presented: unsigned, not wrongly signed.
        (Auth.HMAC, None, None),
        (Auth.HMAC, "", None),
        (Auth.HMAC, "sha256=", None),
        (Auth.HMAC, "  sha256=  ", None),
        (Auth.HEADER, None, None),
        (Auth.HEADER, "Bearer", None),
        (Auth.HEADER, "Bearer   ", None),
        (Auth.PATH, "", None),
        # Something presented.
        (Auth.HMAC, "sha256=abc", "sha256=abc"),
        (Auth.HMAC, "SHA256=abc", "SHA256=abc"),
        (Auth.HMAC, "sha1=abc", "sha1=abc"),  # another algorithm: refused as a bad signature
        (Auth.HEADER, "Bearer tok", "tok"),
        (Auth.HEADER, "bearer tok", "tok"),
        (Auth.HEADER, "tok", "tok"),  # GitLab's documented example sends the token alone
        (Auth.HEADER, "Basic dXNlcjpwYXNz", "Basic dXNlcjpwYXNz"),
        (Auth.PATH, "tok", "tok"),
    ],
)
def test_what_a_request_presents(auth: Auth, value: str | None, expected: str | None) -> None:
    assert presented(auth, value) == expected


@pytest.mark.parametrize(
    ("credential", "valid"),
    [
        (signature(), True),
        (signature().upper().replace("SHA256=", "sha256="), True),  # hex in capitals
        ("SHA256=" + signature()[7:], True),
        (signature(secret="another-secret-0123"), False),
        (signature(body=BODY + b" "), False),  # a byte more: another body
        (signature()[:-1], False),
        ("sha1=" + hashlib.sha1(BODY).hexdigest(), False),  # the refused algorithm
        ("sha512=" + signature()[7:], False),
        ("sha256=zz" + signature()[9:], False),
        ("sha256=ünïcode", False),
    ],
)
def test_an_hmac_signature_is_the_sha256_of_the_raw_body(credential: str, valid: bool) -> None:
    assert hmac_valid(SECRET.encode(), BODY, credential) is valid


@pytest.mark.parametrize(
    ("credential", "valid"),
    [
        (SECRET, True),
        (SECRET.upper(), False),  # tokens are case-sensitive
        (SECRET + "x", False),
        (SECRET[:-1], False),
        ("", False),
        ("tök", False),
    ],
)
def test_a_token_is_the_secret_exactly(credential: str, valid: bool) -> None:
    assert token_valid(SECRET, credential) is valid


def test_every_source_but_forgejo_has_a_receiver_with_its_own_variable() -> None:
    assert set(RECEIVERS) == set(Source) - {Source.FORGEJO}
    variables = [r.variable for r in RECEIVERS.values()]
    assert len(set(variables)) == len(variables)
    for receiver in RECEIVERS.values():
        assert receiver.source == receiver.route.split("/")[2]
        # A scheme that reads a header names it; a path token has none.
        assert bool(receiver.header) is (receiver.auth is not Auth.PATH)


def test_only_the_sources_that_cannot_sign_carry_their_token_in_the_path() -> None:
    path = {s for s, r in RECEIVERS.items() if r.auth is Auth.PATH}
    assert path == {Source.DOCKERHUB, Source.QUAY}
    assert RECEIVERS[Source.DOCKERHUB].route == "/webhook/dockerhub/<token>"
