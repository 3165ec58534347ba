"""The PINNING* settings (autoroll.config.pinning): off by default, what pinning needs when
on, and every bad value named with its variable."""

from __future__ import annotations

import pytest

from autoroll.config import Config
from autoroll.config.errors import ConfigError
from autoroll.config.pinning import PinningTLS
from tests.support.config_env import BASE, problems

ON = {
    **BASE,
    "PINNING": "true",
    "PINNING_WEBHOOK_CONFIGURATION": "rel-autoroll-pinning",
    "PINNING_DNS_NAMES": "rel-autoroll.autoroll.svc,rel-autoroll.autoroll.svc.cluster.local",
}


def test_pinning_is_off_by_default() -> None:
    assert Config.from_env(BASE).pinning is None


def test_pinning_on_with_the_controller_s_certificate() -> None:
    pinning = Config.from_env(ON).pinning
    assert pinning is not None
    assert (pinning.addr, pinning.tls, pinning.cert_seconds) == (
        "0.0.0.0:8443",
        PinningTLS.CONTROLLER,
        7 * 86400,
    )
    assert pinning.dns_names == (
        "rel-autoroll.autoroll.svc",
        "rel-autoroll.autoroll.svc.cluster.local",
    )
    assert Config.from_env(ON).redacted()["PINNING_WEBHOOK_CONFIGURATION"] == "rel-autoroll-pinning"


def test_cert_manager_s_files_need_no_configuration_name() -> None:
    env = {**BASE, "PINNING": "true", "PINNING_TLS": "files", "PINNING_TLS_DIR": "/tls"}
    pinning = Config.from_env(env).pinning
    assert pinning is not None and (pinning.tls, pinning.tls_dir) == (PinningTLS.FILES, "/tls")


def test_the_controller_s_certificate_needs_the_configuration_and_the_names() -> None:
    found = problems({**BASE, "PINNING": "true"})
    assert "caBundle" in found["PINNING_WEBHOOK_CONFIGURATION"]
    assert "<service>.<namespace>.svc" in found["PINNING_DNS_NAMES"]


@pytest.mark.parametrize(
    ("name", "value", "fragment"),
    [
        ("PINNING_TLS", "vault", "controller"),
        ("PINNING_TLS_DIR", "tls", "absolute"),
        ("PINNING_DNS_NAMES", "Not_A_Name", "DNS names"),
        ("PINNING_CERT_SECONDS", "10", "60 to"),
        ("PINNING_ADDR", "8443", "host:port"),
        ("PINNING_WEBHOOK_CONFIGURATION", "Bad Name", "object name"),
        ("PINNING", "maybe", "true or false"),
    ],
)
def test_a_bad_value_is_named_even_with_pinning_off(name: str, value: str, fragment: str) -> None:
    assert fragment in problems({**BASE, name: value})[name]


def test_the_webhook_needs_a_port_of_its_own() -> None:
    with pytest.raises(ConfigError, match="PINNING_ADDR"):
        Config.from_env({**ON, "PINNING_ADDR": "0.0.0.0:8081"})
