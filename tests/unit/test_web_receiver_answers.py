"""What an authenticated delivery at a registry's receiver starts: a targeted pass, or nothing
and the answer says why (a pull, an unreadable body, a registry autoroll does not read, a
ping), through Flask's test client."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from autoroll.core.receivers.sources import Source
from autoroll.core.scope import FULL
from autoroll.edge.receivers import SETTLE_SECONDS
from tests.support.receivers import (
    BY_SOURCE,
    LIVE_HOST,
    SECRETS,
    Delivery,
    Edge,
    bearer,
    cloud,
    edge,
    fixture,
    sign,
    tags,
)


@pytest.fixture
def on() -> Edge:
    return edge()


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
        tags("harbor.dev/library/busybox:1.36"),
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
    assert on.nudges == [tags(f"{LIVE_HOST}/team/app:latest")]
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


@pytest.mark.parametrize("source", [Source.DISTRIBUTION, Source.GITLAB])
def test_the_distribution_familys_push_is_looked_at_once_the_tag_is_written(
    on: Edge, source: Source
) -> None:
    # The registry notifies a manifest pushed by tag before it writes the tag: a pass at
    # once may read the old digest, so the tags are asked for a moment later.
    delivery = BY_SOURCE[source]
    assert delivery.send(on.client)[0] == 202
    assert on.laters == [(delivery.scope, SETTLE_SECONDS)]
    assert on.nudges == []


@pytest.mark.parametrize(
    "source", [s for s in BY_SOURCE if s not in (Source.DISTRIBUTION, Source.GITLAB)], ids=str
)
def test_other_sources_notify_once_the_tag_is_written_and_are_nudged_at_once(
    on: Edge, source: Source
) -> None:
    delivery = BY_SOURCE[source]
    assert delivery.send(on.client)[0] == 202
    assert on.nudges == [delivery.scope]
    assert on.laters == []


def test_a_pull_notification_asks_for_no_pass_now_or_later(on: Edge) -> None:
    pull = Delivery(Source.DISTRIBUTION, fixture("distribution-2.8.2-pull-head.json"), bearer, FULL)
    assert pull.send(on.client)[0] == 202
    assert on.laters == [] and on.nudges == []
