"""What autoroll's generic format and CloudEvents (each content mode, each type read) name,
clause by clause."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from autoroll.core.pushed import Pushed
from autoroll.core.receivers import ReadingKind
from autoroll.core.receivers.cloudevents import read_cloudevents
from autoroll.core.receivers.generic import read_generic
from tests.support.receivers import BATCHED, STRUCTURED, doc, encode

PUSHED, IGNORED, UNREADABLE = ReadingKind.PUSHED, ReadingKind.IGNORED, ReadingKind.UNREADABLE


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
