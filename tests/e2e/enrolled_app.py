"""How a scenario on the real node sets up its app and waits for the controller: the app on a
registry the node trusts (``make_app``, the ``app`` fixture; ``registry_app`` trusts nothing),
the watch on its pods (``pods``), enrolling it (``enrol``), waiting for passes
(``pass_done_now``, ``full_passes_after``, ``at_least``), and the timing bounds those waits
use.

These stand apart from ``test_scenarios.py`` because most files of the tier enrol an app the
same way; a test module imports them from here, never from another test module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import pytest

from tests.e2e.controller import Autoroll, StartAutoroll
from tests.e2e.helpers import core_api
from tests.e2e.node import Node
from tests.e2e.scenario import App, Recorder, decision_lines, metric
from tests.support.registry import ImagePusher, RegistryServer
from tests.support.wait import eventually, wait_until

POLL = 5  # POLL_INTERVAL_SECONDS: the controller's minimum
SLACK = 4.0  # seconds a busy machine may add to one tick + one kubelet sync
START_TIMEOUT = 90.0  # a fresh Deployment on the real node: sandboxes, pulls, probes
APP_NAME = "web"  # every scenario's app; its pods are labelled app=web


T = TypeVar("T")


def make_app(
    kube: Any,
    namespace: str,
    registry: RegistryServer,
    node: Node,
    *,
    name: str = APP_NAME,
    kind: str = "deployment",
) -> App:
    """An app in ``namespace`` on ``registry``, which the real node trusts: a Deployment named
    ``web`` unless ``name`` and ``kind`` say otherwise."""
    node.trust_registry(registry.host, registry.authorization)
    return registry_app(kube, namespace, registry, name=name, kind=kind)


def registry_app(
    kube: Any,
    namespace: str,
    registry: RegistryServer,
    *,
    name: str = APP_NAME,
    test: str | None = None,
    **fields: Any,
) -> App:
    """An app in ``namespace`` pushed to ``registry`` as ``e2e/<namespace>``, enrolled for the
    controller of test ``test`` (the namespace's own unless given); ``fields`` are more of
    ``App``'s. Nothing is trusted: the caller's node (or the simulated kubelet) reads it."""
    return App(
        kube=kube,
        namespace=namespace,
        name=name,
        repository=f"e2e/{namespace}",
        pusher=ImagePusher(registry),
        test=namespace if test is None else test,
        **fields,
    )


@pytest.fixture
def app(kube: Any, namespace: str, docker_registry: RegistryServer, node: Node) -> App:
    return make_app(kube, namespace, docker_registry, node)


@pytest.fixture
def pods(kube: Any, namespace: str) -> Iterator[Recorder]:
    """Every event of the app's pods (``app=web``), from before the app exists; the
    controller's own pod and unrelated pods are not part of the history."""
    with Recorder(
        core_api(kube).list_namespaced_pod, namespace, label_selector=f"app={APP_NAME}"
    ) as recorder:
        yield recorder
    assert not recorder.errors, f"the pod watch failed: {recorder.errors}"


def first_pass_done(autoroll: Autoroll, app: App) -> None:
    """Wait for autoroll's first decision about ``app`` (its start-up pass)."""
    eventually(
        lambda: nonempty(decision_lines(autoroll, app)),
        timeout=15,
        what=f"autoroll's first decision about {app.namespace}/{app.name}",
    )


def pass_done_now(autoroll: Autoroll, app: App) -> None:
    """Ask for a pass (a signed webhook) and wait until one has decided about ``app`` and
    finished: the state the test sees now is what the controller saw last. The start-up
    pass ends first: a webhook sent while it is still to come would queue a second pass,
    which could then decide about the app after this returns."""
    ok = {"outcome": "ok"}
    wait_until(
        lambda: metric(autoroll, "autoroll_ticks_total", ok) >= 1,
        timeout=15,
        what="autoroll's start-up pass",
        interval=0.1,
    )
    ticks = metric(autoroll, "autoroll_ticks_total", ok)
    seen = len(decision_lines(autoroll, app))
    assert autoroll.webhook() == 202

    def done() -> None:
        assert len(decision_lines(autoroll, app)) > seen, "no new decision about the app"
        assert metric(autoroll, "autoroll_ticks_total", ok) > ticks, "the pass has not ended"

    eventually(done, timeout=15, what=f"a pass deciding about {app.namespace}/{app.name}")


def enrol(
    app: App,
    start_autoroll: StartAutoroll,
    running: str,
    *,
    replicas: int = 3,
    pull_policy: str = "Always",
    **autoroll: Any,
) -> Autoroll:
    """Deploy the app and start autoroll (with ``autoroll`` as its arguments) while the app's
    pods start; once every pod is Ready on ``running``, have a pass decide about the app
    (``pass_done_now``). Returns the controller, right after that pass."""
    app.deploy(replicas=replicas, pull_policy=pull_policy)
    controller = start_autoroll(**autoroll)
    app.wait_rolled(running, replicas=replicas, timeout=START_TIMEOUT)
    pass_done_now(controller, app)
    return controller


def full_passes_after(autoroll: Autoroll, count: int) -> None:
    """Wait until the controller has finished ``count`` more full passes (the poll's, which
    look at every enrolled workload) than it had now; the first may have begun just before."""
    scope = {"scope": "full"}
    start = metric(autoroll, "autoroll_pass_scopes_total", scope)

    def done() -> None:
        seen = metric(autoroll, "autoroll_pass_scopes_total", scope) - start
        assert seen >= count, f"{seen:.0f} of {count} full passes"

    eventually(done, timeout=count * POLL + SLACK, interval=0.25, what=f"{count} more passes")


def nonempty(items: list[T]) -> list[T]:
    assert items, "none yet"
    return items


def at_least(
    count: int, found_so_far: Callable[[], Sequence[object]], *, timeout: float, what: str
) -> None:
    """Wait until ``found_so_far()`` has at least ``count`` items."""

    def enough() -> None:
        found = found_so_far()
        assert len(found) >= count, f"{len(found)} so far: {found[-3:]}"

    eventually(enough, timeout=timeout, interval=0.25, what=what)
