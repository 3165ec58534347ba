"""The registries' receivers through Flask's test client: each source's documented delivery,
signed or tokened as its sender does it, accepted; the same delivery unsigned, wrongly signed,
with another source's token or at the wrong path, refused with nothing nudged."""

from __future__ import annotations

import hashlib
import hmac
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from flask.testing import FlaskClient
from prometheus_client import CollectorRegistry

from autoroll.controller.worker import Health
from autoroll.core.receivers.sources import RECEIVERS, Source
from autoroll.core.scope import FULL, ImageTag, Scope
from autoroll.edge.receivers import Receiving
from autoroll.edge.web import MAX_BODY_BYTES, create_app
from autoroll.instruments.metrics import Metrics

DATA = Path(__file__).parent / "data" / "receivers"
LIVE_HOST = "127.0.0.1:25397"  # the registry the live deliveries came from
#: Every source its own secret, so a token used at another source's route is a wrong one.
SECRETS = {source: f"{source}-secret-0123456789abcdef" for source in RECEIVERS}
HOSTS = (LIVE_HOST, "hub.harbor.com", "ghcr.io", "docker.io", "quay.io", "demo.azurecr.io")


def fixture(name: str) -> bytes:
    return (DATA / name).read_bytes()


def sign(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class Nudges(list[Scope]):
    def __call__(self, scope: Scope) -> None:
        self.append(scope)


@dataclass
class Edge:
    client: FlaskClient
    nudges: Nudges
    metrics: Metrics

    def outcome(self, source: Source, outcome: str) -> float:
        labels = {"source": str(source), "outcome": outcome}
        return (
            self.metrics.registry.get_sample_value("autoroll_webhook_requests_total", labels) or 0
        )


def edge(
    secrets: dict[Source, str] | None = None,
    *,
    hosts: tuple[str, ...] = HOSTS,
    default_host: str | None = LIVE_HOST,
) -> Edge:
    """The app with the receivers of ``secrets`` on (every one by default), reading the
    registries ``hosts``."""
    metrics, nudges = Metrics(CollectorRegistry()), Nudges()
    app = create_app(
        webhook_secret="forgejo-secret-0123456789",
        nudge=nudges,
        metrics=metrics,
        live=lambda: Health(True, ""),
        ready=lambda: Health(True, ""),
        receiving=Receiving(SECRETS if secrets is None else secrets, hosts, default_host),
    )
    return Edge(app.test_client(), nudges, metrics)


@pytest.fixture
def on() -> Edge:
    return edge()


@dataclass(frozen=True)
class Delivery:
    """One source's delivery as its sender makes it: the body, its headers and its URL,
    authenticated with ``secret``."""

    source: Source
    body: bytes
    headers: Callable[[bytes, str], dict[str, str]]
    scope: Scope

    def url(self, secret: str) -> str:
        if self.source in (Source.DOCKERHUB, Source.QUAY):
            return f"/webhook/{self.source}/{secret}"
        return f"/webhook/{self.source}"

    def send(self, client: FlaskClient, secret: str | None = None) -> tuple[int, str]:
        secret = SECRETS[self.source] if secret is None else secret
        response = client.post(
            self.url(secret), data=self.body, headers=self.headers(self.body, secret)
        )
        return response.status_code, response.get_data(as_text=True)


def bearer(body: bytes, secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}


def bare_token(body: bytes, secret: str) -> dict[str, str]:
    # GitLab's documented endpoint configures the token alone: Authorization: <token>.
    return {"Authorization": secret, "Content-Type": "application/json"}


def github(body: bytes, secret: str) -> dict[str, str]:
    return {"X-GitHub-Event": "package", "X-Hub-Signature-256": sign(body, secret)}


def generic(body: bytes, secret: str) -> dict[str, str]:
    return {"X-Signature": sign(body, secret), "Content-Type": "application/json"}


def cloud_batch(body: bytes, secret: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {secret}",
        "Content-Type": "application/cloudevents-batch+json",
    }


def cloud(body: bytes, secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}", "Content-Type": "application/cloudevents+json"}


def plain(body: bytes, secret: str) -> dict[str, str]:
    return {"Content-Type": "application/json"}


def ghcr_push() -> bytes:
    document = json.loads(fixture("github-octokit-package-published-docker.json"))
    document["package"]["package_version"]["container_metadata"]["tag"]["name"] = "latest"
    return json.dumps(document).encode()


def tags(*pairs: str) -> Scope:
    return Scope.of(ImageTag(*pair.rsplit(":", 1)) for pair in pairs)


DELIVERIES = [
    Delivery(
        Source.DISTRIBUTION,
        fixture("distribution-2.8.2-push-tag.json"),
        bearer,
        tags("team/app:latest"),
    ),
    Delivery(
        Source.GITLAB,
        fixture("distribution-2.8.2-push-index-tag.json"),
        bare_token,
        tags("team/multi:v1"),
    ),
    Delivery(
        Source.HARBOR,
        fixture("harbor-docs-push-artifact.json"),
        bearer,
        tags("test-webhook/debian:latest"),
    ),
    Delivery(Source.GITHUB, ghcr_push(), github, tags("codertocat/hello-world-npm:latest")),
    Delivery(
        Source.DOCKERHUB,
        fixture("dockerhub-docs-push.json"),
        plain,
        tags("svendowideit/testhook:latest"),
    ),
    Delivery(Source.QUAY, fixture("quay-docs-repo-push.json"), plain, tags("dgangaia/test:latest")),
    Delivery(
        Source.GENERIC,
        b'{"image": "127.0.0.1:25397/team/app:v2"}',
        generic,
        tags("team/app:v2"),
    ),
    Delivery(
        Source.CLOUDEVENTS,
        fixture("acr-eventgrid-imagepushed.json"),
        cloud_batch,
        tags("aci-helloworld:v1"),
    ),
]
BY_SOURCE = {d.source: d for d in DELIVERIES}
IDS = [str(d.source) for d in DELIVERIES]


def test_every_receiver_has_a_delivery_here() -> None:
    assert set(BY_SOURCE) == set(RECEIVERS)


@pytest.mark.parametrize("delivery", DELIVERIES, ids=IDS)
def test_a_documented_delivery_authenticated_as_its_sender_does_it_starts_a_targeted_pass(
    on: Edge, delivery: Delivery
) -> None:
    status, text = delivery.send(on.client)
    assert (status, text) == (202, f"targeted pass requested for {delivery.scope}\n")
    assert on.nudges == [delivery.scope]
    assert on.outcome(delivery.source, "targeted") == 1


@pytest.mark.parametrize("delivery", DELIVERIES, ids=IDS)
def test_a_wrong_secret_is_refused_and_nothing_is_nudged(on: Edge, delivery: Delivery) -> None:
    status, _ = delivery.send(on.client, secret="not-the-secret-0123456789abcdef")
    assert status == 403
    assert on.nudges == []
    assert on.outcome(delivery.source, "bad-signature") == 1


@pytest.mark.parametrize("delivery", DELIVERIES, ids=IDS)
def test_another_sources_secret_is_a_wrong_one(on: Edge, delivery: Delivery) -> None:
    other = next(s for s in RECEIVERS if s is not delivery.source)
    status, _ = delivery.send(on.client, secret=SECRETS[other])
    assert status == 403 and on.nudges == []


@pytest.mark.parametrize(
    "delivery", [d for d in DELIVERIES if d.source not in (Source.DOCKERHUB, Source.QUAY)], ids=str
)
def test_a_delivery_without_its_credential_is_refused_as_unsigned(
    on: Edge, delivery: Delivery
) -> None:
    response = on.client.post(
        f"/webhook/{delivery.source}", data=delivery.body, headers=plain(b"", "")
    )
    assert response.status_code == 403
    assert response.get_data(as_text=True).startswith("missing ")
    assert on.outcome(delivery.source, "missing-signature") == 1
    assert on.nudges == []


@pytest.mark.parametrize("source", [Source.DOCKERHUB, Source.QUAY])
def test_a_path_token_source_without_its_token_in_the_path_is_not_found(
    on: Edge, source: Source
) -> None:
    delivery = BY_SOURCE[source]
    # The token where a header would carry it is no token: this route takes it in the path.
    response = on.client.post(
        f"/webhook/{source}",
        data=delivery.body,
        headers={"Authorization": f"Bearer {SECRETS[source]}"},
    )
    assert response.status_code == 404
    assert f"/webhook/{source}/<token>" in response.get_data(as_text=True)
    assert on.nudges == []


@pytest.mark.parametrize("source", [Source.HARBOR, Source.GITHUB, Source.DISTRIBUTION])
def test_a_token_in_the_path_of_a_source_that_takes_a_header_is_not_found(
    on: Edge, source: Source
) -> None:
    delivery = BY_SOURCE[source]
    response = on.client.post(
        f"/webhook/{source}/{SECRETS[source]}",
        data=delivery.body,
        headers=delivery.headers(delivery.body, "x"),
    )
    assert response.status_code == 404 and on.nudges == []
    assert on.outcome(source, "not-found") == 1


class Endless(io.RawIOBase):
    """A body that would never end; counts what was taken from it."""

    def __init__(self) -> None:
        self.served = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
        n = min(len(buffer), 4096)
        buffer[:n] = b"a" * n
        self.served += n
        return n


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("/webhook/harbor", {"HTTP_AUTHORIZATION": "Bearer wrong-token-0123456789"}),
        ("/webhook/distribution", {}),  # no Authorization at all
        ("/webhook/dockerhub/wrong-token-0123456789", {}),
        ("/webhook/github", {}),  # HMAC sources refuse an unsigned request before reading too
    ],
)
def test_a_missing_or_wrong_token_is_refused_before_a_byte_of_the_body_is_read(
    on: Edge, path: str, headers: dict[str, str]
) -> None:
    stream = Endless()
    environ: dict[str, object] = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": path,
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": stream,
        "CONTENT_LENGTH": str(MAX_BODY_BYTES),
        **headers,
    }
    statuses: list[str] = []

    def start_response(status: str, headers: object, exc_info: object = None) -> None:
        statuses.append(status)

    app = on.client.application
    b"".join(app.wsgi_app(environ, start_response))  # type: ignore[arg-type]
    assert statuses[0].startswith("403")
    assert stream.served == 0 and on.nudges == []


def test_an_hmac_signature_of_another_body_is_refused(on: Edge) -> None:
    delivery = BY_SOURCE[Source.GENERIC]
    headers = generic(b'{"image": "127.0.0.1:25397/team/other:v9"}', SECRETS[Source.GENERIC])
    response = on.client.post("/webhook/generic", data=delivery.body, headers=headers)
    assert response.status_code == 403 and on.nudges == []


def test_sha1_is_not_accepted_for_the_generic_format(on: Edge) -> None:
    body = BY_SOURCE[Source.GENERIC].body
    digest = hmac.new(SECRETS[Source.GENERIC].encode(), body, hashlib.sha1).hexdigest()
    response = on.client.post(
        "/webhook/generic", data=body, headers={"X-Signature": f"sha1={digest}"}
    )
    assert response.status_code == 403
    assert on.outcome(Source.GENERIC, "bad-signature") == 1


@pytest.mark.parametrize("delivery", DELIVERIES, ids=IDS)
def test_a_receiver_that_is_off_answers_404_naming_its_variable(delivery: Delivery) -> None:
    off = edge({})
    status, text = delivery.send(off.client)
    assert status == 404
    assert RECEIVERS[delivery.source].variable in text
    assert off.nudges == [] and off.outcome(delivery.source, "disabled") == 1


def test_an_unknown_source_is_not_found_and_not_counted(on: Edge) -> None:
    response = on.client.post("/webhook/nexus", data=b"{}")
    assert response.status_code == 404
    assert "the receivers are cloudevents, distribution" in response.get_data(as_text=True)
    samples = on.metrics.registry.collect()
    assert not [s for m in samples for s in m.samples if s.labels.get("source") == "nexus"]


def test_a_body_over_the_cap_is_413_and_never_read_whole(on: Edge) -> None:
    response = on.client.post(
        "/webhook/generic",
        data=b"x" * (MAX_BODY_BYTES + 1),
        headers={"X-Signature": "sha256=" + "0" * 64},
    )
    assert response.status_code == 413 and on.nudges == []
    assert on.outcome(Source.GENERIC, "too-large") == 1


# -- authenticated deliveries that start nothing ---------------------------------------------------


def test_a_pull_notification_from_the_registry_is_answered_202_and_starts_nothing(on: Edge) -> None:
    # The distribution registry notifies every pull, autoroll's own HEADs included.
    pull = Delivery(Source.DISTRIBUTION, fixture("distribution-2.8.2-pull-head.json"), bearer, FULL)
    status, text = pull.send(on.client)
    assert (status, text) == (202, "no pass: a pull event moves no tag\n")
    assert on.nudges == [] and on.outcome(Source.DISTRIBUTION, "ignored") == 1


def test_an_unreadable_body_from_the_registry_is_still_202_so_its_queue_moves_on(on: Edge) -> None:
    status, text = Delivery(Source.DISTRIBUTION, b"[not json", bearer, FULL).send(on.client)
    assert status == 202 and text.startswith("unreadable, no pass: the body is not JSON")
    assert on.nudges == [] and on.outcome(Source.DISTRIBUTION, "unreadable") == 1


def test_an_unreadable_body_from_another_source_is_400_naming_what_is_wrong(on: Edge) -> None:
    status, text = Delivery(
        Source.HARBOR, fixture("harbor-cloudevents-pushed.json"), bearer, FULL
    ).send(on.client)
    assert status == 400 and "/webhook/cloudevents" in text
    assert on.nudges == []


def test_a_push_to_a_registry_autoroll_does_not_read_starts_nothing_and_says_so() -> None:
    only_live = edge(hosts=(LIVE_HOST,))
    status, text = BY_SOURCE[Source.DOCKERHUB].send(only_live.client)
    assert status == 202
    assert "docker.io/svendowideit/testhook:latest is on no registry autoroll reads" in text
    assert only_live.nudges == []


def test_a_github_ping_is_answered_and_starts_nothing(on: Edge) -> None:
    body = b'{"zen": "Design for failure.", "hook_id": 1}'
    headers = {"X-GitHub-Event": "ping", "X-Hub-Signature-256": sign(body, SECRETS[Source.GITHUB])}
    response = on.client.post("/webhook/github", data=body, headers=headers)
    assert response.status_code == 202 and on.nudges == []


def test_the_cloudevents_handshake_allows_the_origin_that_asks() -> None:
    client = edge().client
    response = client.options(
        "/webhook/cloudevents", headers={"WebHook-Request-Origin": "eventgrid.azure.net"}
    )
    assert response.status_code == 200
    assert response.headers["WebHook-Allowed-Origin"] == "eventgrid.azure.net"
    assert (
        client.options("/webhook/harbor", headers={"WebHook-Request-Origin": "x"}).status_code
        == 405
    )
    off = edge({}).client.options("/webhook/cloudevents", headers={"WebHook-Request-Origin": "x"})
    assert off.status_code == 404


def test_a_structured_cloudevent_of_harbor_starts_a_targeted_pass() -> None:
    harbor = edge(hosts=("harbor.dev",), default_host=None)
    delivery = Delivery(
        Source.CLOUDEVENTS,
        fixture("harbor-cloudevents-pushed.json"),
        cloud,
        tags("library/busybox:1.36"),
    )
    assert delivery.send(harbor.client)[0] == 202
    assert harbor.nudges == [delivery.scope]


def test_an_empty_receiver_secret_is_refused() -> None:
    with pytest.raises(ValueError, match="must not be empty"):
        edge({Source.HARBOR: ""})


def test_forgejos_webhook_is_unchanged_beside_the_receivers(on: Edge) -> None:
    package = {"type": "container", "name": "app", "version": "latest", "owner": {"login": "team"}}
    body = json.dumps({"action": "created", "package": package}).encode()
    signature = hmac.new(b"forgejo-secret-0123456789", body, hashlib.sha256).hexdigest()
    response = on.client.post("/webhook", data=body, headers={"X-Forgejo-Signature": signature})
    assert response.status_code == 202
    assert on.nudges == [tags("team/app:latest")]
    assert on.outcome(Source.FORGEJO, "targeted") == 1


def test_a_push_naming_no_valid_repository_starts_nothing_and_says_so() -> None:
    body = b'{"push_data": {"tag": "latest"}, "repository": {"repo_name": "Not A Repo"}}'
    hub = edge(hosts=("docker.io",), default_host=None)
    response = hub.client.post(f"/webhook/dockerhub/{SECRETS[Source.DOCKERHUB]}", data=body)
    assert (response.status_code, response.get_data(as_text=True)) == (
        202,
        "no pass: no valid repository:tag among the pushes\n",
    )
    assert hub.nudges == []
