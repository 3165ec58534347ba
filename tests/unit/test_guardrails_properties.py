"""The guardrails' safety rules over any sequence of passes, pushes, clock steps and
controller restarts (hypothesis), through the real shell (``Reconciler``) on a fake clock.

The world is a few enrolled workloads on two tags. A deletion's replacement is created at
once (as a ReplicaSet does), stamped in whole seconds as the API server stamps
``creationTimestamp``, pulls the tag's digest of that moment and becomes Ready after a
delay. Checked over every deletion the cluster received:

1. no window of one budget period holds more deletions than the budget, across restarts,
   but for the one case the design names (docs/adr/016-guardrails.md): a restarted
   controller knows a previous one's deletions only by the replacements it lists as it
   starts, so a deletion whose replacement was itself deleted before then is not known;
2. no workload loses a pod outside its window, or while it (or the cluster) is paused;
3. no deletion starts an image before its min-age: every tag a deleted pod's replacement
   pulls has had that digest for at least the workload's min-age (counted from the push:
   the controller's sighting can only be later);
4. workloads mid-roll never exceed the in-flight budget because of a deletion;
5. no pod is deleted while a pod already running a target it is stale on is inside its
   health window (``ROLL_HEALTHY_SECONDS`` or the workload's annotation): every such pod
   has been Ready, since its last restart, for the whole window. Pods crash now and then
   (a restart: unready, then Ready again after the start delay).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from hypothesis import event, given, settings
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
from autoroll.core.policy import (
    HEALTH_WINDOW,
    MIN_AGE,
    PAUSED,
    WINDOW,
    Guardrails,
    workload_policy,
)
from autoroll.core.scope import FULL, ImageTag, Scope
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


@settings(max_examples=300, deadline=None)
@given(worlds())
def test_no_sequence_of_passes_and_pushes_breaks_a_guardrail(
    case: tuple[World, Guardrails, list[tuple[str, object]]],
) -> None:
    world, guardrails, steps = case
    reconciler = controller(world, guardrails)
    for kind, arg in steps:
        if kind in {"pass", "targeted"}:
            # A targeted pass (a webhook's, the pacer's) is held to every guardrail too.
            world.first_pass.setdefault(world.process, world.now)
            before = len(world.deletions)
            mid_before = mid_roll_count(world)
            if isinstance(arg, TagRef):
                reconciler.tick(scope=Scope.of([ImageTag.of(arg)]))
            else:
                reconciler.tick()
            if guardrails.in_flight and len(world.deletions) > before:
                # A pass may finish rolls and start others, never start past the budget.
                assert mid_roll_count(world) <= max(guardrails.in_flight, mid_before)
        elif kind == "wait":
            assert isinstance(arg, float)
            world.now += timedelta(seconds=arg)
        elif kind == "push":
            assert isinstance(arg, TagRef)
            world.push(arg)
        elif kind == "crash":
            assert isinstance(arg, int)
            world.crash(arg)
        else:
            world.process += 1
            reconciler = controller(world, guardrails)  # every memory lost
    event(f"deletions: {min(len(world.deletions), 10)}{'+' if len(world.deletions) >= 10 else ''}")
    by_name = {w.name: w for w in world.workloads}
    for index, deletion in enumerate(world.deletions):
        # 1. the budget, in every period that ends at a deletion: the deletions made up to it
        # (one made later at the same instant, by a later process, ends a period of its own)
        if guardrails.deletions_per_period:
            window = [
                d
                for d in world.deletions[: index + 1]
                if deletion.at - guardrails.period < d.at <= deletion.at
            ]
            began = world.first_pass[deletion.process]
            unknown = [d for d in window if hidden(d, deletion.process, began)]
            if unknown:
                event("budget: a previous process's deletion unknown to the deciding one")
            assert len(window) - len(unknown) <= guardrails.deletions_per_period, (
                deletion.at,
                len(window),
                len(unknown),
            )
        # 2. the window and the pauses
        workload = by_name[deletion.workload]
        policy = workload_policy(workload.annotations, defaults=guardrails)
        assert policy.is_valid
        assert not guardrails.paused and not policy.paused
        if policy.windows is not None:
            assert policy.windows.is_open(deletion.at), (deletion.at, policy.windows)
        # 3. the min-age of everything the replacement pulled
        for tag, pulled in deletion.pulls.items():
            age = deletion.at - world.pushed_at[pulled]
            assert age >= policy.min_age, (tag, age, policy.min_age)
        # 5. the health window of every pod already on a target the deleted pod was not
        if policy.healthy and deletion.on_target_ready:
            event("health window: a deletion beside pods on the target")
        for ready_at in deletion.on_target_ready if policy.healthy else ():
            assert ready_at is not None, deletion.at
            assert ready_at + policy.healthy <= deletion.at, (ready_at, deletion.at)


def hidden(deletion: Deletion, process: int, began: datetime) -> bool:
    """Is ``deletion`` one the controller ``process`` (acting since ``began``) cannot know?
    Made by an earlier process, and its replacement gone before this one began to act."""
    gone = deletion.replacement.deleted_at
    return deletion.process < process and gone is not None and gone <= began


def test_the_world_rolls_when_nothing_holds_it() -> None:
    """The property is not vacuous: the same world, unhindered, deletes."""
    workload = Workload("w0", TAGS[:1], 2, {})
    world = World([workload], ready_seconds=0.0)
    world.push(TAGS[0])
    unhindered = Guardrails(
        deletions_per_period=1, period=timedelta(seconds=5), healthy=timedelta(0)
    )
    reconciler = controller(world, unhindered)
    for _ in range(4):
        reconciler.tick()
        world.now += timedelta(seconds=5)
    assert len(world.deletions) == 2
    # Exactly a period apart: within a term the budget counts this process's own deletions.
    assert (world.deletions[1].at - world.deletions[0].at).total_seconds() == 5.0


def test_the_next_pod_goes_once_the_replacement_is_through_its_window() -> None:
    """Property 5 is not vacuous either: with a 30 s window the second pod goes
    once the first replacement has been Ready for 30 s, not before; a crash of that
    replacement inside the window holds the roll until it has had a whole window again,
    and quarantines the digest, which holds it until a person clears it."""
    workload = Workload("w0", TAGS[:1], 3, {})
    world = World([workload], ready_seconds=3.0)
    world.push(TAGS[0])
    guardrails = Guardrails(deletions_per_period=0, in_flight=0, healthy=timedelta(seconds=30))
    record = MemoryQuarantine()
    reconciler = controller(world, guardrails, record)
    reconciler.tick()
    assert len(world.deletions) == 1
    first = world.deletions[0].replacement
    for _ in range(6):  # up to 30 s after the replacement was created: Ready 27 s
        world.now += timedelta(seconds=5)
        reconciler.tick()
    assert len(world.deletions) == 1
    world.now += timedelta(seconds=5)  # Ready for 32 s
    reconciler.tick()
    assert len(world.deletions) == 2
    second = world.deletions[1].replacement
    world.now += timedelta(seconds=20)
    world.crash([p.uid for p in workload.pods].index(second.uid))
    for _ in range(6):  # Ready again 3 s after the crash; 30 s after that it may go on
        world.now += timedelta(seconds=5)
        reconciler.tick()
        assert len(world.deletions) == 2
    world.now += timedelta(seconds=5)
    report = reconciler.tick()
    assert len(world.deletions) == 2, "through its window again, but its digest is quarantined"
    assert [h.reason.value for h in report.plan.holds] == ["quarantined"]  # type: ignore[union-attr]
    [entry] = record.book.active
    record.clear(entry.key, now=world.now)
    reconciler.tick()  # a full pass reads the record again
    assert len(world.deletions) == 3
    assert first.restarts == 0 and second.restarts == 1
