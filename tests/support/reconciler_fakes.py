"""Hand-written fakes for a full reconcile pass: the cluster, the registry and the clock, one
Deployment ``web`` enrolled with its pods, and ``make`` to build the ``Reconciler`` over them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from prometheus_client import CollectorRegistry

from autoroll.controller.reconciler import Reconciler
from autoroll.core import model
from autoroll.core.decide import ChildrenRequest, ContentRequest
from autoroll.core.images import TagRef
from autoroll.core.policy import Guardrails
from autoroll.core.ports import ClusterPort
from autoroll.core.scope import FULL, Scope
from autoroll.instruments.metrics import Metrics
from tests.support.views import deployment_view, pod_view

HOST = "git.example.org"
IMAGE = f"{HOST}/team/app:latest"
REF = TagRef(HOST, "team/app", "latest")
OLD = model.Digest("sha256:" + "0" * 64)
NEW = model.Digest("sha256:" + "1" * 64)
CHILD = model.Digest("sha256:" + "2" * 64)
T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
#: No health window: a new digest reaches every workload on its tag in the same pass, as
#: before the window (with one, it proves itself on one workload first: test_rollorder.py).
AT_ONCE = Guardrails(healthy=timedelta(0))


def pod(
    name: str,
    digest: model.Digest | str = OLD,
    *,
    namespace: str = "shop",
    created: datetime = T0 - timedelta(days=1),
    ready: bool = True,
    image: str = IMAGE,
) -> model.PodView:
    image_id = f"{HOST}/team/app@{digest}" if isinstance(digest, model.Digest) else digest
    return pod_view(
        name,
        image,
        image_id,
        namespace=namespace,
        created=created,
        ready=ready,
        ready_changed_at=created,  # Ready (or not) since it started: past any health window
    )


def enrolled(
    name: str, pods: Sequence[model.PodView], *, namespace: str = "shop", image: str = IMAGE
) -> model.Enrolled:
    deployment = deployment_view(
        namespace=namespace,
        name=name,
        replicas=len(pods),
        containers=(model.ContainerView("app", image, "Always"),),
    )
    return model.Enrolled(deployment, tuple(pods))


class FakeCluster:
    """``items`` is what the snapshot finds (a cache, say); ``fresh`` what the API says now
    about a workload's pods (by default the same), read by ``read_now``."""

    def __init__(
        self,
        items: Sequence[model.Enrolled],
        outcome: model.DeleteOutcome = model.DeleteOutcome.DELETED,
    ) -> None:
        self.items = list(items)
        self.fresh: dict[str, Sequence[model.PodView]] = {}
        self.deleted: list[tuple[str, str, str]] = []
        self.outcome = outcome
        self.fail_on: set[str] = set()
        self.scopes: list[Scope] = []
        self.reads: list[str] = []  # workload keys read fresh, in order
        self.calls: list[str] = []  # "snapshot", "read <key>", "delete <pod>", in order

    def snapshot(self, scope: Scope = FULL) -> Sequence[model.Enrolled]:
        self.scopes.append(scope)
        self.calls.append("snapshot")
        return self.items

    def read_now(self, workload: model.WorkloadView) -> model.Enrolled:
        self.reads.append(workload.key)
        self.calls.append(f"read {workload.key}")
        if workload.key in self.fresh:
            return model.Enrolled(workload, tuple(self.fresh[workload.key]))
        pods = next((e.pods for e in self.items if e.workload.key == workload.key), ())
        return model.Enrolled(workload, pods)

    def delete_pod(
        self, namespace: str, name: str, uid: str, *, within: float | None = None
    ) -> model.DeleteOutcome:
        if name in self.fail_on:
            raise RuntimeError(f"API said no to {name}")
        self.calls.append(f"delete {name}")
        self.deleted.append((namespace, name, uid))
        return self.outcome


class FakeRegistry:
    def __init__(self, answers: Mapping[TagRef, model.Digest | model.Unknown]) -> None:
        self.answers = dict(answers)
        self.resolve_calls: list[list[TagRef]] = []
        self.children_answers: dict[model.Digest, frozenset[model.Digest] | model.Unknown] = {}
        self.children_calls: list[model.Digest] = []
        self.cache: dict[model.Digest, frozenset[model.Digest]] = {}  # like the real client's
        # By default each manifest stands for its own config (different digest, different
        # content); tests set other answers, e.g. a mirror's manifest of the target's config.
        self.content_answers: dict[model.Digest, model.ImageContent | model.Unknown] = {}
        self.content_calls: list[ContentRequest] = []
        self.content_cache: dict[model.Digest, model.ImageContent] = {}

    def resolve(self, refs: Iterable[TagRef]) -> Mapping[TagRef, model.Digest | model.Unknown]:
        asked = list(refs)
        self.resolve_calls.append(asked)
        return {r: self.answers.get(r, model.Unknown("not-found")) for r in asked}

    def known_children(self) -> Mapping[model.Digest, frozenset[model.Digest]]:
        return dict(self.cache)

    def fetch_children(
        self, wanted: Iterable[ChildrenRequest]
    ) -> Mapping[model.Digest, frozenset[model.Digest] | model.Unknown]:
        answers: dict[model.Digest, frozenset[model.Digest] | model.Unknown] = {}
        for item in wanted:
            self.children_calls.append(item.digest)
            answer = self.children_answers.get(item.digest, frozenset())
            if isinstance(answer, frozenset):
                self.cache[item.digest] = answer
            answers[item.digest] = answer
        return answers

    def known_content(self) -> Mapping[model.Digest, model.ImageContent]:
        return dict(self.content_cache)

    def fetch_content(
        self, wanted: Iterable[ContentRequest]
    ) -> Mapping[model.Digest, model.ImageContent | model.Unknown]:
        answers: dict[model.Digest, model.ImageContent | model.Unknown] = {}
        for item in wanted:
            self.content_calls.append(item)
            answer = self.content_answers.get(
                item.digest, model.ImageContent(frozenset({item.digest}))
            )
            if isinstance(answer, model.ImageContent):
                self.content_cache[item.digest] = answer
            answers[item.digest] = answer
        return answers


class Clock:
    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def reconciler_with(cluster: ClusterPort, **arguments: Any) -> tuple[Reconciler, Metrics]:
    """A ``Reconciler`` over ``cluster`` that counts into metrics of its own, with whichever
    of its keyword arguments a test is about (events, Nodes, a quarantine, a term, pull
    credentials...). Unless ``arguments`` say otherwise: the registry answers ``REF`` with
    ``NEW``, ``HOST`` is the one registry enrolled, a ``Clock`` stopped at ``T0`` tells the
    time, and deletions are real."""
    metrics = Metrics(CollectorRegistry())
    defaults: dict[str, Any] = {
        "registry": FakeRegistry({REF: NEW}),
        "registries": {HOST},
        "dry_run": False,
        "clock": Clock(),
    }
    return Reconciler(cluster=cluster, metrics=metrics, **(defaults | arguments)), metrics


def make(
    cluster: FakeCluster,
    registry: FakeRegistry | None = None,
    *,
    dry_run: bool = False,
    clock: Clock | None = None,
    guardrails: Guardrails | None = None,
) -> tuple[Reconciler, Metrics]:
    """The common pass: ``reconciler_with`` over ``registry`` (by default one that answers
    ``REF`` with ``NEW``), maybe a dry run, a clock of the test's and guardrails."""
    return reconciler_with(
        cluster,
        registry=registry or FakeRegistry({REF: NEW}),
        dry_run=dry_run,
        clock=clock or Clock(),
        guardrails=guardrails,
    )


def sample(metrics: Metrics, name: str, kind: str = "deployment", **labels: str) -> float:
    """A pass counter's sample; every one is labelled with the workload kind."""
    return metrics.registry.get_sample_value(name, {**labels, "kind": kind}) or 0.0
