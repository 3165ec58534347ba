"""The simulation the StatefulSet and DaemonSet properties run in
(``tests/unit/test_workload_properties.py``): each workload's controller and kubelet delete,
recreate and ready pods on their own schedule, write their status only now and then, roll
their own template changes and let nodes go NotReady; ``autoroll_pass`` runs the shell's flow
between their steps, and ``worlds`` generates them (hypothesis).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from hypothesis import event
from hypothesis import strategies as st

from autoroll.core import model
from autoroll.core.decide import Decision, Sighting, decide
from autoroll.core.images import TagRef
from autoroll.core.sightings import listed_uids, observe_targets
from tests.support.decide_strategies import EachItsOwn
from tests.support.kind_views import HOST, IMAGE, REF  # the kinds tables' image

CONTAINERS = (model.ContainerView("app", IMAGE),)
T0 = datetime(2026, 3, 1, tzinfo=UTC)


def digest(n: int) -> model.Digest:
    return model.Digest(f"sha256:{n + 1:064x}")


@dataclass
class SimPod:
    name: str
    uid: str
    created: datetime
    digest: model.Digest
    revision: str
    node: str
    ready: bool = False
    terminating: bool = False
    crashes: bool = False  # never becomes Ready

    def view(self) -> model.PodView:
        status = model.ContainerStatusView(
            "app", IMAGE, f"{HOST}/team/db@{self.digest}", self.ready
        )
        return model.PodView(
            namespace="ns",
            name=self.name,
            uid=self.uid,
            created_at=self.created.replace(microsecond=0),
            ready=self.ready,
            deleting=self.terminating,
            containers=CONTAINERS,
            statuses=(status,),
            revision=self.revision,
            node=self.node,
        )


@dataclass
class World:
    """One workload, its pods, its controller's lagging status, its nodes and the registry."""

    kind: model.WorkloadKind
    size: int  # StatefulSet replicas, or DaemonSet nodes
    on_delete: bool = False
    partition: int = 0
    now: datetime = T0
    generation: int = 1
    observed: int = 1
    target: int = 0  # the tag's digest number
    crashing: bool = False  # pods created from now on never become Ready
    pods: dict[str, SimPod] = field(default_factory=dict)
    node_ready: dict[str, bool] = field(default_factory=dict)
    current_revision: str = "r1"
    status: model.StatefulSetStatus | model.DaemonSetStatus | None = None
    serial: int = 0
    deleted_by_autoroll: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        for slot in self.slots():
            self.node_ready[self.node_of(slot)] = True
            pod = self.create(slot, self.revision_for(slot), created=self.now - timedelta(hours=1))
            pod.ready = True
        self.write_status()

    # -- the workload's shape --------------------------------------------------------------

    @property
    def name(self) -> str:
        return "db" if self.kind is model.WorkloadKind.STATEFULSET else "agent"

    @property
    def update_revision(self) -> str:
        """The revision of the latest template: what a recreated pod is made from."""
        return f"r{self.generation}"

    def slots(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.size)]

    def node_of(self, slot: str) -> str:
        if self.kind is model.WorkloadKind.STATEFULSET:
            return "n0"
        return f"n{slot.rpartition('-')[2]}"

    def revision_for(self, slot: str) -> str:
        """What the controller creates a pod from: a partition keeps the ordinals below it
        at the current revision."""
        ordinal = int(slot.rpartition("-")[2])
        held = (
            self.kind is model.WorkloadKind.STATEFULSET
            and not self.on_delete
            and ordinal < self.partition
        )
        return self.current_revision if held else self.update_revision

    def create(self, slot: str, revision: str, *, created: datetime) -> SimPod:
        self.serial += 1
        pod = SimPod(
            slot,
            f"uid-{self.serial}",
            created,
            digest(self.target),
            revision,
            self.node_of(slot),
            crashes=self.crashing,
        )
        self.pods[slot] = pod
        return pod

    # -- the controller and the kubelet ----------------------------------------------------

    def kubelet(self, ready_some: int, *, finish: bool = True, flap: str | None = None) -> None:
        """Terminating pods go (when ``finish``), up to ``ready_some`` pods become Ready on
        Ready nodes, and pod ``flap`` (if any) fails its readiness probe."""
        for pod in list(self.pods.values()):
            if pod.terminating and finish:
                del self.pods[pod.name]
        if flap in self.pods and not self.pods[flap].terminating:
            self.pods[flap].ready = False
        waiting = [p for p in self.pods.values() if not p.ready and not p.crashes]
        for pod in waiting[:ready_some]:
            if self.node_ready[pod.node]:
                pod.ready = True

    def controller(self) -> None:
        """Recreate missing pods (a StatefulSet in order, one at a time), roll its own
        template changes (RollingUpdate: highest ordinal first, down to the partition), then
        write its status."""
        self.observed = self.generation
        missing = [s for s in self.slots() if s not in self.pods]
        if self.kind is model.WorkloadKind.STATEFULSET and missing:
            # OrderedReady: the first missing ordinal, once every ordinal before it is Ready.
            before = self.slots()[: self.slots().index(missing[0])]
            if all(self.pods[s].ready for s in before):
                self.create(missing[0], self.revision_for(missing[0]), created=self.now)
        elif missing:
            for slot in missing:
                self.create(slot, self.update_revision, created=self.now)
        else:
            self.roll_own_template()
        self.write_status()

    def roll_own_template(self) -> None:
        """RollingUpdate: one pod at a time while all are Ready, a StatefulSet from its
        highest ordinal down to the partition; OnDelete: nothing (the user deletes)."""
        if self.on_delete or any(not p.ready or p.terminating for p in self.pods.values()):
            return
        floor = self.partition if self.kind is model.WorkloadKind.STATEFULSET else 0
        for slot in reversed(self.slots()[floor:]):
            if self.pods[slot].revision != self.update_revision:
                self.pods[slot].terminating = True
                return
        if all(p.revision == self.update_revision for p in self.pods.values()):
            self.current_revision = self.update_revision

    def write_status(self) -> None:
        live = [p for p in self.pods.values() if not p.terminating]
        ready = sum(1 for p in live if p.ready)
        if self.kind is model.WorkloadKind.STATEFULSET:
            self.status = model.StatefulSetStatus(
                update_strategy=(
                    model.UpdateStrategy.ON_DELETE
                    if self.on_delete
                    else model.UpdateStrategy.ROLLING_UPDATE
                ),
                partition=self.partition,
                ready_replicas=ready,
                available_replicas=ready,  # no minReadySeconds here: Ready is available
                observed_generation=self.observed,
                current_revision=self.current_revision,
                update_revision=self.update_revision,
            )
        else:
            updated = sum(1 for p in live if p.revision == self.update_revision)
            self.status = model.DaemonSetStatus(
                desired_number_scheduled=self.size,
                number_ready=ready,
                number_available=ready,
                number_unavailable=self.size - ready,
                updated_number_scheduled=updated,
                observed_generation=self.observed,
            )

    # -- autoroll --------------------------------------------------------------------------

    def view(self) -> model.WorkloadView:
        return model.WorkloadView(
            "ns",
            self.name,
            self.size,
            CONTAINERS,
            uid="uid-w",
            generation=self.generation,
            kind=self.kind,
            status=self.status,
        )

    def node_view(self, name: str) -> model.NodeView:
        return model.NodeView(name, self.node_ready[name])

    def assert_safe_to_delete(self, victim: str) -> None:
        """The truth at the moment of the deletion, not the lagging status."""
        for slot in self.slots():
            pod = self.pods.get(slot)
            assert pod is not None, f"deleted {victim} while {slot} was missing"
            assert not pod.terminating, f"deleted {victim} while {slot} was terminating"
            assert pod.ready, f"deleted {victim} while {slot} was not Ready"
        pod = self.pods[victim]
        assert self.node_ready[pod.node], f"deleted {victim} on a NotReady node"
        # Its replacement is made from the latest template: anything else is a release.
        assert pod.revision == self.update_revision, (
            f"deleted {victim} at {pod.revision}: it comes back at {self.update_revision}"
        )
        assert not any(p.crashes for p in self.pods.values()), "deleted after a crash-loop"


def autoroll_pass(world: World, memory: dict[TagRef, Sighting]) -> dict[TagRef, Sighting]:
    """The reconciler's flow for one workload: list, then the clock, then the registry;
    decide, read the Nodes asked for, decide again; delete what was decided."""
    pods = [p.view() for p in world.pods.values()]
    workload = world.view()
    listed = listed_uids([(workload, pods)], registries={HOST})
    target = digest(world.target)
    memory = observe_targets(memory, {REF: target}, now=world.now, listed=listed)
    nodes: dict[str, model.NodeView | model.Unknown] = {}

    def run() -> Decision:
        return decide(
            workload=workload,
            pods=pods,
            registries={HOST},
            resolved={REF: target},
            sightings=memory,
            children={target: frozenset()},
            contents=EachItsOwn(),
            nodes=nodes,
        )

    decision = run()
    if decision.needs_nodes:
        for request in decision.needs_nodes:
            nodes[request.name] = world.node_view(request.name)
        decision = run()
    assert len(decision.actions) <= 1
    for action in decision.actions:
        world.assert_safe_to_delete(action.name)
        assert world.pods[action.name].uid == action.uid
        world.pods[action.name].terminating = True
        world.deleted_by_autoroll.append(action.name)
        event(f"{world.kind}: deleted a pod")
    return memory


def mostly(likely: object, rare: object) -> st.SearchStrategy[object]:
    return st.sampled_from([likely, likely, likely, rare])


@st.composite
def worlds(draw: st.DrawFn) -> tuple[World, list[tuple[object, ...]]]:
    kind = draw(st.sampled_from([model.WorkloadKind.STATEFULSET, model.WorkloadKind.DAEMONSET]))
    size = draw(st.integers(1, 4))
    world = World(
        kind,
        size,
        on_delete=draw(st.booleans()),
        partition=draw(st.integers(0, size)),
    )
    steps = draw(
        st.lists(
            st.tuples(
                st.integers(200, 3000),  # ms since the previous step
                st.sampled_from(["none"] * 5 + ["push"] * 3 + ["template", "crash"]),
                st.booleans(),  # the controller syncs (and writes its status)
                st.integers(0, 2),  # pods the kubelet readies
                mostly(True, False),  # terminating pods are gone (else they linger)
                st.one_of(st.none(), st.none(), st.integers(0, 3)),  # a pod turns unready
                st.one_of(st.none(), st.integers(0, 3)),  # a node flips its readiness
                st.booleans(),  # autoroll runs a pass
            ),
            min_size=1,
            max_size=40,
        )
    )
    # A crash-looping image in one world out of four: it halts everything after it.
    if draw(st.integers(0, 3)):
        steps = [
            (*step[:1], "none" if step[1] == "crash" else step[1], *step[2:]) for step in steps
        ]
    return world, steps
