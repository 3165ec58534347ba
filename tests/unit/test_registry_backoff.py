"""``Retry-After`` parsing and the registry client's quiet period, on an injected clock."""

from __future__ import annotations

import io
from email.utils import formatdate
from typing import Any

import pytest
import requests

from autoroll.core.images import TagRef
from autoroll.core.model import Digest, Unknown
from autoroll.registry import Limits, RegistryClient, retry_after_seconds

NOW = 1_780_000_000.0  # some wall-clock second
REF = TagRef("registry.example", "team/app", "latest")
D1 = "sha256:" + "1" * 64


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ("", None),
        ("120", 120.0),
        (" 7 ", 7.0),
        ("-5", None),
        ("1.5", None),
        ("soon", None),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),  # in the past: no wait
    ],
)
def test_retry_after_values(value: str | None, expected: float | None) -> None:
    assert retry_after_seconds(value, now=NOW) == expected


def test_retry_after_as_an_http_date_counts_from_now() -> None:
    assert retry_after_seconds(formatdate(NOW + 100, usegmt=True), now=NOW) == 100.0


class Scripted(requests.Session):
    """Answers each request with the next (status, headers); counts requests."""

    def __init__(self, *answers: tuple[int, dict[str, str]]) -> None:
        super().__init__()
        self.answers = list(answers)
        self.sent = 0

    def request(self, method: str | bytes, url: str | bytes, *a: Any, **k: Any) -> Any:
        self.sent += 1
        status, headers = self.answers.pop(0)
        response = requests.Response()
        response.status_code = status
        response.headers.update(headers)
        response.raw = io.BytesIO(b"")
        response.url = str(url)
        return response


def client(session: Scripted, now: list[float]) -> RegistryClient:
    return RegistryClient(
        session=session,
        base_url="https://registry.example",
        user="robot",
        token="s3cret",
        limits=Limits(lookup_concurrency=1),  # scripted answers: one request at a time
        clock=lambda: now[0],
        wall_clock=lambda: NOW + now[0],
    )


def reason(answer: object) -> str:
    assert isinstance(answer, Unknown), answer
    return answer.reason


@pytest.mark.parametrize(
    ("status", "retry_after", "quiet"),
    [
        (429, "30", 30.0),
        (429, None, 10.0),  # default_backoff_seconds
        (429, "garbage", 10.0),
        (429, "99999", 300.0),  # capped
        (503, "20", 20.0),
    ],
)
def test_the_quiet_period_sends_nothing_then_ends(
    status: int, retry_after: str | None, quiet: float
) -> None:
    headers = {} if retry_after is None else {"Retry-After": retry_after}
    session = Scripted((status, headers), (200, {"Docker-Content-Digest": D1}))
    now = [0.0]
    registry = client(session, now)
    assert registry.resolve([REF])[REF] != Digest(D1)
    now[0] = quiet - 0.5
    assert reason(registry.resolve([REF])[REF]) == "backoff"
    assert session.sent == 1
    now[0] = quiet + 0.5
    assert registry.resolve([REF]) == {REF: Digest(D1)}
    assert session.sent == 2


def test_a_503_without_retry_after_starts_no_quiet_period() -> None:
    session = Scripted((503, {}), (200, {"Docker-Content-Digest": D1}))
    registry = client(session, [0.0])
    assert reason(registry.resolve([REF])[REF]) == "http-5xx"
    assert registry.resolve([REF]) == {REF: Digest(D1)}


def test_one_429_silences_the_rest_of_the_pass() -> None:
    other = TagRef("registry.example", "team/other", "latest")
    session = Scripted((429, {"Retry-After": "60"}))
    registry = client(session, [0.0])
    answers = registry.resolve([REF, other])
    assert sorted(reason(a) for a in answers.values()) == ["backoff", "rate-limited"]
    assert session.sent == 1
