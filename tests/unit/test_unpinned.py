"""Pods admitted unpinned (autoroll.core.unpinned) and what counts as a pin
(autoroll.core.images.pinned_digest)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from autoroll.core.images import TagRef, pinned_digest
from autoroll.core.model import ContainerView, Digest, Enrolled, PodView
from autoroll.core.unpinned import admitted_unpinned
from tests.support.views import deployment_view, pod_view

HOST = "forgejo.example"
IMAGE = f"{HOST}/team/app:latest"
REF = TagRef(HOST, "team/app", "latest")
OLD, NEW = (Digest("sha256:" + c * 64) for c in "01")
T0 = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("template", "spec", "expected"),
    [
        (IMAGE, f"{IMAGE}@{OLD}", OLD),
        (IMAGE, IMAGE, None),
        (IMAGE, f"{HOST}/team/app:v1@{OLD}", None),  # another tag: an older template
        (IMAGE, f"{HOST}/team/app@{OLD}", None),  # the tag dropped: not autoroll's form
        (f"{IMAGE}@{NEW}", f"{IMAGE}@{NEW}@{OLD}", None),  # a template pinned by itself
        (IMAGE, f"{IMAGE}@sha256:abc", None),  # not a digest
    ],
)
def test_only_the_template_image_with_a_digest_is_a_pin(
    template: str, spec: str, expected: Digest | None
) -> None:
    assert pinned_digest(template, spec) == expected


def pod(
    name: str, image: str = IMAGE, *, created: datetime = T0, deleting: bool = False
) -> PodView:
    return pod_view(name, image, None, namespace="shop", created=created, deleting=deleting)


def enrolled(*pods: PodView) -> Enrolled:
    view = deployment_view("shop", "web", len(pods), (ContainerView("app", IMAGE),))
    return Enrolled(view, pods)


def unpinned(
    item: Enrolled, *, approved: Digest | None = OLD, since: datetime | None = None
) -> list[str]:
    found = admitted_unpinned(
        item,
        approved={REF: approved},
        pinnable_since={REF: since} if since is not None else {},
        registries={HOST},
    )
    return [p.pod for p in found]


def test_a_pod_made_after_a_pinned_sibling_was_admitted_unpinned() -> None:
    item = enrolled(
        pod("pinned", f"{IMAGE}@{OLD}", created=T0),
        pod("late", created=T0 + timedelta(minutes=1)),
        pod("early", created=T0 - timedelta(minutes=1)),  # before any pin: not evidence
    )
    assert unpinned(item) == ["late"]


def test_a_pod_made_a_second_after_the_view_had_a_digest_was_admitted_unpinned() -> None:
    item = enrolled(pod("a", created=T0 + timedelta(seconds=1)), pod("b", created=T0))
    assert unpinned(item, since=T0) == ["a"]  # b's stamp may be just before the view


def test_no_digest_approved_means_nothing_was_missed() -> None:
    item = enrolled(pod("pinned", f"{IMAGE}@{OLD}"), pod("late", created=T0 + timedelta(hours=1)))
    assert unpinned(item, approved=None, since=T0 - timedelta(hours=1)) == []


def test_terminating_pods_and_pods_of_other_images_are_not_counted() -> None:
    item = enrolled(
        pod("pinned", f"{IMAGE}@{OLD}"),
        pod("going", created=T0 + timedelta(minutes=1), deleting=True),
        pod("other", f"{HOST}/team/app:v2", created=T0 + timedelta(minutes=1)),
    )
    assert unpinned(item) == []
