"""The loop guard across interleaved targeted and full passes (hypothesis).

Like the many-pass simulation of ``test_decide_properties.py``, but through the real
``Reconciler``: three Deployments on two tags (one of them using both), tags that move
before some passes, and each pass full or targeted at one tag, in any order. Real creation
times are kept beside the whole-second stamps the core sees, and the snapshot may lag one
pass behind the API (a watched cache), while the fresh read before a deletion does not.

Then: a tag's sighting is never reset while its digest stays (a targeted pass for another
tag leaves it alone); no pass deletes a pod created after its tag's current sighting; a tag
move costs at most one deletion per pod that existed when it was first seen, even when the
runtime keeps reporting old digests; and once full passes go on without a move, every pod
listed at each tag's last sighting has been replaced.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from hypothesis import event, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from autoroll.controller.reconciler import Reconciler
from autoroll.core.decide import Sighting
from autoroll.core.images import TagRef
from autoroll.core.model import (
    ContainerStatusView,
    ContainerView,
    DeleteOutcome,
    Digest,
    Enrolled,
    PodView,
    WorkloadView,
)
from autoroll.core.scope import FULL, ImageTag, Scope
from autoroll.instruments.metrics import Metrics
from tests.support.reconciler_fakes import FakeRegistry
from tests.support.views import deployment_view

HOST = "forgejo.example"
IMAGES = {"app": f"{HOST}/team/app:latest", "side": f"{HOST}/team/side:v1"}
REFS = {"app": TagRef(HOST, "team/app", "latest"), "side": TagRef(HOST, "team/side", "v1")}
SCOPES = {"full": FULL, **{name: Scope.of([ImageTag.of(ref)]) for name, ref in REFS.items()}}
USES = {"a": ("app",), "b": ("side",), "ab": ("app", "side")}
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def digest(tag: str, epoch: int) -> Digest:
    return Digest(f"sha256:{(1 if tag == 'app' else 2) * 1000 + epoch:064x}")


class World:
    """The API's pods (``now``) and a snapshot that may be one pass behind (``seen``)."""

    def __init__(self, counts: dict[str, int], start: datetime) -> None:
        self.views = {
            name: deployment_view(
                "ns",
                name,
                counts[name],
                tuple(ContainerView(t, IMAGES[t], "Always") for t in USES[name]),
            )
            for name in USES
        }
        self.real: dict[str, datetime] = {}
        self.pods: dict[str, list[PodView]] = {}
        self.serial = 0
        for name, count in counts.items():
            self.pods[name] = [
                self.make(name, start - timedelta(milliseconds=300 * (n + 1)), {})
                for n in range(count)
            ]
        self.seen = {name: list(pods) for name, pods in self.pods.items()}

    def make(self, name: str, created: datetime, runs: dict[str, Digest]) -> PodView:
        self.serial += 1
        uid = f"{name}-{self.serial}"
        self.real[uid] = created
        view = self.views[name]
        statuses = tuple(
            ContainerStatusView(
                c.name, c.image, f"{HOST}/team/{c.name}@{runs.get(c.name, digest(c.name, 0))}"
            )
            for c in view.containers
        )
        return PodView(
            "ns",
            uid,
            uid,
            created.replace(microsecond=0),
            containers=view.containers,
            statuses=statuses,
            ready_changed_at=created,  # Ready at once; the health window counts from here
        )

    def running(self, pod: PodView) -> dict[str, Digest]:
        return {s.name: Digest(s.image_id.rpartition("@")[2]) for s in pod.statuses}


class SimCluster:
    def __init__(self, world: World, lag: bool) -> None:
        self.world = world
        self.lag = lag
        self.deleted: list[tuple[str, str]] = []  # (workload, uid)
        self.on_delete: list[tuple[str, PodView]] = []

    def snapshot(self, scope: Scope = FULL) -> Sequence[Enrolled]:
        source = self.world.seen if self.lag else self.world.pods
        return [Enrolled(self.world.views[n], tuple(source[n])) for n in USES]

    def read_now(self, workload: WorkloadView) -> Enrolled:
        return Enrolled(workload, tuple(tuple(self.world.pods[workload.name])))

    def delete_pod(
        self, namespace: str, name: str, uid: str, *, within: float | None = None
    ) -> DeleteOutcome:
        for workload, pods in self.world.pods.items():
            for pod in pods:
                if pod.uid == uid:
                    pods.remove(pod)
                    self.deleted.append((workload, uid))
                    self.on_delete.append((workload, pod))
                    return DeleteOutcome.DELETED
        return DeleteOutcome.ALREADY_GONE


@st.composite
def runs(draw: st.DrawFn) -> dict[str, object]:
    steps = draw(
        st.lists(
            st.tuples(
                st.integers(min_value=401, max_value=2500),  # ms since the previous pass
                st.sampled_from(["-", "-", "-", "app", "side"]),  # a tag moves before it
                st.sampled_from(["full", "app", "side", "app", "side"]),  # the pass's scope
                st.integers(min_value=1, max_value=400),  # ms until a replacement exists
            ),
            min_size=1,
            max_size=25,
        )
    )
    return {
        "counts": {n: draw(st.integers(1, 3 if n != "ab" else 2)) for n in USES},
        "start_ms": draw(st.integers(0, 999)),
        "steps": steps,
        "quirk": draw(st.booleans()),  # the runtime reports the old digests after a pull
        "lag": draw(st.booleans()),  # the snapshot is one pass behind (a watched cache)
    }


@settings(max_examples=300, deadline=None)
@given(runs())
def test_the_loop_guard_holds_across_interleaved_targeted_and_full_passes(
    sim: dict[str, object],
) -> None:
    counts, start, steps = sim["counts"], sim["start_ms"], sim["steps"]
    assert isinstance(counts, dict) and isinstance(start, int) and isinstance(steps, list)
    now = T0 + timedelta(milliseconds=start)
    world = World(counts, now)
    cluster = SimCluster(world, bool(sim["lag"]))
    epochs = {"app": 0, "side": 0}
    registry = FakeRegistry({REFS[t]: digest(t, 0) for t in REFS})
    clock = [now]
    reconciler = Reconciler(
        cluster=cluster,
        registry=registry,
        metrics=Metrics(CollectorRegistry()),
        registries={HOST},
        dry_run=False,
        clock=lambda: clock[0],
    )
    first: dict[tuple[str, int], Sighting] = {}  # each tag's first sighting of each digest
    deleted: dict[tuple[str, int], int] = {}
    quiet = [(60_000, "-", "full", 1)] * (sum(counts.values()) * 2 + 2)

    lagged = {name: list(pods) for name, pods in world.pods.items()}
    for index, (advance_ms, move, scope, delay_ms) in enumerate([*steps, *quiet]):
        now += timedelta(milliseconds=advance_ms)
        clock[0] = now
        if move != "-":
            epochs[move] += 1
            registry.answers[REFS[move]] = digest(move, epochs[move])
        # A lagging snapshot shows the pods as the previous pass began.
        world.seen, lagged = lagged, {name: list(pods) for name, pods in world.pods.items()}
        cluster.on_delete.clear()
        report = reconciler.tick(scope=SCOPES[scope])
        memory = reconciler.sightings
        for tag, ref in REFS.items():
            sighting = memory.get(ref)
            if sighting is None or sighting.digest != digest(tag, epochs[tag]):
                continue
            known = first.setdefault((tag, epochs[tag]), sighting)
            assert sighting == known, f"pass {index}: {tag}'s sighting was reset without a move"
        victims = {pod.uid: (workload, pod) for workload, pod in cluster.on_delete}
        for done in report.executed:
            workload, victim = victims[done.action.uid]
            tag = done.action.container  # the container whose target it does not run
            sighting = memory[REFS[tag]]
            assert sighting.digest == digest(tag, epochs[tag]) == done.action.to_digest
            assert world.real[victim.uid] < sighting.first_seen_at, f"pass {index}: younger pod"
            key = (tag, epochs[tag])
            deleted[key] = deleted.get(key, 0) + 1
            assert deleted[key] <= len(first[key].older_uids), "more deletions than pods"
            targets = {t: digest(t, epochs[t]) for t in USES[workload]}
            runs_then = world.running(victim) if sim["quirk"] else targets
            replacement = world.make(workload, now + timedelta(milliseconds=delay_ms), runs_then)
            world.pods[workload].append(replacement)

    for tag, ref in REFS.items():
        target = digest(tag, epochs[tag])
        stale = {
            p.uid
            for pods in world.pods.values()
            for p in pods
            if world.running(p).get(tag, target) != target
        }
        sighting = reconciler.sightings[ref]
        older = set(sighting.older_uids)
        if not sim["lag"]:
            # Every pass lists every workload using a tag it resolves: no pod older than the
            # sighting is missing from it (a lagging snapshot may miss the newest ones).
            older |= {uid for uid, at in world.real.items() if at < sighting.first_seen_at}
        left = older & stale
        assert not left, f"stale pods older than {tag}'s last sighting were never replaced: {left}"
    event("lagging snapshot" if sim["lag"] else "fresh snapshot")
    event("quirk" if sim["quirk"] else "replacements run the target")
