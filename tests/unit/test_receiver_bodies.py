"""What each registry's webhook body names, on the bodies its project documents (and live ones).

The files are in ``tests/unit/data/receivers/`` with their sources (its README). Every reader
is pure: bytes and lowercased headers in, a ``Reading`` out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

from autoroll.core.pushed import Pushed
from autoroll.core.receivers import MAX_BODY_BYTES, Reading, ReadingKind
from autoroll.core.receivers.cloudevents import read_cloudevents
from autoroll.core.receivers.distribution import read_envelope
from autoroll.core.receivers.generic import read_generic
from autoroll.core.receivers.github import read_github
from autoroll.core.receivers.harbor import read_harbor
from autoroll.core.receivers.hubs import read_dockerhub, read_quay
from tests.support.receivers import BATCHED, GITHUB_EVENT, LIVE_HOST, STRUCTURED, fixture

Reader = Callable[[bytes, Mapping[str, str]], Reading]
PUSHED, IGNORED, UNREADABLE = ReadingKind.PUSHED, ReadingKind.IGNORED, ReadingKind.UNREADABLE

# -- the documented (and live) bodies ------------------------------------------------------------


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
        (read_github, "github-octokit-package-published-docker.json", GITHUB_EVENT, IGNORED, ()),
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
    reading = reader(fixture(name), headers)
    assert (reading.kind, reading.pushes) == (kind, pushes), reading.detail
    assert reading.detail or kind is PUSHED  # a delivery that starts nothing says why


# -- every reader: the caps and bad bodies --------------------------------------------------------

READERS: list[tuple[Reader, dict[str, str]]] = [
    (read_envelope, {}),
    (read_harbor, {}),
    (read_github, GITHUB_EVENT),
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
    reading = read_harbor(fixture("harbor-cloudevents-pushed.json"), {})
    assert "/webhook/cloudevents" in reading.detail
