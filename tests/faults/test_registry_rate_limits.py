"""Fault matrix, rate-limit rows across registries (issue 25): two registries (real
``docker-registry`` behind two fault proxies, so two hosts), two enrolled workloads, one on
each. The first answers 429 with ``Retry-After``.

- That registry is waited for, not hammered: no request reaches it until the time it named
  has passed, however many passes run meanwhile; its image is unknown (``rate-limited``, then
  ``backoff``), never stale, and its workload loses no pod.
- The other registry's workload rolls in the same passes, and no pass waits for the quiet one.
- Once the time has passed, the first registry is asked again and its workload rolls.
- A registry past its per-pass request budget is unknown the same way and holds no one back.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import CollectorRegistry

from autoroll.controller.reconciler import Reconciler, TickReport
from autoroll.core.images import TagRef
from autoroll.core.model import (
    ContainerView,
    Digest,
    Enrolled,
    PodView,
    Unknown,
)
from autoroll.instruments.metrics import Metrics
from autoroll.registry import Limits, RegistryClient
from autoroll.registry.pool import RegistryPool
from tests.faults.rig import REGISTRY_LIMITS, proxied_client
from tests.support.fault_proxy import FaultProxy, ProxyFault
from tests.support.moved_tag import moved_tag
from tests.support.reconciler_fakes import FakeCluster
from tests.support.registry import ImagePusher, RegistryServer
from tests.support.views import deployment_view, pod_view

pytestmark = pytest.mark.integration

RETRY_AFTER = 3


def app_pod(name: str, image: str, running: str) -> PodView:
    """A Ready pod of ``image`` whose runtime reports ``running`` under its own repository."""
    created = datetime.now(UTC) - timedelta(days=1)
    image_id = f"{image.rpartition(':')[0]}@{running}"
    return pod_view(
        name, image, image_id, created=created, namespace="shop", ready_changed_at=created
    )


class TwoRegistries:
    """Workloads on the proxy ``busy`` and one (``calm``) on the proxy ``calm``; every tag
    has moved. ``busy_limits`` are the busy registry's."""

    def __init__(
        self,
        registry: RegistryServer,
        pusher: ImagePusher,
        busy: FaultProxy,
        calm: FaultProxy,
        *,
        busy_workloads: int = 1,
        busy_limits: Limits = REGISTRY_LIMITS,
    ) -> None:
        self.refs: dict[str, TagRef] = {}
        self.new: dict[str, str] = {}
        items = []
        names = [*(f"busy{i}" for i in range(busy_workloads)), "calm"]
        for name in names:
            proxy = calm if name == "calm" else busy
            repository = f"rate/{name}-{time.monotonic_ns()}"
            old, self.new[name] = moved_tag(pusher, repository)
            self.refs[name] = TagRef(proxy.host, repository, "latest")
            image = f"{proxy.host}/{repository}:latest"
            pods = [app_pod(f"{name}-{i}", image, old) for i in (1, 2)]
            items.append(
                Enrolled(
                    deployment_view("shop", name, 2, (ContainerView("app", image, "Always"),)),
                    tuple(pods),
                )
            )
        self.cluster = FakeCluster(items)
        self.metrics = Metrics(CollectorRegistry())

        def client(proxy: FaultProxy, limits: Limits) -> RegistryClient:
            return proxied_client(
                proxy, registry.user, registry.password, limits=limits, observer=self.metrics
            )

        pool = RegistryPool(
            {busy.host: client(busy, busy_limits), calm.host: client(calm, REGISTRY_LIMITS)}
        )
        self.reconciler = Reconciler(
            cluster=self.cluster,
            registry=pool,
            metrics=self.metrics,
            registries={busy.host, calm.host},
            dry_run=False,
        )

    def deleted(self, prefix: str = "") -> list[str]:
        return [name for _, name, _ in self.cluster.deleted if name.startswith(prefix)]


@pytest.fixture
def proxies(registry: RegistryServer) -> Iterator[tuple[FaultProxy, FaultProxy]]:
    with FaultProxy(registry) as busy, FaultProxy(registry) as calm:
        yield busy, calm


def answer(report: TickReport, ref: TagRef) -> Digest | Unknown:
    return report.resolved[ref]


def test_a_registry_answering_429_with_retry_after_is_waited_for_and_the_other_still_rolls(
    registry: RegistryServer, pusher: ImagePusher, proxies: tuple[FaultProxy, FaultProxy]
) -> None:
    busy, calm = proxies
    world = TwoRegistries(registry, pusher, busy, calm)
    busy.fault = ProxyFault("status", status=429, headers=(("Retry-After", str(RETRY_AFTER)),))
    first = world.reconciler.tick()
    asked_at = busy.seen[-1].at
    refused = answer(first, world.refs["busy0"])
    assert isinstance(refused, Unknown) and refused.reason == "rate-limited"
    assert answer(first, world.refs["calm"]) == Digest(world.new["calm"])
    assert world.deleted() == ["calm-1"]  # the other registry's workload rolls at once

    # The quiet registry is healthy again, but it asked for time: several passes inside it
    # send it nothing, take no time waiting for it, and the other workload keeps rolling.
    busy.fault = None
    sent = busy.count()
    for _ in range(5):
        started = time.monotonic()
        report = world.reconciler.tick()
        assert time.monotonic() - started < 1.0, "a pass waited on the quiet registry"
        quiet = answer(report, world.refs["busy0"])
        assert isinstance(quiet, Unknown) and quiet.reason == "backoff"
        assert answer(report, world.refs["calm"]) == Digest(world.new["calm"])
        if time.monotonic() > asked_at + RETRY_AFTER - 0.5:
            break
    assert busy.count() == sent, "the quiet registry was asked during its Retry-After"
    assert world.deleted("busy") == []
    assert world.metrics.registry.get_sample_value(
        "autoroll_registry_errors_total", {"reason": "backoff"}
    )

    # Past the time it named: asked again, and its workload rolls.
    time.sleep(max(0.0, asked_at + RETRY_AFTER + 0.1 - time.monotonic()))
    report = world.reconciler.tick()
    assert answer(report, world.refs["busy0"]) == Digest(world.new["busy0"])
    assert world.deleted("busy") == ["busy0-1"]
    assert all(seen.at >= asked_at + RETRY_AFTER for seen in busy.seen[sent:])


def test_a_registry_past_its_request_budget_is_unknown_and_holds_no_one_back(
    registry: RegistryServer, pusher: ImagePusher, proxies: tuple[FaultProxy, FaultProxy]
) -> None:
    busy, calm = proxies
    world = TwoRegistries(
        registry, pusher, busy, calm, busy_workloads=3, busy_limits=Limits(requests_per_pass=2)
    )
    report = world.reconciler.tick()
    answers = [answer(report, world.refs[f"busy{i}"]) for i in range(3)]
    assert sum(isinstance(a, Digest) for a in answers) == 2
    [spent] = [a for a in answers if isinstance(a, Unknown)]
    assert spent.reason == "budget-exhausted" and "requestsPerPass" in spent.detail
    assert busy.count() == 2  # the budget, and not one request more
    assert answer(report, world.refs["calm"]) == Digest(world.new["calm"])
    assert world.deleted() == ["calm-1"]
    # Deciding the two answered needs their index's children (a GET each): past the budget
    # too, so unknown, never stale: no pod of the busy registry goes this pass.
    assert world.deleted("busy") == []
    # The next pass has a new budget, spent again before a third lookup: no request more.
    world.reconciler.tick()
    assert busy.count() == 4
    assert world.deleted("busy") == []
