"""What the registries' webhook bodies name, clause by clause: the distribution envelope
(also GitLab's), Harbor's push, GitHub's package event, Docker Hub's and Quay's pushes.
Their documented bodies are read in ``test_receiver_bodies.py``."""

from __future__ import annotations

from typing import Any

import pytest

from autoroll.core.pushed import Pushed
from autoroll.core.receivers import ReadingKind
from autoroll.core.receivers.distribution import read_envelope
from autoroll.core.receivers.github import read_github
from autoroll.core.receivers.harbor import read_harbor
from autoroll.core.receivers.hubs import read_dockerhub, read_quay
from tests.support.receivers import doc, encode, fixture

PUSHED, IGNORED, UNREADABLE = ReadingKind.PUSHED, ReadingKind.IGNORED, ReadingKind.UNREADABLE


# -- the distribution registry (and GitLab's, and ACR's data) -----------------------------------


def envelope(*events: dict[str, Any]) -> bytes:
    return encode({"events": list(events)})


def event(action: str = "push", tag: str | None = "latest", **fields: Any) -> dict[str, Any]:
    target: dict[str, Any] = {"repository": "team/app", "digest": "sha256:" + "ab" * 32}
    if tag is not None:
        target["tag"] = tag
    return {
        "action": action,
        "target": target,
        "request": {"host": "registry.example.org"},
        **fields,
    }


@pytest.mark.parametrize(
    ("payload", "kind", "pushes"),
    [
        # Several events in one envelope: each tag push, in order.
        (
            envelope(event(), event(tag=None), event("pull"), event(tag="v2")),
            PUSHED,
            (
                Pushed("registry.example.org", "team/app", "latest"),
                Pushed("registry.example.org", "team/app", "v2"),
            ),
        ),
        # A push without request (Harbor's core forwards them so): the source's own registry.
        (envelope({**event(), "request": None}), PUSHED, (Pushed(None, "team/app", "latest"),)),
        (envelope(event("delete")), IGNORED, ()),
        (envelope(), IGNORED, ()),
        (envelope({"action": "push", "target": {"tag": "latest"}}), UNREADABLE, ()),
        (envelope("not an event"), UNREADABLE, ()),  # type: ignore[arg-type]
        (encode({"events": "no"}), UNREADABLE, ()),
        (encode([event()]), UNREADABLE, ()),  # an event without its envelope
        (b"not json", UNREADABLE, ()),
        (envelope(*[event(tag=None)] * 257), UNREADABLE, ()),
    ],
)
def test_an_envelope_names_each_tag_push_among_its_events(
    payload: bytes, kind: ReadingKind, pushes: tuple[Pushed, ...]
) -> None:
    reading = read_envelope(payload, {})
    assert (reading.kind, reading.pushes) == (kind, pushes), reading.detail


def test_an_envelope_of_pulls_says_what_they_were() -> None:
    reading = read_envelope(envelope(event("pull"), event("pull")), {})
    assert reading.detail == "a pull event moves no tag"


def test_an_envelope_of_mixed_events_says_none_pushed_a_tag() -> None:
    reading = read_envelope(envelope(event("pull"), event(tag=None)), {})
    assert reading.detail.startswith("none of 2 events pushes a tag")


# -- Harbor -----------------------------------------------------------------------------------


def harbor(kind: str = "PUSH_ARTIFACT", **data: Any) -> bytes:
    event_data: dict[str, Any] = {
        "resources": [{"tag": "v1", "resource_url": "harbor.example.org/proj/app:v1"}],
        "repository": {"repo_full_name": "proj/app"},
    }
    event_data.update(data)
    return encode({"type": kind, "event_data": event_data})


@pytest.mark.parametrize(
    ("payload", "kind", "pushes"),
    [
        (harbor(), PUSHED, (Pushed("harbor.example.org", "proj/app", "v1"),)),
        # Several tags of one artifact; one pushed by digest (Harbor names the digest).
        (
            harbor(
                resources=[
                    {"tag": "v1", "resource_url": "h.example/proj/app:v1"},
                    {"tag": "sha256:" + "cd" * 32, "resource_url": "h.example/proj/app@sha256:"},
                    {"tag": "latest", "resource_url": "h.example/proj/app:latest"},
                ]
            ),
            PUSHED,
            (Pushed("h.example", "proj/app", "v1"), Pushed("h.example", "proj/app", "latest")),
        ),
        # No resource_url: the host is not named.
        (harbor(resources=[{"tag": "v1"}]), PUSHED, (Pushed(None, "proj/app", "v1"),)),
        (harbor("DELETE_ARTIFACT"), IGNORED, ()),
        # Harbor's CloudEvents format at the Default format's route: told where it belongs.
        (fixture("harbor-cloudevents-pushed.json"), UNREADABLE, ()),
        (harbor("SCANNING_COMPLETED"), IGNORED, ()),
        (harbor(repository={}), UNREADABLE, ()),
        (harbor(resources="no"), UNREADABLE, ()),
        (encode({"event_data": {}}), UNREADABLE, ()),
    ],
)
def test_a_harbor_push_names_each_tag_of_its_artifact(
    payload: bytes, kind: ReadingKind, pushes: tuple[Pushed, ...]
) -> None:
    reading = read_harbor(payload, {})
    assert (reading.kind, reading.pushes) == (kind, pushes), reading.detail


# -- GitHub -----------------------------------------------------------------------------------


def github(tag: str = "latest", **package: Any) -> dict[str, Any]:
    """The documented example as a push of a tag to ghcr.io."""
    document: dict[str, Any] = doc("github-octokit-package-published-docker.json")
    document["package"]["package_version"]["container_metadata"]["tag"]["name"] = tag
    document["package"].update(package)
    return document


@pytest.mark.parametrize(
    ("payload", "event", "kind", "pushes"),
    [
        (github(), "package", PUSHED, (Pushed("ghcr.io", "codertocat/hello-world-npm", "latest"),)),
        (
            github(package_type="CONTAINER"),
            "package",
            PUSHED,
            (Pushed("ghcr.io", "codertocat/hello-world-npm", "latest"),),
        ),
        (
            {"action": "published", "registry_package": github()["package"]},
            "registry_package",
            PUSHED,
            (Pushed("ghcr.io", "codertocat/hello-world-npm", "latest"),),
        ),
        ({**github(), "action": "updated"}, "package", PUSHED, None),
        ({**github(), "action": "deleted"}, "package", IGNORED, ()),
        (github(package_type="npm", registry={"type": "npm"}), "package", IGNORED, ()),
        (github(tag=""), "package", IGNORED, ()),
        (github(owner={}), "package", UNREADABLE, ()),
        ({"zen": "Keep it logically awesome.", "hook_id": 1}, "ping", IGNORED, ()),
        (github(), "push", IGNORED, ()),
        (github(), "", IGNORED, ()),
    ],
)
def test_a_github_package_event_names_its_container_tag_on_ghcr(
    payload: dict[str, Any], event: str, kind: ReadingKind, pushes: tuple[Pushed, ...] | None
) -> None:
    reading = read_github(encode(payload), {"x-github-event": event})
    assert reading.kind is kind, reading.detail
    if pushes is not None:
        assert reading.pushes == pushes


# -- Docker Hub and Quay ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "kind", "pushes"),
    [
        (
            {"push_data": {"tag": "1.0"}, "repository": {"repo_name": "library/nginx"}},
            PUSHED,
            (Pushed("docker.io", "library/nginx", "1.0"),),
        ),
        ({"push_data": {}, "repository": {"repo_name": "a/b"}}, IGNORED, ()),
        ({"push_data": {"tag": "1.0"}}, UNREADABLE, ()),
        (["not", "an", "object"], UNREADABLE, ()),
    ],
)
def test_a_docker_hub_push_names_its_repository_and_tag(
    payload: object, kind: ReadingKind, pushes: tuple[Pushed, ...]
) -> None:
    reading = read_dockerhub(encode(payload), {})
    assert (reading.kind, reading.pushes) == (kind, pushes), reading.detail


@pytest.mark.parametrize(
    ("payload", "kind", "pushes"),
    [
        # A self-hosted Quay names its own host in docker_url.
        (
            {
                "repository": "org/app",
                "docker_url": "quay.example.org/org/app",
                "updated_tags": ["v1", "latest"],
            },
            PUSHED,
            (
                Pushed("quay.example.org", "org/app", "v1"),
                Pushed("quay.example.org", "org/app", "latest"),
            ),
        ),
        # No docker_url: quay.io.
        (
            {"repository": "org/app", "updated_tags": ["v1"]},
            PUSHED,
            (Pushed("quay.io", "org/app", "v1"),),
        ),
        ({"repository": "org/app", "updated_tags": []}, IGNORED, ()),
        ({"repository": "org/app", "updated_tags": "v1"}, UNREADABLE, ()),
        ({"updated_tags": ["v1"]}, UNREADABLE, ()),
    ],
)
def test_a_quay_push_names_each_updated_tag(
    payload: object, kind: ReadingKind, pushes: tuple[Pushed, ...]
) -> None:
    reading = read_quay(encode(payload), {})
    assert (reading.kind, reading.pushes) == (kind, pushes), reading.detail
