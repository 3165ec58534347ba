"""A property over generated cluster shapes, run through the real adapter and the reconciler.

Each example is one namespace: enrolled Deployments whose selectors overlap (all share
``app=web``), an unenrolled canary Deployment under the same label, a Job's pod and a bare
``helm test`` pod carrying it too; ``minReadySeconds`` per Deployment; a simulated
ReplicaSet controller that replaces a deleted pod (sometimes with a runtime stuck on the
old digest), pods that take a while to become Ready, a Deployment status that may lag one
step behind the pods; and leadership that may lapse between passes (a new term). Passes run
``Reconciler.tick`` over a ``ScriptedWorld`` (``KubeCluster`` on the scripted API).

At every DELETE the test looks at the truth of that moment and asserts: the pod is one its
workload controls (made by that Deployment's ReplicaSet); the status the API holds says the
latest generation observed, every replica updated and available; and every pod of the
workload is there and available (so the deletion makes exactly one unavailable).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from autoroll.core.model import WorkloadKind
from tests.support import scripted_cluster as scripted
from tests.support import shape_passes
from tests.support.answering_registry import AnsweringRegistry

REPO = f"{shape_passes.HOST}/team/web"


@dataclass
class Sim:
    """The truth: which Deployment made each pod, when each pod is Ready, the statuses."""

    world: scripted.ScriptedWorld
    clock: shape_passes.Clock
    replicas: dict[str, int]
    min_ready: dict[str, int]
    made_by: dict[str, str] = field(default_factory=dict)  # pod name -> Deployment
    ready_at: dict[str, datetime] = field(default_factory=dict)  # pod name -> when it is Ready
    serial: int = 0
    deletions: int = 0
    violations: list[str] = field(default_factory=list)  # the executor would swallow a raise

    def pod(
        self, deployment: str, digest: str, ready_in: int, created: datetime | None = None
    ) -> None:
        """A pod its ReplicaSet makes now (or at ``created``), Ready ``ready_in`` s later."""
        self.serial += 1
        name = f"{deployment}-h{len(deployment)}-{self.serial}"
        labels = {"app": "web", "pod-template-hash": f"h{len(deployment)}"}
        if deployment == "canary":
            labels["track"] = "canary"
        created = created or self.clock.now
        self.made_by[name] = deployment
        self.ready_at[name] = created + timedelta(seconds=ready_in)
        self.world.pods.append(
            scripted.pod_doc(
                name,
                labels=labels,
                containers=[scripted.container_doc("app", shape_passes.IMAGE)],
                statuses=[
                    scripted.status_doc(
                        "app", shape_passes.IMAGE, f"{REPO}@{digest}", ready=ready_in == 0
                    )
                ],
                created=created,
                controller=scripted.owner("ReplicaSet", f"{deployment}-h{len(deployment)}"),
                ready=ready_in == 0,
            )
        )

    def step(self, *, stuck: bool, lag: bool) -> None:
        """The kubelet and the ReplicaSet controller catch up; the Deployment controller
        writes its status (or not yet, when ``lag``)."""
        now = self.clock.now
        for doc in self.world.pods:
            name = doc["metadata"]["name"]
            if name in self.ready_at and self.ready_at[name] <= now:
                doc["status"]["conditions"][0].update(
                    {"status": "True", "lastTransitionTime": scripted.stamp(self.ready_at[name])}
                )
                doc["status"]["containerStatuses"][0]["ready"] = True
        for deployment, wanted in self.replicas.items():
            while len(self.pods_of(deployment)) < wanted:
                self.pod(
                    deployment, str(shape_passes.OLD if stuck else shape_passes.NEW), ready_in=7
                )
        if not lag:
            self.write_statuses()

    def pods_of(self, deployment: str) -> list[dict[str, Any]]:
        return [p for p in self.world.pods if self.made_by.get(p["metadata"]["name"]) == deployment]

    def available(self, pod: dict[str, Any], deployment: str) -> bool:
        ready: datetime = self.ready_at[pod["metadata"]["name"]]
        return ready + timedelta(seconds=self.min_ready[deployment]) <= self.clock.now

    def write_statuses(self) -> None:
        for deployment in self.replicas:
            pods = self.pods_of(deployment)
            doc = self.world.workload(WorkloadKind.DEPLOYMENT, deployment)
            available = sum(1 for p in pods if self.available(p, deployment))
            ready = sum(1 for p in pods if self.ready_at[p["metadata"]["name"]] <= self.clock.now)
            doc["status"].update(
                {
                    "observedGeneration": doc["metadata"]["generation"],
                    "replicas": len(pods),
                    "updatedReplicas": len(pods),
                    "readyReplicas": ready,
                    "availableReplicas": available,
                    "unavailableReplicas": max(0, self.replicas[deployment] - available),
                }
            )

    def check_delete(self, path: str) -> None:
        """The truth at the moment a DELETE arrives (module docstring); a broken rule is
        recorded, since an error raised here would reach the executor as a failed call."""
        try:
            self._check_delete(path)
        except AssertionError as exc:
            self.violations.append(str(exc))

    def _check_delete(self, path: str) -> None:
        victim = path.rpartition("/")[2]
        deployment = self.made_by.get(victim)
        assert deployment in ("web", "api"), f"deleted {victim}, not an enrolled workload's pod"
        status = self.world.workload(WorkloadKind.DEPLOYMENT, deployment)["status"]
        wanted = self.replicas[deployment]
        assert status["observedGeneration"] == 1
        assert (
            status["updatedReplicas"] >= wanted and status["replicas"] <= status["updatedReplicas"]
        )
        assert status["availableReplicas"] >= wanted
        pods = self.pods_of(deployment)
        assert len(pods) == wanted, f"deleted {victim} while {deployment} had {len(pods)} pods"
        late = [p["metadata"]["name"] for p in pods if not self.available(p, deployment)]
        assert not late, f"deleted {victim} while {late} were not available"
        self.deletions += 1


def under_the_app_label(name: str, **more: Any) -> dict[str, Any]:
    """A pod no enrolled Deployment controls that still carries ``app=web`` (a Job's, a bare
    ``helm test`` pod), running the old digest."""
    return scripted.pod_doc(
        name,
        labels={"app": "web"},
        containers=[scripted.container_doc("app", shape_passes.IMAGE)],
        statuses=[scripted.status_doc("app", shape_passes.IMAGE, f"{REPO}@{shape_passes.OLD}")],
        created=shape_passes.T0,
        **more,
    )


@st.composite
def shapes(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "replicas": {
            "web": draw(st.integers(1, 3)),
            "api": draw(st.integers(1, 3)),
            "canary": draw(st.integers(1, 2)),
        },
        "min_ready": {d: draw(st.sampled_from([0, 0, 10, 60])) for d in ("web", "api", "canary")},
        "api_narrow": draw(st.booleans()),  # api selects app=web,tier=api: matches nothing
        "steps": draw(
            st.lists(
                st.tuples(
                    st.integers(1, 40),  # seconds since the last pass
                    st.booleans() | st.just(False),  # the status lags this step
                    st.sampled_from([True, True, True, False]),  # this replica leads
                    st.sampled_from([False, False, False, True]),  # replacements stuck on OLD
                ),
                min_size=3,
                max_size=14,
            )
        ),
    }


@settings(max_examples=60, deadline=None)
@given(shapes())
def test_no_deletion_outside_what_the_workloads_controller_calls_complete(
    shape: dict[str, Any],
) -> None:
    clock = shape_passes.Clock(shape_passes.T0 + timedelta(hours=1))
    world = scripted.ScriptedWorld()
    sim = Sim(world, clock, shape["replicas"], shape["min_ready"])
    selectors = {
        "web": {"app": "web"},
        "api": {"app": "web"},
        "canary": {"app": "web", "track": "canary"},
    }
    if shape["api_narrow"]:
        selectors["api"] = {"app": "web", "tier": "api"}
    for name, wanted in sim.replicas.items():
        world.add(
            WorkloadKind.DEPLOYMENT,
            scripted.deployment_doc(
                name,
                replicas=wanted,
                selector=selectors[name],
                containers=[scripted.container_doc("app", shape_passes.IMAGE)],
                min_ready_seconds=sim.min_ready[name],
                enrolled=name != "canary",
            ),
        )
        for _ in range(wanted):
            sim.pod(name, str(shape_passes.OLD), ready_in=0, created=shape_passes.T0)
    world.pods.append(  # a Job's pod and a helm test pod under the app's label
        under_the_app_label(
            "migrate-1",
            controller=scripted.owner("Job", "migrate", api_version="batch/v1"),
            ready=False,
            phase="Succeeded",
        )
    )
    world.pods.append(under_the_app_label("web-test"))
    sim.write_statuses()

    def on_request(w: scripted.ScriptedWorld, method: str, path: str) -> None:
        if method in ("DELETE", "POST") and "/pods/" in path:
            sim.check_delete(path.removesuffix("/eviction"))

    world.on_request = on_request
    leads = [True]
    reconciler = shape_passes.make_reconciler(
        world,
        registry=AnsweringRegistry({shape_passes.REF: shape_passes.NEW}),
        clock=clock,
        leading=lambda: leads[0],
    )
    for seconds, lag, leading, stuck in shape["steps"]:
        clock.now += timedelta(seconds=seconds)
        sim.step(stuck=stuck, lag=lag)
        leads[0] = leading
        reconciler.tick()
    assert not sim.violations, sim.violations
    assert "migrate-1" in {p["metadata"]["name"] for p in world.pods}
    assert "web-test" in {p["metadata"]["name"] for p in world.pods}
    event(f"deletions: {min(sim.deletions, 3)}{'+' if sim.deletions > 3 else ''}")
