"""Where the Basic credentials may go for a Bearer token: the registry's own origin only."""

from __future__ import annotations

import pytest

from autoroll.registry.auth import realm_refusal
from tests.support.registry_fakes import HOST, REF, make, reason, response


@pytest.mark.parametrize(
    ("realm", "base", "refused"),
    [
        # The registry's own origin: the credentials may go.
        (f"https://{HOST}/v2/token", f"https://{HOST}", None),
        (f"https://{HOST}:443/v2/token", f"https://{HOST}", None),  # the default port, spelt
        (f"https://{HOST.upper()}/v2/token", f"https://{HOST}", None),  # hosts are caseless
        ("http://127.0.0.1:5000/token", "http://127.0.0.1:5000", None),
        ("http://[::1]:5000/token", "http://[::1]:5000", None),
        # Another port of the same host: whoever listens there is not the registry.
        (f"https://{HOST}:8443/v2/token", f"https://{HOST}", "only the registry's own origin"),
        ("http://127.0.0.1:5001/token", "http://127.0.0.1:5000", "127.0.0.1:5001"),
        ("http://127.0.0.1/token", "http://127.0.0.1:5000", "127.0.0.1:80"),
        # Another scheme: never a downgrade, and an upgrade is another origin.
        (f"http://{HOST}/v2/token", f"https://{HOST}", "downgrades https to http"),
        (f"https://{HOST}:80/token", f"http://{HOST}", "only the registry's own origin"),
        # Another host, or no usable realm at all.
        ("https://evil.example/token", f"https://{HOST}", "realm host 'evil.example'"),
        (f"https://{HOST}.evil.example/token", f"https://{HOST}", "realm host"),
        ("", f"https://{HOST}", "without a usable realm"),
        (f"ftp://{HOST}/token", f"https://{HOST}", "without a usable realm"),
        (f"https://{HOST}:99999/token", f"https://{HOST}", "unreadable realm"),
        (f"https://{HOST}:x/token", f"https://{HOST}", "unreadable realm"),
    ],
)
def test_realm_refusal(realm: str, base: str, refused: str | None) -> None:
    answer = realm_refusal(realm, base)
    if refused is None:
        assert answer is None
    else:
        assert answer is not None and refused in answer


def test_a_realm_on_another_port_of_the_registry_host_gets_no_credentials() -> None:
    def handle(method: str, url: str, kwargs: object) -> object:
        return response(
            401, {"WWW-Authenticate": f'Bearer realm="https://{HOST}:8443/token",service="s"'}
        )

    client, session = make(handle)  # type: ignore[arg-type]
    assert reason(client.resolve([REF])[REF]) == "bad-challenge"
    assert all(":8443" not in url for _, url, _ in session.sent)
