"""What each registry's webhook body names, on the bodies its project documents (and live ones).

The files are in ``tests/unit/data/receivers/`` with their sources (its README). Every reader
is pure: bytes and lowercased headers in, a ``Reading`` out.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from autoroll.core.pushed import Pushed
from autoroll.core.receivers import MAX_BODY_BYTES, Reading, ReadingKind
from autoroll.core.receivers.cloudevents import read_cloudevents
from autoroll.core.receivers.distribution import read_envelope
from autoroll.core.receivers.generic import read_generic
from autoroll.core.receivers.github import read_github
from autoroll.core.receivers.harbor import read_harbor
from autoroll.core.receivers.hubs import read_dockerhub, read_quay

DATA = Path(__file__).parent / "data" / "receivers"
Reader = Callable[[bytes, Mapping[str, str]], Reading]
PUSHED, IGNORED, UNREADABLE = ReadingKind.PUSHED, ReadingKind.IGNORED, ReadingKind.UNREADABLE


def body(name: str) -> bytes:
    return (DATA / name).read_bytes()


def doc(name: str) -> Any:
    return json.loads(body(name))


def encode(document: object) -> bytes:
    return json.dumps(document).encode()


# -- the documented (and live) bodies ------------------------------------------------------------

LIVE_HOST = "127.0.0.1:25397"  # the capture's registry (tests/unit/data/receivers/README.md)
GITHUB = {"x-github-event": "package"}
STRUCTURED = {"content-type": "application/cloudevents+json"}
BATCHED = {"content-type": "application/cloudevents-batch+json"}


@pytest.mark.parametrize(
    ("reader", "name", "headers", "kind", "pushes"),
    [
        # The distribution registry, live (Debian's docker-registry 2.8.2).
        (
            read_envelope,
            "distribution-2.8.2-push-tag.json",
            {},
            PUSHED,
            (Pushed(LIVE_HOST, "team/app", "latest"),),
        ),
        (
            read_envelope,
            "distribution-2.8.2-push-index-tag.json",
            {},
            PUSHED,
            (Pushed(LIVE_HOST, "team/multi", "v1"),),
        ),
        (read_envelope, "distribution-2.8.2-push-manifest-by-digest.json", {}, IGNORED, ()),
        (read_envelope, "distribution-2.8.2-push-blob.json", {}, IGNORED, ()),
        # autoroll's own HEAD is a pull: it never starts a pass (or every pass would).
        (read_envelope, "distribution-2.8.2-pull-head.json", {}, IGNORED, ()),
        # The distribution registry, documented.
        (read_envelope, "distribution-docs-envelope.json", {}, IGNORED, ()),
        (read_envelope, "distribution-docs-pull.json", {}, IGNORED, ()),
        # Harbor, Default format.
        (
            read_harbor,
            "harbor-docs-push-artifact.json",
            {},
            PUSHED,
            (Pushed("hub.harbor.com", "test-webhook/debian", "latest"),),
        ),
        (read_harbor, "harbor-default-pull-artifact.json", {}, IGNORED, ()),
        # GitHub: the documented example is a version pushed by digest (its tag name is "").
        (read_github, "github-octokit-package-published-docker.json", GITHUB, IGNORED, ()),
        # Docker Hub and Quay.
        (
            read_dockerhub,
            "dockerhub-docs-push.json",
            {},
            PUSHED,
            (Pushed("docker.io", "svendowideit/testhook", "latest"),),
        ),
        (
            read_quay,
            "quay-docs-repo-push.json",
            {},
            PUSHED,
            (Pushed("quay.io", "dgangaia/test", "latest"),),
        ),
        (
            read_quay,
            "quay-2013-push.json",
            {},
            PUSHED,
            (Pushed("quay.io", "devtable/ubuntu", "latest"),),
        ),
        (read_quay, "quay-docs-build-queued.json", {}, IGNORED, ()),
        # CloudEvents: Harbor's format, and Azure Container Registry through Event Grid.
        (
            read_cloudevents,
            "harbor-cloudevents-pushed.json",
            STRUCTURED,
            PUSHED,
            (Pushed("harbor.dev", "library/busybox", "1.36"),),
        ),
        (read_cloudevents, "harbor-cloudevents-pulled.json", STRUCTURED, IGNORED, ()),
        (
            read_cloudevents,
            "acr-eventgrid-imagepushed.json",
            BATCHED,
            PUSHED,
            (Pushed("demo.azurecr.io", "aci-helloworld", "v1"),),
        ),
    ],
)
def test_a_documented_body_names_its_tag_pushes_or_is_ignored(
    reader: Reader,
    name: str,
    headers: dict[str, str],
    kind: ReadingKind,
    pushes: tuple[Pushed, ...],
) -> None:
    reading = reader(body(name), headers)
    assert (reading.kind, reading.pushes) == (kind, pushes), reading.detail
    assert reading.detail or kind is PUSHED  # a delivery that starts nothing says why


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
        (body("harbor-cloudevents-pushed.json"), UNREADABLE, ()),
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


# -- the generic format -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "kind", "pushes"),
    [
        (
            {"image": "registry.example.org/team/app:latest"},
            PUSHED,
            (Pushed("registry.example.org", "team/app", "latest"),),
        ),
        (
            {"images": ["ghcr.io/team/tool:v2", "nginx", "registry.example.org:5000/a/b:c"]},
            PUSHED,
            (
                Pushed("ghcr.io", "team/tool", "v2"),
                Pushed("docker.io", "library/nginx", "latest"),  # as a runtime reads it
                Pushed("registry.example.org:5000", "a/b", "c"),
            ),
        ),
        ({"image": "ghcr.io/team/tool@sha256:" + "ab" * 32}, IGNORED, ()),
        ({"image": "ghcr.io/team/tool:v1", "images": []}, UNREADABLE, ()),
        ({"images": []}, UNREADABLE, ()),
        ({"images": [1]}, UNREADABLE, ()),
        ({"image": "Not An Image"}, UNREADABLE, ()),
        ({"images": ["a:b"] * 65}, UNREADABLE, ()),
        ({"tag": "latest"}, UNREADABLE, ()),
        (["ghcr.io/team/tool:v2"], UNREADABLE, ()),
    ],
)
def test_the_generic_format_names_each_tagged_image(
    payload: object, kind: ReadingKind, pushes: tuple[Pushed, ...]
) -> None:
    reading = read_generic(encode(payload), {})
    assert (reading.kind, reading.pushes) == (kind, pushes), reading.detail


# -- CloudEvents --------------------------------------------------------------------------------

MINE = "se.aethnet.autoroll.image.pushed"
IMAGE = {"image": "registry.example.org/team/app:v3"}
APP_V3 = (Pushed("registry.example.org", "team/app", "v3"),)


def cloud(**attributes: Any) -> dict[str, Any]:
    return {"specversion": "1.0", "id": "1", "source": "/ci", "type": MINE, "data": IMAGE} | (
        attributes
    )


@pytest.mark.parametrize(
    ("payload", "headers", "kind", "pushes"),
    [
        # Structured mode.
        (encode(cloud()), STRUCTURED, PUSHED, APP_V3),
        (encode(cloud(datacontenttype="application/json")), STRUCTURED, PUSHED, APP_V3),
        (
            encode(cloud(data=None, data_base64=base64.b64encode(encode(IMAGE)).decode("ascii"))),
            STRUCTURED,
            PUSHED,
            APP_V3,
        ),
        (
            encode(cloud()),
            {"content-type": "application/cloudevents+json; charset=utf-8"},
            PUSHED,
            APP_V3,
        ),
        (encode(cloud(type="harbor.artifact.deleted")), STRUCTURED, IGNORED, ()),
        (encode(cloud(type="dev.cdevents.artifact.published.0.1.1")), STRUCTURED, IGNORED, ()),
        (encode(cloud(specversion="0.3")), STRUCTURED, UNREADABLE, ()),
        (encode(cloud(type=None)), STRUCTURED, UNREADABLE, ()),
        (encode(cloud(data="text")), STRUCTURED, UNREADABLE, ()),
        (encode(cloud(datacontenttype="text/plain")), STRUCTURED, UNREADABLE, ()),
        (encode(cloud(data_base64="not base64!")), STRUCTURED, UNREADABLE, ()),
        (encode([cloud()]), STRUCTURED, UNREADABLE, ()),
        # Batched mode: every event's pushes.
        (
            encode([cloud(), cloud(data={"image": "ghcr.io/t/x:y"}), cloud(type="other")]),
            BATCHED,
            PUSHED,
            (*APP_V3, Pushed("ghcr.io", "t/x", "y")),
        ),
        (encode([cloud(type="other")]), BATCHED, IGNORED, ()),
        (encode(cloud()), BATCHED, UNREADABLE, ()),
        (encode([cloud()] * 65), BATCHED, UNREADABLE, ()),
        # Binary mode: attributes in ce- headers, the data as the body.
        (
            encode(IMAGE),
            {"content-type": "application/json", "ce-specversion": "1.0", "ce-type": MINE},
            PUSHED,
            APP_V3,
        ),
        (
            encode(doc("harbor-cloudevents-pushed.json")["data"]),
            {
                "content-type": "application/json",
                "ce-specversion": "1.0",
                "ce-type": "harbor.artifact.pushed",
            },
            PUSHED,
            (Pushed("harbor.dev", "library/busybox", "1.36"),),
        ),
        (
            encode(IMAGE),
            {"content-type": "text/plain", "ce-specversion": "1.0", "ce-type": MINE},
            UNREADABLE,
            (),
        ),
        (
            encode(IMAGE),
            {"content-type": "application/json", "ce-specversion": "1.0"},
            UNREADABLE,
            (),
        ),
        # Neither mode.
        (encode(cloud()), {"content-type": "application/json"}, UNREADABLE, ()),
        (b"{", STRUCTURED, UNREADABLE, ()),
    ],
)
def test_a_cloudevent_in_each_content_mode_is_read_by_its_type(
    payload: bytes, headers: dict[str, str], kind: ReadingKind, pushes: tuple[Pushed, ...]
) -> None:
    reading = read_cloudevents(payload, headers)
    assert (reading.kind, reading.pushes) == (kind, pushes), reading.detail


# -- every reader: the caps and bad bodies --------------------------------------------------------

READERS: list[tuple[Reader, dict[str, str]]] = [
    (read_envelope, {}),
    (read_harbor, {}),
    (read_github, GITHUB),
    (read_dockerhub, {}),
    (read_quay, {}),
    (read_generic, {}),
    (read_cloudevents, STRUCTURED),
]


@pytest.mark.parametrize(("reader", "headers"), READERS)
@pytest.mark.parametrize(
    ("payload", "says"),
    [
        (b"[" * 2000 + b"]" * 2000, "nested more than 64"),
        (b" " * (MAX_BODY_BYTES + 1), "over the cap"),
        (b"\xff\xfe not utf-8", "not JSON"),
        (b"", "not JSON"),
    ],
)
def test_a_body_past_the_caps_or_not_json_is_unreadable_and_says_why(
    reader: Reader, headers: dict[str, str], payload: bytes, says: str
) -> None:
    reading = reader(payload, headers)
    assert reading.kind is UNREADABLE
    assert says in reading.detail


def test_a_harbor_cloudevent_sent_to_the_default_route_says_where_it_belongs() -> None:
    reading = read_harbor(body("harbor-cloudevents-pushed.json"), {})
    assert "/webhook/cloudevents" in reading.detail
