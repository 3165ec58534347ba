"""The world the guardrails' properties run in (``tests/unit/test_guardrails_properties.py``): a
few enrolled workloads on two tags behind the real ``Reconciler`` on a fake clock; a deletion's
replacement is created at once, stamped in whole seconds, pulls the tag's digest of that moment
and becomes Ready after a delay. ``worlds`` generates them (hypothesis).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from autoroll.controller.reconciler import Reconciler
from autoroll.core.budget import is_mid_roll
from autoroll.core.decide import ChildrenRequest, ContentRequest, decide
from autoroll.core.images import TagRef
from autoroll.core.model import (
    ContainerStatusView,
    ContainerView,
    DeleteOutcome,
    Digest,
    Enrolled,
    ImageContent,
    PodView,
    Unknown,
    WorkloadView,
)
from autoroll.core.policy import HEALTH_WINDOW, MIN_AGE, PAUSED, WINDOW, Guardrails
from autoroll.core.scope import FULL, Scope
from autoroll.instruments.metrics import Metrics
from tests.support.quarantine import MemoryQuarantine
from tests.support.views import deployment_view

HOST = "forgejo.example"
TAGS = (TagRef(HOST, "team/base", "latest"), TagRef(HOST, "team/side", "v1"))
T0 = datetime(2026, 12, 7, 8, 58, tzinfo=UTC)  # Monday 08:58 UTC
#: Windows that open and close within the minutes and hours a sequence of steps covers.
WINDOWS = ("Mon-Fri 09:00-17:00 UTC", "* 09:01-09:03 UTC", "Mon 08:00-09:00 UTC", "always")
MIN_AGES = ("0", "90s", "10m")
HEALTH_WINDOWS = ("0", "5s", "45s")


def digest(n: int) -> Digest:
    return Digest(f"sha256:{n:064x}")


def config_of(d: Digest) -> ImageContent:
    """Every manifest its own config: a new digest is new content."""
    return ImageContent(frozenset({Digest("sha256:f" + d.value[8:])}))


@dataclass
class FakePod:
    uid: str
    digests: dict[TagRef, Digest]
    created_at: datetime  # whole seconds, as creationTimestamp
    ready_at: datetime  # when it became Ready (again, after its last restart)
    deleted_at: datetime | None = None
    restarts: int = 0
    unready_since: datetime | None = None  # its last restart, if any


@dataclass
class Workload:
    name: str
    tags: tuple[TagRef, ...]
    replicas: int
    annotations: dict[str, str]
    pods: list[FakePod] = field(default_factory=list)

    def view(self) -> WorkloadView:
        return deployment_view(
            namespace="shop",
            name=self.name,
            replicas=self.replicas,
            containers=tuple(ContainerView(t.repository, image(t)) for t in self.tags),
            annotations=tuple(sorted(self.annotations.items())),
        )


def image(tag: TagRef) -> str:
    return f"{tag.host}/{tag.repository}:{tag.tag}"


@dataclass
class Deletion:
    at: datetime
    workload: str
    pulls: dict[TagRef, Digest]  # what the replacement pulled
    process: int  # which controller process deleted
    replacement: FakePod
    #: when each other pod running a target the deleted pod was stale on became Ready
    #: (None: it was not Ready)
    on_target_ready: tuple[datetime | None, ...] = ()


class World:
    """The cluster, the registry and the clock; a ``ClusterPort`` and a ``RegistryPort``."""

    def __init__(self, workloads: list[Workload], ready_seconds: float) -> None:
        self.now = T0
        self.serial = 0
        self.ready = timedelta(seconds=ready_seconds)
        self.tags: dict[TagRef, Digest] = {}
        self.pushed_at: dict[Digest, datetime] = {}
        for tag in TAGS:
            self.push(tag, at=T0 - timedelta(days=1))
        self.workloads = workloads
        for w in workloads:
            w.pods = [self.new_pod(w, created=T0 - timedelta(days=1)) for _ in range(w.replicas)]
        self.deletions: list[Deletion] = []
        self.process = 0  # the controller process now running; a restart starts the next
        self.first_pass: dict[int, datetime] = {}  # when each process began to act
        for tag in TAGS:
            self.push(tag)  # both tags move as the sequence starts

    # -- the world's own moves ------------------------------------------------------------

    def push(self, tag: TagRef, *, at: datetime | None = None) -> None:
        self.serial += 1
        new = digest(self.serial)
        self.tags[tag] = new
        self.pushed_at[new] = at or self.now

    def crash(self, index: int) -> None:
        """A container of some pod restarts: unready now, Ready again after the start delay."""
        pods = [p for w in self.workloads for p in w.pods]
        pod = pods[index % len(pods)]
        pod.restarts += 1
        pod.unready_since = self.now
        pod.ready_at = self.now + max(self.ready, timedelta(seconds=1))

    def new_pod(self, workload: Workload, *, created: datetime) -> FakePod:
        self.serial += 1
        stamp = created.replace(microsecond=0)
        return FakePod(
            f"uid-{self.serial}",
            {t: self.tags[t] for t in workload.tags},
            stamp,
            created + self.ready,
        )

    # -- ClusterPort -------------------------------------------------------------------------

    def snapshot(self, scope: Scope = FULL) -> Sequence[Enrolled]:
        return [
            Enrolled(w.view(), tuple(self.pod_view(w, p) for p in w.pods))
            for w in self.workloads
            if scope.is_full or any(t.repository in scope.repositories for t in w.tags)
        ]

    def read_now(self, workload: WorkloadView) -> Enrolled:
        """The fresh read before a deletion: the world as it is now (it moves only between
        steps, so this is what the snapshot said)."""
        w = next(w for w in self.workloads if w.name == workload.name)
        return Enrolled(w.view(), tuple(self.pod_view(w, p) for p in w.pods))

    def pod_view(self, workload: Workload, pod: FakePod) -> PodView:
        ready = self.now >= pod.ready_at
        return PodView(
            namespace="shop",
            name=pod.uid,
            uid=pod.uid,
            created_at=pod.created_at,
            ready=ready,
            containers=tuple(ContainerView(t.repository, image(t)) for t in workload.tags),
            statuses=tuple(
                ContainerStatusView(
                    t.repository,
                    image_id=f"{t.host}/{t.repository}@{d}",
                    restart_count=pod.restarts,
                )
                for t, d in pod.digests.items()
            ),
            ready_changed_at=pod.ready_at if ready else (pod.unready_since or pod.created_at),
        )

    def delete_pod(
        self, namespace: str, name: str, uid: str, *, within: float | None = None
    ) -> DeleteOutcome:
        for w in self.workloads:
            for p in w.pods:
                if p.uid == uid:
                    moved = {t for t in w.tags if p.digests[t] != self.tags[t]}
                    on_target = tuple(
                        o.ready_at if self.now >= o.ready_at else None
                        for o in w.pods
                        if o is not p and any(o.digests[t] == self.tags[t] for t in moved)
                    )
                    w.pods.remove(p)
                    p.deleted_at = self.now
                    replacement = self.new_pod(w, created=self.now)
                    w.pods.append(replacement)
                    self.deletions.append(
                        Deletion(
                            self.now,
                            w.name,
                            dict(replacement.digests),
                            self.process,
                            replacement,
                            on_target,
                        )
                    )
                    return DeleteOutcome.DELETED
        return DeleteOutcome.ALREADY_GONE

    # -- RegistryPort ------------------------------------------------------------------------

    def resolve(self, refs: Iterable[TagRef]) -> Mapping[TagRef, Digest | Unknown]:
        return {r: self.tags[r] for r in refs}

    def known_children(self) -> Mapping[Digest, frozenset[Digest]]:
        return {d: frozenset() for d in self.pushed_at}

    def fetch_children(
        self, wanted: Iterable[ChildrenRequest]
    ) -> Mapping[Digest, frozenset[Digest] | Unknown]:
        return {w.digest: frozenset() for w in wanted}

    def known_content(self) -> Mapping[Digest, ImageContent]:
        return {d: config_of(d) for d in self.pushed_at}

    def fetch_content(
        self, wanted: Iterable[ContentRequest]
    ) -> Mapping[Digest, ImageContent | Unknown]:
        return {w.digest: config_of(w.digest) for w in wanted}


@st.composite
def worlds(draw: st.DrawFn) -> tuple[World, Guardrails, list[tuple[str, object]]]:
    count = draw(st.integers(1, 5))
    workloads = []
    for i in range(count):
        annotations: dict[str, str] = {}
        if draw(st.booleans()):
            annotations[WINDOW] = draw(st.sampled_from(WINDOWS))
        if draw(st.booleans()):
            annotations[MIN_AGE] = draw(st.sampled_from(MIN_AGES))
        if draw(st.integers(0, 5)) == 0:
            annotations[PAUSED] = "true"
        if draw(st.integers(0, 2)) == 0:
            annotations[HEALTH_WINDOW] = draw(st.sampled_from(HEALTH_WINDOWS))
        tags = draw(st.sampled_from([TAGS[:1], TAGS[1:], TAGS]))
        workloads.append(Workload(f"w{i}", tags, draw(st.integers(1, 3)), annotations))
    guardrails = Guardrails(
        deletions_per_period=draw(st.integers(0, 4)),
        period=timedelta(seconds=draw(st.sampled_from([5, 60]))),
        in_flight=draw(st.integers(0, 3)),
        min_age=timedelta(seconds=draw(st.sampled_from([0, 0, 120]))),
        paused=draw(st.integers(0, 19)) == 0,
        healthy=timedelta(seconds=draw(st.sampled_from([0, 30, 30]))),
    )
    kinds = st.sampled_from(
        ["pass"] * 6 + ["targeted"] * 3 + ["wait"] * 6 + ["push"] * 2 + ["restart", "crash"]
    )
    waits = st.sampled_from([0.4, 1.0, 2.5, 5.0, 30.0, 90.0, 900.0])
    steps: list[tuple[str, object]] = [
        (
            kind,
            draw(waits)
            if kind == "wait"
            else draw(st.sampled_from(TAGS))
            if kind in {"push", "targeted"}
            else draw(st.integers(0, 14))
            if kind == "crash"
            else None,
        )
        for kind in draw(st.lists(kinds, min_size=10, max_size=60))
    ]
    world = World(workloads, ready_seconds=draw(st.sampled_from([0.0, 3.0])))
    return world, guardrails, steps


def controller(
    world: World, guardrails: Guardrails, quarantine: MemoryQuarantine | None = None
) -> Reconciler:
    return Reconciler(
        cluster=world,
        registry=world,
        metrics=Metrics(CollectorRegistry()),
        registries={HOST},
        dry_run=False,
        clock=lambda: world.now,
        guardrails=guardrails,
        quarantine=quarantine,
    )


def mid_roll_count(world: World) -> int:
    """Workloads mid-roll right now, judged as the planner judges (``is_mid_roll``)."""
    resolved = dict(world.tags)
    count = 0
    for enrolled in world.snapshot():
        decision = decide(
            workload=enrolled.workload,
            pods=enrolled.pods,
            registries={HOST},
            resolved=resolved,
            sightings={},
            children=world.known_children(),
            contents=world.known_content(),
        )
        count += is_mid_roll(decision, enrolled.pods)
    return count
