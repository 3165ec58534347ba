"""Whole passes over cluster shapes real users have, through the real Kubernetes adapter.

Each test is one finding of the cluster-shapes review (issue 23): the API answers are
scripted (``tests/support/scripted_cluster.py``) as the Deployment, ReplicaSet and Job
controllers and a kubelet write them, and the pass runs through ``KubeCluster`` and the
``Reconciler`` as in production. What is asserted is what a user sees: which pod gets a
DELETE, if any.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from autoroll.controller.executor import Executor, Outcome
from autoroll.controller.reconciler import Reconciler
from autoroll.core.decide import ChildrenRequest, ContentRequest, DeletePod
from autoroll.core.images import TagRef
from autoroll.core.model import Digest, ImageContent, Unknown, WorkloadKind
from autoroll.edge.plan import render, run_plan
from autoroll.instruments.metrics import Metrics
from tests.support.scripted_cluster import (
    ScriptedWorld,
    container_doc,
    deployment_doc,
    owner,
    pod_doc,
    status_doc,
)

HOST = "git.example.org"
IMAGE = f"{HOST}/team/web:latest"
REF = TagRef(HOST, "team/web", "latest")
OLD = Digest("sha256:" + "a" * 64)
NEW = Digest("sha256:" + "b" * 64)
T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
NOW = T0 + timedelta(hours=1)
HASH = "5d8f7c6b9"


class Registry:
    """The registry's answers: each ref's digest; each manifest stands for its own config."""

    def __init__(self, answers: Mapping[TagRef, Digest | Unknown]) -> None:
        self.answers = dict(answers)
        self.children: dict[Digest, frozenset[Digest] | Unknown] = {}
        self.content: dict[Digest, ImageContent | Unknown] = {}

    def resolve(self, refs: Iterable[TagRef]) -> Mapping[TagRef, Digest | Unknown]:
        return {r: self.answers.get(r, Unknown("not-found")) for r in refs}

    def known_children(self) -> Mapping[Digest, frozenset[Digest]]:
        return {}

    def fetch_children(
        self, wanted: Iterable[ChildrenRequest]
    ) -> Mapping[Digest, frozenset[Digest] | Unknown]:
        return {w.digest: self.children.get(w.digest, frozenset()) for w in wanted}

    def known_content(self) -> Mapping[Digest, ImageContent]:
        return {}

    def fetch_content(
        self, wanted: Iterable[ContentRequest]
    ) -> Mapping[Digest, ImageContent | Unknown]:
        return {
            w.digest: self.content.get(w.digest, ImageContent(frozenset({w.digest})))
            for w in wanted
        }


class Clock:
    def __init__(self, now: datetime = NOW) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def app_pod(
    name: str,
    *,
    digest: Digest = OLD,
    rs: str = f"web-{HASH}",
    pod_hash: str = HASH,
    labels: Mapping[str, str] | None = None,
    controller: dict[str, Any] | str | None = "rs",
    created: datetime = T0,
    ready_since: datetime | None = None,
    ready: bool = True,
    image: str = IMAGE,
) -> dict[str, Any]:
    """A pod of Deployment ``web`` by default: controlled by its ReplicaSet, labelled by it."""
    found = dict(labels or {"app": "web"})
    if pod_hash:
        found["pod-template-hash"] = pod_hash
    ref = owner("ReplicaSet", rs) if controller == "rs" else controller
    assert not isinstance(ref, str)
    repo = image.rsplit(":", 1)[0]
    return pod_doc(
        name,
        labels=found,
        containers=[container_doc("app", image)],
        statuses=[status_doc("app", image, f"{repo}@{digest}", ready=ready)],
        created=created,
        controller=ref,
        ready=ready,
        ready_since=ready_since,
    )


def web(**kwargs: Any) -> dict[str, Any]:
    return deployment_doc("web", containers=[container_doc("app", IMAGE)], **kwargs)


def run_pass(
    world: ScriptedWorld,
    *,
    registry: Registry | None = None,
    clock: Clock | None = None,
    leading: Callable[[], bool] | None = None,
    kinds: tuple[WorkloadKind, ...] = (WorkloadKind.DEPLOYMENT,),
    reconciler: Reconciler | None = None,
) -> list[str]:
    """One full pass; the names of the pods it deleted."""
    before = len(world.deleted)
    if reconciler is None:
        reconciler = make_reconciler(
            world, registry=registry, clock=clock, leading=leading, kinds=kinds
        )
    reconciler.tick()
    return world.deleted[before:]


def make_reconciler(
    world: ScriptedWorld,
    *,
    registry: Registry | None = None,
    clock: Clock | None = None,
    leading: Callable[[], bool] | None = None,
    kinds: tuple[WorkloadKind, ...] = (WorkloadKind.DEPLOYMENT,),
    **options: Any,
) -> Reconciler:
    """A reconciler over ``world``'s cluster; ``options`` are the Reconciler's own."""
    cluster = world.cluster(kinds=kinds)
    extra: dict[str, Any] = dict(options)
    if leading is not None:
        extra.update(leading=leading, may_act=leading)
    return Reconciler(
        cluster=cluster,
        registry=registry or Registry({REF: NEW}),
        metrics=Metrics(CollectorRegistry()),
        registries={HOST},
        dry_run=False,
        clock=clock or Clock(),
        nodes=cluster,
        **extra,
    )


# --- 1. a workload claims only the pods it controls ------------------------------------------


def canary_pod() -> dict[str, Any]:
    """Deployment ``canary`` (selector app=web, track=canary): its pod carries ``app=web``."""
    return app_pod(
        "canary-7c9d5b8f4-x2x9q",
        rs="canary-7c9d5b8f4",
        pod_hash="7c9d5b8f4",
        labels={"app": "web", "track": "canary"},
        created=T0 - timedelta(days=3),  # the oldest: first in line if it were web's
    )


def test_a_canary_pod_under_the_apps_label_never_fills_the_count_nor_goes() -> None:
    # A ResourceQuota of 3 pods: web (3 replicas) got 2, the canary took the third.
    world = ScriptedWorld()
    world.add(
        WorkloadKind.DEPLOYMENT,
        web(
            status={
                "replicas": 2,
                "updatedReplicas": 2,
                "readyReplicas": 2,
                "availableReplicas": 2,
                "unavailableReplicas": 1,
            },
        ),
    )
    world.add(
        WorkloadKind.DEPLOYMENT,
        deployment_doc(
            "canary",
            replicas=1,
            selector={"app": "web", "track": "canary"},
            containers=[container_doc("app", IMAGE)],
            enrolled=False,
        ),
    )
    world.pods = [canary_pod(), app_pod(f"web-{HASH}-a"), app_pod(f"web-{HASH}-b")]
    # web is one replica short: nothing of it may go, and the canary's pod is not web's.
    assert run_pass(world) == []


@pytest.mark.parametrize(
    "foreign",
    [
        pytest.param(canary_pod(), id="a canary Deployment's pod"),
        pytest.param(
            app_pod(
                "migrate-x7k2p",
                controller=owner("Job", "migrate", api_version="batch/v1"),
                pod_hash="",
                created=T0 - timedelta(days=3),
            ),
            id="a Job's pod",
        ),
        pytest.param(
            app_pod(
                "web-test-connection", controller=None, pod_hash="", created=T0 - timedelta(days=3)
            ),
            id="a helm test pod",
        ),
    ],
)
def test_a_pod_its_selector_matches_but_another_controller_owns_is_never_deleted(
    foreign: dict[str, Any],
) -> None:
    world = ScriptedWorld()
    world.add(WorkloadKind.DEPLOYMENT, web(replicas=2))
    world.pods = [foreign, app_pod(f"web-{HASH}-a"), app_pod(f"web-{HASH}-b")]
    deleted = run_pass(world)
    assert foreign["metadata"]["name"] not in deleted
    assert deleted == [f"web-{HASH}-a"]  # one of web's own, the oldest first


# --- 2. settled means what the Deployment controller says -----------------------------------


@pytest.mark.parametrize(
    "deployment",
    [
        pytest.param(
            web(min_ready_seconds=600, status={"availableReplicas": 0, "unavailableReplicas": 3}),
            id="minReadySeconds: Ready seconds ago, 0 available",
        ),
        pytest.param(web(paused=True), id="spec.paused"),
        pytest.param(
            web(generation=2, status={"observedGeneration": 1}), id="observedGeneration behind"
        ),
        pytest.param(web(status={"updatedReplicas": 2}), id="2 of 3 replicas updated"),
        pytest.param(web(status={"replicas": 4}), id="an old replica pending termination"),
        pytest.param(
            web(
                status={
                    "conditions": [
                        {
                            "type": "Progressing",
                            "status": "False",
                            "reason": "ProgressDeadlineExceeded",
                        }
                    ]
                }
            ),
            id="progress deadline exceeded",
        ),
        pytest.param(web(status={}), id="no status written yet"),
    ],
)
def test_a_deployment_its_controller_does_not_call_complete_loses_no_pod(
    deployment: dict[str, Any],
) -> None:
    world = ScriptedWorld()
    world.add(WorkloadKind.DEPLOYMENT, deployment)
    ready_since = NOW - timedelta(seconds=5)
    world.pods = [app_pod(f"web-{HASH}-{c}", ready_since=ready_since) for c in "abc"]
    assert run_pass(world) == []


def test_min_ready_seconds_is_honoured_from_the_pods_even_when_the_status_lags() -> None:
    # The status still says all 3 available (written before the last replacement), but
    # one pod became Ready 5 s ago under minReadySeconds 30: it is not available yet.
    world = ScriptedWorld()
    world.add(WorkloadKind.DEPLOYMENT, web(min_ready_seconds=30))
    world.pods = [
        app_pod(f"web-{HASH}-a"),
        app_pod(f"web-{HASH}-b"),
        app_pod(
            f"web-{HASH}-c",
            digest=NEW,
            created=NOW - timedelta(seconds=20),
            ready_since=NOW - timedelta(seconds=5),
        ),
    ]
    assert run_pass(world) == []


# --- 3. the last read before a DELETE is whole ----------------------------------------------


def changed_before_the_fresh_read(change: Callable[[dict[str, Any]], None]) -> ScriptedWorld:
    """A world where, once the pass has listed the pods, ``change`` is made to web."""
    world = ScriptedWorld()
    world.add(WorkloadKind.DEPLOYMENT, web(replicas=2))
    world.pods = [app_pod(f"web-{HASH}-a"), app_pod(f"web-{HASH}-b")]
    pod_lists = 0

    def on_request(w: ScriptedWorld, method: str, path: str) -> None:
        nonlocal pod_lists
        if method == "GET" and path.endswith("/pods"):
            pod_lists += 1
            if pod_lists == 1:  # after the pass's own listing, before anything else
                change(w.workload(WorkloadKind.DEPLOYMENT, "web"))

    world.on_request = on_request
    return world


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(
            lambda d: d["metadata"]["annotations"].update({"autoroll.aethnet.se/paused": "true"}),
            id="paused annotation",
        ),
        pytest.param(lambda d: d["metadata"]["labels"].clear(), id="enrolment label removed"),
        pytest.param(
            lambda d: (d["spec"].update({"replicas": 4}), d["metadata"].update({"generation": 2})),
            id="scaled up (HPA)",
        ),
        pytest.param(
            lambda d: d["metadata"]["annotations"].update(
                {"autoroll.aethnet.se/window": "Mon 00:00-00:01 UTC"}
            ),
            id="a closed maintenance window",
        ),
    ],
)
def test_what_the_fresh_read_of_the_deployment_says_is_what_is_acted_on(
    change: Callable[[dict[str, Any]], None],
) -> None:
    world = changed_before_the_fresh_read(change)
    assert run_pass(world) == []


# --- 4. loop-guard memory belongs to one leadership term ------------------------------------


def test_a_revert_rolls_after_another_leader_rolled_in_between() -> None:
    world = ScriptedWorld()
    world.add(WorkloadKind.DEPLOYMENT, web(replicas=2))
    world.pods = [app_pod(f"web-{HASH}-a"), app_pod(f"web-{HASH}-b")]
    registry, clock = Registry({REF: OLD}), Clock()
    leads = [True]
    reconciler = make_reconciler(world, registry=registry, clock=clock, leading=lambda: leads[0])
    assert run_pass(world, reconciler=reconciler) == []  # R1 sees the tag at OLD: current
    leads[0] = False  # R1 loses the Lease; the new leader rolls web to NEW
    assert run_pass(world, reconciler=reconciler) == []
    clock.now += timedelta(minutes=5)
    world.pods = [
        app_pod(f"web-{HASH}-c", digest=NEW, created=clock.now - timedelta(minutes=2)),
        app_pod(f"web-{HASH}-d", digest=NEW, created=clock.now - timedelta(minutes=1)),
    ]
    registry.answers[REF] = OLD  # then the tag is reverted
    clock.now += timedelta(minutes=5)
    leads[0] = True  # R1 leads again: the revert must roll
    assert run_pass(world, reconciler=reconciler) == [f"web-{HASH}-c"]


@pytest.mark.parametrize("new_term", [True, False])
def test_a_new_term_starts_from_the_cluster_even_without_a_pass_between_terms(
    new_term: bool,
) -> None:
    """Leadership lapsed and came back while no pass ran (a long pass, a slow poll): the
    Elector's term says so, and the new term's memory starts empty. In the same term the
    memory stands (the control row): the pods made after its sighting, and after a deletion
    it remembers, are spared as its own replacements would be."""
    world = ScriptedWorld()
    world.add(WorkloadKind.DEPLOYMENT, web(replicas=2))
    world.pods = [app_pod(f"web-{HASH}-a"), app_pod(f"web-{HASH}-b")]
    registry, clock, terms = Registry({REF: OLD}), Clock(), [1]
    reconciler = make_reconciler(world, registry=registry, clock=clock, term=lambda: terms[0])
    assert run_pass(world, reconciler=reconciler) == []
    [before] = world.cluster().snapshot()
    reconciler._rolls.deleting(before)  # a roll it began in this term
    clock.now += timedelta(minutes=5)
    world.pods = [  # another leader rolled web to NEW meanwhile; the tag is back at OLD
        app_pod(f"web-{HASH}-c", digest=NEW, created=clock.now - timedelta(minutes=2)),
        app_pod(f"web-{HASH}-d", digest=NEW, created=clock.now - timedelta(minutes=1)),
    ]
    terms[0] = 2 if new_term else 1
    clock.now += timedelta(minutes=5)
    expected = [f"web-{HASH}-c"] if new_term else []
    assert run_pass(world, reconciler=reconciler) == expected


def test_a_revert_within_one_poll_interval_rolls_pods_recreated_meanwhile() -> None:
    # A -> B -> A between two polls while a node drain recreated the pods: they pulled B.
    world = ScriptedWorld()
    world.add(WorkloadKind.DEPLOYMENT, web(replicas=2))
    world.pods = [app_pod(f"web-{HASH}-a"), app_pod(f"web-{HASH}-b")]
    registry, clock = Registry({REF: OLD}), Clock()
    reconciler = make_reconciler(world, registry=registry, clock=clock)
    assert run_pass(world, reconciler=reconciler) == []
    clock.now += timedelta(seconds=30)
    world.pods = [
        app_pod(f"web-{HASH}-c", digest=NEW, created=clock.now - timedelta(seconds=20)),
        app_pod(f"web-{HASH}-d", digest=NEW, created=clock.now - timedelta(seconds=19)),
    ]
    clock.now += timedelta(seconds=30)
    assert run_pass(world, reconciler=reconciler) == [f"web-{HASH}-c"]


# --- 5. a DaemonSet's Node is read fresh before its pod is deleted --------------------------


def test_a_daemonset_pod_goes_only_while_its_node_is_ready_at_the_fresh_read() -> None:
    world = ScriptedWorld()
    agent = deployment_doc("agent", containers=[container_doc("app", IMAGE)])
    agent["kind"] = "DaemonSet"
    del agent["spec"]["replicas"]
    agent["status"] = {
        "observedGeneration": 1,
        "desiredNumberScheduled": 1,
        "currentNumberScheduled": 1,
        "numberReady": 1,
        "numberAvailable": 1,
        "updatedNumberScheduled": 1,
    }
    world.add(WorkloadKind.DAEMONSET, agent)
    world.pods = [
        app_pod(
            "agent-x1",
            labels={"app": "agent"},
            pod_hash="",
            controller=owner("DaemonSet", "agent") | {"uid": "uid-agent"},
        )
    ]
    ready = {"type": "Ready", "status": "True"}
    world.nodes["node-1"] = {"metadata": {"name": "node-1"}, "status": {"conditions": [ready]}}
    node_reads = 0

    def on_request(w: ScriptedWorld, method: str, path: str) -> None:
        nonlocal node_reads
        if path.startswith("/api/v1/nodes/"):
            node_reads += 1
            if node_reads == 2:  # Ready when the pass read it; not by the read before a DELETE
                w.nodes["node-1"]["status"]["conditions"] = [{"type": "Ready", "status": "False"}]

    world.on_request = on_request
    assert run_pass(world, kinds=(WorkloadKind.DAEMONSET,)) == []


# --- 5. a DELETE starts only while the Lease's authority covers it --------------------------


def one_stale_pod() -> tuple[ScriptedWorld, DeletePod]:
    world = ScriptedWorld()
    world.pods = [app_pod(f"web-{HASH}-a")]
    action = DeletePod(
        "shop", f"web-{HASH}-a", f"uid-web-{HASH}-a", "stale", IMAGE, OLD, NEW, "web", "app"
    )
    return world, action


def test_a_delete_is_bounded_by_the_authority_left_and_no_retry_outlives_it() -> None:
    world, action = one_stale_pod()
    executor = Executor(
        cluster=world.cluster(), dry_run=False, may_act=lambda: True, authority=lambda: 3.0
    )
    assert executor.execute(action).outcome is Outcome.DELETED
    assert world.api is not None
    connect, read = world.api.timeouts[-1]
    # One reconnect is allowed: both attempts and the read must end within the 3 s left.
    assert 2 * connect + read <= 3.0


def test_no_delete_starts_when_too_little_authority_is_left() -> None:
    world, action = one_stale_pod()
    executor = Executor(
        cluster=world.cluster(), dry_run=False, may_act=lambda: True, authority=lambda: 0.2
    )
    assert executor.execute(action).outcome is Outcome.NOT_LEADER
    assert world.deleted == []
    assert world.requests == []


# --- 5. a bare sha256: imageID is a child of the target index before it is a config ---------


def test_a_bare_digest_that_is_a_child_of_the_target_index_is_current() -> None:
    child = Digest("sha256:" + "d" * 64)
    registry = Registry({REF: NEW})
    registry.children[NEW] = frozenset({child})
    registry.content[NEW] = ImageContent(frozenset({Digest("sha256:" + "e" * 64)}))
    world = ScriptedWorld()
    world.add(WorkloadKind.DEPLOYMENT, web(replicas=2))
    world.pods = [app_pod(f"web-{HASH}-{c}") for c in "ab"]
    for pod in world.pods:
        pod["status"]["containerStatuses"][0]["imageID"] = str(child)
    assert run_pass(world, registry=registry) == []


# --- 6. native sidecars and init containers on a moved tag ----------------------------------


SIDECAR_IMAGE = IMAGE
APP_IMAGE = f"{HOST}/team/app@sha256:{'c' * 64}"  # pinned: only the sidecar can move


@pytest.mark.parametrize(
    "restart_policy", [pytest.param("Always", id="native sidecar"), pytest.param(None, id="init")]
)
def test_an_init_container_or_native_sidecar_on_a_moved_tag_is_rolled(
    restart_policy: str | None,
) -> None:
    extra = {"restartPolicy": restart_policy} if restart_policy else {}
    init = container_doc("proxy", SIDECAR_IMAGE, **extra)
    world = ScriptedWorld()
    world.add(
        WorkloadKind.DEPLOYMENT,
        deployment_doc(
            "web",
            replicas=2,
            containers=[container_doc("app", APP_IMAGE)],
            init_containers=[init],
        ),
    )
    for suffix in "ab":
        pod = pod_doc(
            f"web-{HASH}-{suffix}",
            labels={"app": "web", "pod-template-hash": HASH},
            containers=[container_doc("app", APP_IMAGE)],
            statuses=[status_doc("app", APP_IMAGE, APP_IMAGE)],
            init_containers=[init],
            init_statuses=[status_doc("proxy", SIDECAR_IMAGE, f"{HOST}/team/web@{OLD}")],
            created=T0,
            controller=owner("ReplicaSet", f"web-{HASH}"),
        )
        world.pods.append(pod)
    assert run_pass(world) == [f"web-{HASH}-a"]


# --- what autoroll plan says about these shapes ---------------------------------------------


def plan_text(world: ScriptedWorld, registry: Registry | None = None) -> str:
    report = run_plan(
        cluster=world.cluster(),
        registry=registry or Registry({REF: NEW}),
        registries={HOST},
        now=NOW,
    )
    return render(report)


def test_plan_names_each_foreign_pod_once_with_its_controller() -> None:
    world = ScriptedWorld()
    world.add(WorkloadKind.DEPLOYMENT, web(replicas=2))
    job = owner("Job", "migrate", api_version="batch/v1")
    world.pods = [
        canary_pod(),
        app_pod("migrate-x7k2p", controller=job, pod_hash=""),
        app_pod("web-test-connection", controller=None, pod_hash=""),
        app_pod(f"web-{HASH}-a"),
        app_pod(f"web-{HASH}-b"),
    ]
    text = plan_text(world)
    assert "Not counted, never deleted (another controller's pods):" in text
    for pod, controller in [
        ("canary-7c9d5b8f4-x2x9q", "Deployment/canary"),
        ("migrate-x7k2p", "Job/migrate"),
        ("web-test-connection", "no controller"),
    ]:
        line = f"shop/deployment/web: pod {pod} matches the selector, controlled by {controller}"
        assert text.count(line) == 1, text
    assert f"stale → would delete pod web-{HASH}-a" in text


@pytest.mark.parametrize(
    ("deployment", "clause"),
    [
        (web(paused=True), "not-settled: rollout-paused (spec.paused is true"),
        (web(status={"updatedReplicas": 2}), "not-settled: rollout-in-progress"),
        (
            web(min_ready_seconds=600, status={"availableReplicas": 0}),
            "not-settled: pods-unavailable",
        ),
    ],
)
def test_plan_names_the_controller_status_clause_that_holds_a_workload(
    deployment: dict[str, Any], clause: str
) -> None:
    world = ScriptedWorld()
    world.add(WorkloadKind.DEPLOYMENT, deployment)
    ready_since = NOW - timedelta(seconds=5)
    world.pods = [app_pod(f"web-{HASH}-{c}", ready_since=ready_since) for c in "abc"]
    assert clause in plan_text(world)


def test_plan_shows_sidecar_and_init_containers_as_such() -> None:
    sidecar = container_doc("proxy", SIDECAR_IMAGE, restartPolicy="Always")
    init = container_doc("migrate", f"{HOST}/team/migrate:latest")
    world = ScriptedWorld()
    world.add(
        WorkloadKind.DEPLOYMENT,
        deployment_doc(
            "web",
            replicas=1,
            containers=[container_doc("app", APP_IMAGE)],
            init_containers=[init, sidecar],
        ),
    )
    text = plan_text(world, Registry({REF: NEW, TagRef(HOST, "team/migrate", "latest"): NEW}))
    rows = {line.split()[1] + " " + line.split()[2]: line for line in text.splitlines()[1:4]}
    assert "proxy (sidecar)" in rows and "migrate (init)" in rows, text
