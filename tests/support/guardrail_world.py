"""The world the guardrails' properties run in (``tests/unit/test_guardrails_properties.py``): a
few enrolled workloads on two tags behind the real ``Reconciler`` on a fake clock; a deletion's
replacement is created at once, stamped in whole seconds, pulls the tag's digest of that moment
and becomes Ready after a delay. ``worlds`` generates them (hypothesis).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from autoroll.controller.reconciler import Reconciler
from autoroll.core import model
from autoroll.core.budget import is_mid_roll
from autoroll.core.decide import ChildrenRequest, ContentRequest, decide
from autoroll.core.images import TagRef
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


def digest(n: int) -> model.Digest:
    return model.Digest(f"sha256:{n:064x}")


def config_of(d: model.Digest) -> model.ImageContent:
    """Every manifest its own config: a new digest is new content."""
    return model.ImageContent(frozenset({model.Digest("sha256:f" + d.value[8:])}))


@dataclass
class FakePod:
    uid: str
    digests: dict[TagRef, model.Digest]
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

    def view(self) -> model.WorkloadView:
        return deployment_view(
            namespace="shop",
            name=self.name,
            replicas=self.replicas,
            containers=tuple(model.ContainerView(t.repository, image(t)) for t in self.tags),
            annotations=tuple(sorted(self.annotations.items())),
        )


def image(tag: TagRef) -> str:
    return f"{tag.host}/{tag.repository}:{tag.tag}"


@dataclass
class Deletion:
    at: datetime
    workload: str
    pulls: dict[TagRef, model.Digest]  # what the replacement pulled
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
        self.tags: dict[TagRef, model.Digest] = {}
        self.pushed_at: dict[model.Digest, datetime] = {}
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

    def __repr__(self) -> str:
        """What a failing example needs to be read: the workloads as generated."""
        shown = ", ".join(
            f"{w.name}(tags={[t.repository for t in w.tags]}, replicas={w.replicas}, "
            f"annotations={w.annotations})"
            for w in self.workloads
        )
        return f"World(ready={self.ready.total_seconds()}s, workloads=[{shown}])"

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

    def snapshot(self, scope: Scope = FULL) -> Sequence[model.Enrolled]:
        return [
            model.Enrolled(w.view(), tuple(self.pod_view(w, p) for p in w.pods))
            for w in self.workloads
            if scope.is_full or any(t.repository in scope.repositories for t in w.tags)
        ]

    def read_now(self, workload: model.WorkloadView) -> model.Enrolled:
        """The fresh read before a deletion: the world as it is now (it moves only between
        steps, so this is what the snapshot said)."""
        w = next(w for w in self.workloads if w.name == workload.name)
        return model.Enrolled(w.view(), tuple(self.pod_view(w, p) for p in w.pods))

    def pod_view(self, workload: Workload, pod: FakePod) -> model.PodView:
        ready = self.now >= pod.ready_at
        return model.PodView(
            namespace="shop",
            name=pod.uid,
            uid=pod.uid,
            created_at=pod.created_at,
            ready=ready,
            containers=tuple(model.ContainerView(t.repository, image(t)) for t in workload.tags),
            statuses=tuple(
                model.ContainerStatusView(
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
    ) -> model.DeleteOutcome:
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
                    return model.DeleteOutcome.DELETED
        return model.DeleteOutcome.ALREADY_GONE

    # -- RegistryPort ------------------------------------------------------------------------

    def resolve(self, refs: Iterable[TagRef]) -> Mapping[TagRef, model.Digest | model.Unknown]:
        return {r: self.tags[r] for r in refs}

    def known_children(self) -> Mapping[model.Digest, frozenset[model.Digest]]:
        return {d: frozenset() for d in self.pushed_at}

    def fetch_children(
        self, wanted: Iterable[ChildrenRequest]
    ) -> Mapping[model.Digest, frozenset[model.Digest] | model.Unknown]:
        return {w.digest: frozenset() for w in wanted}

    def known_content(self) -> Mapping[model.Digest, model.ImageContent]:
        return {d: config_of(d) for d in self.pushed_at}

    def fetch_content(
        self, wanted: Iterable[ContentRequest]
    ) -> Mapping[model.Digest, model.ImageContent | model.Unknown]:
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


def mid_roll_now(world: World) -> set[str]:
    """The workloads mid-roll right now, judged as the planner judges (``is_mid_roll``) with
    every tag known: what a full pass sees."""
    resolved = dict(world.tags)
    return {
        enrolled.workload.name
        for enrolled in world.snapshot()
        if is_mid_roll(
            decide(
                workload=enrolled.workload,
                pods=enrolled.pods,
                registries={HOST},
                resolved=resolved,
                sightings={},
                children=world.known_children(),
                contents=world.known_content(),
            ),
            enrolled.pods,
        )
    }


class InFlightLedger:
    """Which workloads hold an in-flight slot as a pass can know it (docs/adr/016).

    A full pass judges every workload as it is. A targeted pass judges whole only the
    workloads whose every tag it covers; the others hold a slot as they were last judged
    whole (or since a pod of theirs was deleted): a workload outside the pass that turned
    mid-roll since without a deletion of autoroll's (a pod of it crashed) is not seen until
    the next full pass. A term's first pass is a full one (``Reconciler.tick``) and a new
    term starts from the cluster alone.
    """

    def __init__(self) -> None:
        self.known: dict[str, bool] = {}
        self.term_began = False

    def new_term(self) -> None:
        self.known = {}
        self.term_began = False

    def whole(self, world: World, tag: TagRef | None) -> set[str]:
        """The workloads a pass on ``tag`` (None: a full pass) judges whole."""
        if tag is None or not self.term_began:
            return {w.name for w in world.workloads}
        return {w.name for w in world.workloads if set(w.tags) <= {tag}}

    def count(
        self,
        world: World,
        whole: set[str],
        mid_now: set[str],
        deleted: AbstractSet[str] = frozenset(),
    ) -> int:
        """Slots held, as a pass judging ``whole`` counts them (``mid_now``: who is mid-roll
        now, ``mid_roll_now``; ``deleted``: workloads it deleted a pod of)."""
        remembered = {n for n, mid in self.known.items() if mid} | set(deleted)
        return sum(
            (w.name in mid_now) if w.name in whole else (w.name in remembered)
            for w in world.workloads
        )

    def passed(self, world: World, whole: set[str], mid_now: set[str], deleted: set[str]) -> None:
        """Remember what a pass judged whole (``mid_now`` after it) and whom it deleted from."""
        for w in world.workloads:
            if w.name in whole:
                self.known[w.name] = w.name in mid_now or w.name in deleted
            else:
                self.known[w.name] = self.known.get(w.name, False) or w.name in deleted
        self.term_began = True
