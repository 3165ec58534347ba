"""Stale means "runs other content", against a real ``docker-registry`` (issue 12).

containerd reports, for every container of an image, the alphabetically first reference it
has recorded for the image's config. Here the registry, the pushes and the registry client
are real; the node is a stand-in (``Node``): the pods' statuses are written as containerd
names them, since this suite has no kubelet (the real-node reproduction is the kubelet
suite's). The images are pushed so that the same config really sits under several
manifests: Docker format in a repository that sorts first, OCI in the enrolled one.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest
import requests
from prometheus_client import CollectorRegistry

from autoroll.controller.reconciler import Reconciler, TickReport
from autoroll.core.decide import ContainerVerdict, PodState, Reason, Verdict
from autoroll.core.model import (
    ContainerView,
    DeleteOutcome,
    Enrolled,
    PodView,
    WorkloadView,
)
from autoroll.core.scope import FULL, Scope
from autoroll.instruments.metrics import Metrics
from autoroll.registry import RegistryClient
from tests.support.registry import ImagePusher, Pushed, RegistryServer
from tests.support.registry_recorder import Recorder
from tests.support.views import deployment_view, pod_view

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


class Node:
    """A stand-in for kubelet + containerd: one Deployment's pods, each reporting the
    imageID it is given; deleting a pod removes it (no replacement unless a test adds one)."""

    def __init__(self, image: str, image_ids: Sequence[str]) -> None:
        self.image = image
        self.pods = [self.pod(f"web-{i}", image_id, i) for i, image_id in enumerate(image_ids)]
        self.deleted: list[str] = []

    def pod(self, name: str, image_id: str, age: int = 0) -> PodView:
        created = T0 - timedelta(days=1, seconds=-age)
        return pod_view(  # Ready since it started
            name, self.image, image_id, namespace="shop", created=created, ready_changed_at=created
        )

    def read_now(self, workload: WorkloadView) -> Enrolled:
        return Enrolled(workload, tuple(self.pods))

    def snapshot(self, scope: Scope = FULL) -> Sequence[Enrolled]:
        view = deployment_view(
            "shop", "web", len(self.pods), (ContainerView("app", self.image, "Always"),)
        )
        return [Enrolled(view, tuple(self.pods))]

    def delete_pod(
        self, namespace: str, name: str, uid: str, *, within: float | None = None
    ) -> DeleteOutcome:
        self.deleted.append(name)
        self.pods = [p for p in self.pods if p.name != name]
        return DeleteOutcome.DELETED


class Autoroll:
    """autoroll started against ``registry`` and the pods on ``node``: empty loop-guard
    memory, empty registry caches. Each pass runs two minutes after the last, on a clock
    that outlives a restart."""

    def __init__(self, registry: RegistryServer, node: Node, session: requests.Session) -> None:
        self.registry, self.node, self.session = registry, node, session
        self.now = T0
        self.restart()

    def restart(self) -> None:
        """A fresh process (a self-roll, a leader failover): it remembers nothing."""
        self.recorder = Recorder()
        client = RegistryClient(
            session=self.session,
            base_url=self.registry.url,
            user=self.registry.user,
            token=self.registry.password,
            observer=self.recorder,
        )
        self.reconciler = Reconciler(
            cluster=self.node,
            registry=client,
            metrics=Metrics(CollectorRegistry()),
            registries={self.registry.host},
            dry_run=False,
            clock=lambda: self.now,
        )

    def tick(self) -> TickReport:
        self.now += timedelta(minutes=2)
        return self.reconciler.tick()

    def verdict(self) -> ContainerVerdict:
        """One pass's verdict on web's one container."""
        return self.tick().decisions[0].containers[0]


def config_of(pushed: Pushed) -> str:
    document = json.loads(pushed.body)
    return str(document["config"]["digest"])


def names(prefix: str) -> tuple[str, str]:
    """A repository that sorts before the enrolled one, as a mirror named ``aaa-…`` does."""
    token = secrets.token_hex(4)
    return f"aaa-{token}/{prefix}", f"team/{prefix}-{token}"


# --------------------------------------------------------------------------------------------


def test_a_pod_named_by_a_mirror_of_the_targets_config_is_current_and_a_push_still_rolls(
    registry: RegistryServer, pusher: ImagePusher, session: requests.Session
) -> None:
    mirror_repo, enrolled = names("app")
    layer = secrets.token_bytes(256)
    mirror = pusher.push_image(mirror_repo, "latest", content=layer, flavour="docker")
    current = pusher.push_image(enrolled, "latest", content=layer, flavour="oci")
    assert config_of(mirror) == config_of(current) and mirror.digest != current.digest
    mirror_id = f"{registry.host}/{mirror_repo}@{mirror.digest}"
    assert mirror_id < f"{registry.host}/{enrolled}@{current.digest}"  # containerd's choice

    node = Node(f"{registry.host}/{enrolled}:latest", [mirror_id, mirror_id, mirror_id])
    autoroll = Autoroll(registry, node, session)
    for _ in range(3):
        verdict = autoroll.verdict()
        assert (verdict.verdict, verdict.reason) == (Verdict.CURRENT, Reason.UP_TO_DATE)
    assert f"the target's content under another name ({mirror_id})" in verdict.detail
    # One GET each for the target (its children, then its config) and the mirror's
    # manifest, then from the caches: 3 HEADs for 3 passes.
    assert autoroll.recorder.requests == Counter({"manifest-head": 3, "manifest-get": 3})

    # A restart (a self-roll, a leader failover) forgets everything; still nothing deleted.
    autoroll.restart()
    assert autoroll.verdict().verdict is Verdict.CURRENT
    assert node.deleted == []

    # A real push: the mirror's name now stands for the old config, so the pods are stale.
    pusher.push_image(enrolled, "latest", flavour="oci")
    report = autoroll.tick()
    assert node.deleted == ["web-0"]
    assert str(report.executed[0].action.from_digest) == mirror.digest


def test_an_oci_index_and_a_docker_list_of_one_build_in_one_repository_are_one_content(
    registry: RegistryServer, pusher: ImagePusher, session: requests.Session
) -> None:
    _, enrolled = names("multi")
    layers = {"amd64": secrets.token_bytes(256), "arm64": secrets.token_bytes(256)}
    index = pusher.push_index(enrolled, "latest", flavour="oci", contents=layers)
    listed = pusher.push_index(enrolled, None, flavour="docker", contents=layers)
    assert index.digest != listed.digest and set(index.children).isdisjoint(listed.children)

    listed_id = f"{registry.host}/{enrolled}@{listed.digest}"
    node = Node(f"{registry.host}/{enrolled}:latest", [listed_id, listed_id])
    autoroll = Autoroll(registry, node, session)
    for _ in range(2):
        verdict = autoroll.verdict()
        assert verdict.verdict is Verdict.CURRENT
    assert {f.state for f in verdict.pods} == {PodState.SAME_CONTENT}
    assert node.deleted == []


def test_a_build_that_shares_only_some_platforms_is_not_rolled_and_warned_once(
    registry: RegistryServer,
    pusher: ImagePusher,
    session: requests.Session,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A multi-arch push that left amd64 unchanged: a pod named by the old build's Docker
    list (in a mirror) runs the target's amd64 image or the old arm64 one, by its node."""
    caplog.set_level(logging.INFO)
    mirror_repo, enrolled = names("half")
    amd64 = secrets.token_bytes(256)
    old = pusher.push_index(
        mirror_repo,
        "latest",
        flavour="docker",
        contents={"amd64": amd64, "arm64": secrets.token_bytes(256)},
    )
    pusher.push_index(
        enrolled,
        "latest",
        flavour="oci",
        contents={"amd64": amd64, "arm64": secrets.token_bytes(256)},
    )
    old_id = f"{registry.host}/{mirror_repo}@{old.digest}"
    node = Node(f"{registry.host}/{enrolled}:latest", [old_id, old_id])
    autoroll = Autoroll(registry, node, session)
    for _ in range(3):
        verdict = autoroll.verdict()
        assert (verdict.verdict, verdict.reason) == (Verdict.SKIPPED, Reason.PLATFORM_UNKNOWN)
    assert node.deleted == []
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 2  # once per pod, not once per pass
    assert all("node's platform" in line for line in warned)


def test_a_reference_the_registry_does_not_hold_is_unknown_never_stale(
    registry: RegistryServer, pusher: ImagePusher, session: requests.Session
) -> None:
    mirror_repo, enrolled = names("gone")
    pusher.push_image(enrolled, "latest")
    missing = f"{registry.host}/{mirror_repo}@sha256:{'5' * 64}"
    node = Node(f"{registry.host}/{enrolled}:latest", [missing])
    autoroll = Autoroll(registry, node, session)
    verdict = autoroll.verdict()
    assert (verdict.verdict, verdict.reason) == (Verdict.SKIPPED, Reason.CONTENT_UNKNOWN)
    assert "not-found" in verdict.detail
    assert node.deleted == []
