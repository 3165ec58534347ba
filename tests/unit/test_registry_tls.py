"""What the registry session says about itself: proxies shown without credentials, and a
refused certificate told apart from other TLS failures."""

from __future__ import annotations

import pytest
import requests

from autoroll.registry.tls import is_untrusted, proxies_in_use, untrusted_message


def test_proxies_are_shown_without_the_credentials_in_their_url() -> None:
    env = {"HTTPS_PROXY": "http://bob:hunter2@proxy.corp:3128", "no_proxy": "10.0.0.0/8,.svc"}
    shown = proxies_in_use(env)
    assert shown == "HTTPS_PROXY=http://<redacted>@proxy.corp:3128 NO_PROXY=10.0.0.0/8,.svc"
    assert "hunter2" not in shown


def test_no_proxy_variables_say_none() -> None:
    assert proxies_in_use({}) == "none"


@pytest.mark.parametrize(
    ("error", "untrusted"),
    [
        (
            requests.exceptions.SSLError(
                "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed"
                " certificate in chain (_ssl.c:1006)"
            ),
            True,
        ),
        (requests.exceptions.SSLError("[SSL: WRONG_VERSION_NUMBER] wrong version number"), False),
        (requests.ConnectionError("CERTIFICATE_VERIFY_FAILED"), False),
    ],
)
def test_only_a_failed_verification_is_untrusted(error: Exception, untrusted: bool) -> None:
    assert is_untrusted(error) is untrusted


def test_the_message_names_the_cause_what_is_trusted_and_the_chart_value() -> None:
    error = requests.exceptions.SSLError(
        "Max retries exceeded (Caused by SSLError(SSLCertVerificationError(1, '[SSL: "
        "CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer "
        "certificate (_ssl.c:1006)')))"
    )
    text = untrusted_message(error, ca_file="/etc/autoroll/ca/ca.crt")
    assert "certificate verify failed: unable to get local issuer certificate" in text
    assert "REGISTRY_CA_FILE=/etc/autoroll/ca/ca.crt" in text
    assert "caBundle" in text
