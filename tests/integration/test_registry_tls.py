"""A registry behind a private CA: the usual self-hosted Forgejo (issue 24).

A real ``docker-registry`` serves HTTPS with a certificate from a CA this test makes. Without
that CA the client's answer is ``Unknown("tls-untrusted")``, whose detail names the chart
value to set; given it (``REGISTRY_CA_FILE``, which the chart's ``caBundle`` sets), the tag
resolves and the default roots stay trusted beside it. ``autoroll plan`` shows both.
"""

from __future__ import annotations

import os
import ssl
from pathlib import Path

import pytest
import requests

from autoroll.core.images import TagRef
from autoroll.core.model import Digest, Unknown
from autoroll.registry import RegistryClient, registry_session
from autoroll.registry.tls import trust_context
from tests.support.autoroll_cli import run_autoroll
from tests.support.fake_kube import FaultyKubeApi, KubeApiServer
from tests.support.moved_tag import moved_tag
from tests.support.pki import PrivateCA
from tests.support.registry import ImagePusher, RegistryServer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def moved(tls_registry: RegistryServer) -> tuple[str, str]:
    """The tag ``app:latest`` moved from ``old`` to ``new``."""
    return moved_tag(ImagePusher(tls_registry), "ops/app")


def client(
    server: RegistryServer, session: requests.Session, ca_file: str | None
) -> RegistryClient:
    return RegistryClient(
        session=session,
        base_url=server.url,
        user=server.user,
        token=server.password,
        ca_file=ca_file,
    )


def test_without_the_ca_the_tag_is_unknown_as_tls_untrusted_naming_the_chart_value(
    tls_registry: RegistryServer, moved: tuple[str, str]
) -> None:
    ref = TagRef(tls_registry.host, "ops/app", "latest")
    session = registry_session(None)
    session.trust_env = False  # the runner's own REQUESTS_CA_BUNDLE must not decide
    [answer] = client(tls_registry, session, None).resolve([ref]).values()
    assert isinstance(answer, Unknown)
    assert answer.reason == "tls-untrusted"
    assert "caBundle" in answer.detail and "default roots only" in answer.detail
    assert "certificate verify failed" in answer.detail


def test_with_the_ca_file_the_tag_resolves_to_the_registry_digest(
    tls_registry: RegistryServer, pki: PrivateCA, moved: tuple[str, str]
) -> None:
    ref = TagRef(tls_registry.host, "ops/app", "latest")
    session = registry_session(str(pki.ca_cert))
    session.trust_env = False
    answers = client(tls_registry, session, str(pki.ca_cert)).resolve([ref])
    assert answers == {ref: Digest(moved[1])}


def test_the_ca_is_trusted_in_addition_to_the_default_roots(pki: PrivateCA) -> None:
    default = ssl.create_default_context()
    default.load_verify_locations(cafile=requests.utils.DEFAULT_CA_BUNDLE_PATH)
    with_ca = trust_context(str(pki.ca_cert))
    subjects = [str(cert["subject"]) for cert in with_ca.get_ca_certs()]
    assert any("autoroll test CA" in subject for subject in subjects)
    assert len(with_ca.get_ca_certs()) == len(default.get_ca_certs()) + 1


def test_autoroll_plan_says_what_to_set_and_rolls_once_the_ca_is_given(
    tls_registry: RegistryServer, pki: PrivateCA, moved: tuple[str, str], tmp_path: Path
) -> None:
    old, new = moved
    api = FaultyKubeApi(image=f"{tls_registry.host}/ops/app:latest", running=old, target=new)
    with KubeApiServer(api) as kube:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp_path),
            "KUBECONFIG": str(kube.write_kubeconfig(tmp_path / "kubeconfig")),
            "FORGEJO_HOST": tls_registry.host,
            "FORGEJO_USER": tls_registry.user,
            "FORGEJO_TOKEN": tls_registry.password,
        }
        untrusted = run_autoroll("plan", env=env)
        assert untrusted.returncode == 0, untrusted.stderr
        assert "tls-untrusted" in untrusted.stdout
        assert "caBundle" in untrusted.stdout
        assert "would delete" not in untrusted.stdout

        trusted = run_autoroll("plan", env={**env, "REGISTRY_CA_FILE": str(pki.ca_cert)})
        assert trusted.returncode == 0, trusted.stderr
        rows = trusted.stdout.splitlines()
        [row] = [line for line in rows if line.startswith("shop/deployment/web")]
        assert "stale → would delete pod web-1" in row
    assert api.deletes == []


@pytest.mark.parametrize(
    ("content", "expected"),
    [(None, "no such file"), ("not a certificate\n", "cannot be read as PEM CA certificates")],
)
def test_a_ca_file_that_does_not_load_stops_the_start_naming_the_variable(
    tmp_path: Path, content: str | None, expected: str
) -> None:
    path = tmp_path / "ca.crt"
    if content is not None:
        path.write_text(content)
    result = run_autoroll(
        "plan",
        env={
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp_path),
            "FORGEJO_HOST": "forgejo.example.org",
            "FORGEJO_USER": "bot",
            "FORGEJO_TOKEN": "t",
            "REGISTRY_CA_FILE": str(path),
        },
    )
    assert result.returncode == 2
    assert "REGISTRY_CA_FILE" in result.stderr and expected in result.stderr
