"""Fault matrix, isolation rows: one bad input stops only its own workload, never the pass.

The registry is a real ``docker-registry`` (htpasswd auth), read by the real
``RegistryClient``; the cluster is the real Kubernetes adapter (``KubeCluster``) over a
scripted API world holding two enrolled Deployments on two repositories, both of whose tags
have moved (docs/adr/020-one-bad-input-stops-only-itself.md):

- ``shop/web`` on ``team/web-…``: an ordinary new image; one pod must be deleted;
- ``tenant/bad`` on ``tenant/bad-…``: what a tenant who can push to their own repository and
  enrol one Deployment can make the registry serve.

Each row asserts what issue 30 asks: the pass goes on for every other workload (``web``
loses its pod), the bad one is unknown with a reason (never stale, nothing deleted), and,
for a pass that raises, ``/livez`` says so. The jobhash row runs the installed CLI.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
import requests
from prometheus_client import CollectorRegistry

from autoroll.controller.reconciler import Reconciler, TickReport
from autoroll.controller.worker import Nudge, Worker
from autoroll.core.decide import Decision, Reason
from autoroll.core.model import WorkloadKind
from autoroll.core.scope import Scope
from autoroll.instruments.metrics import Metrics
from autoroll.kube import ClusterError
from autoroll.registry import MAX_TOKEN_BYTES, OCI_MANIFEST, Limits, RegistryClient
from jobhash.goyaml_compose import MAX_VALUE_DEPTH
from tests.support import scripted_cluster
from tests.support.faulty_proxy import FaultyProxy
from tests.support.moved_tag import moved_tag
from tests.support.registry import ImagePusher, RegistryServer
from tests.support.registry_recorder import ManualClock
from tests.support.wait import wait_until
from tests.support.web_app import app_over

pytestmark = pytest.mark.integration

#: Short, as in the rest of the fault matrix: a failed row costs seconds.
LIMITS = Limits(connect_seconds=1.0, read_seconds=2.0, budget_seconds=10.0)
HASH = "5d8f7c9b4"
CREATED = datetime(2026, 11, 1, tzinfo=UTC)
#: Arrays nested this deep: what made ``json.loads`` raise RecursionError out of the pass.
DEEP = 1500


@dataclass
class Tag:
    repository: str
    old: str  # what the pods run
    new: str  # what the tag names now


@dataclass
class World:
    world: scripted_cluster.ScriptedWorld
    host: str
    web: Tag
    bad: Tag
    registry: RegistryServer

    def reconciler(self, *, host: str | None = None) -> Reconciler:
        """The real adapter and client, wired as ``autoroll serve`` wires them."""
        client = RegistryClient(
            session=requests.Session(),
            base_url=f"http://{host or self.host}",
            user=self.registry.user,
            token=self.registry.password,
            limits=LIMITS,
        )
        return Reconciler(
            cluster=self.world.cluster(),
            registry=client,
            metrics=Metrics(CollectorRegistry()),
            registries={host or self.host},
            dry_run=False,
        )


def decision(report: TickReport, name: str) -> Decision:
    return next(d for d in report.decisions if d.name == name)


def only_bad_is_unknown(world: World, report: TickReport, reason: Reason, *, row: str) -> str:
    """What issue 30 asks of a pass with the bad input in it: ``web`` lost its first pod, as
    it would with no tenant at all; ``bad`` is unknown for ``reason``, never stale (no
    action, none of its pods deleted). Returns the bad verdict's detail."""
    assert world.world.deleted == [f"web-{HASH}-a"]
    assert decision(report, "web").actions
    bad = decision(report, "bad")
    [verdict] = bad.containers
    print(f"\n{row}: bad: {verdict.reason} ({verdict.detail[:120]})")
    assert bad.actions == ()
    assert verdict.reason is reason
    return verdict.detail


def enrol(
    world: scripted_cluster.ScriptedWorld, *, namespace: str, name: str, image: str, image_id: str
) -> None:
    """An enrolled Deployment of two Ready pods that run ``image_id``."""
    labels = {"app": name, "pod-template-hash": HASH}
    world.add(
        WorkloadKind.DEPLOYMENT,
        scripted_cluster.deployment_doc(
            name,
            namespace=namespace,
            replicas=2,
            selector={"app": name},
            containers=[scripted_cluster.container_doc("app", image)],
        ),
    )
    for suffix in ("a", "b"):
        world.pods.append(
            scripted_cluster.pod_doc(
                f"{name}-{HASH}-{suffix}",
                namespace=namespace,
                labels=labels,
                containers=[scripted_cluster.container_doc("app", image)],
                statuses=[scripted_cluster.status_doc("app", image, image_id)],
                created=CREATED,
                controller=scripted_cluster.owner("ReplicaSet", f"{name}-{HASH}"),
            )
        )


def deep_manifest(pusher: ImagePusher, repository: str) -> bytes:
    """A valid image manifest (the registry accepts it) with one more field nested DEEP
    arrays deep; its digest checks out, so only parsing it can go wrong."""
    plain = pusher.push_image(repository, None)
    document = json.loads(plain.body)
    text = json.dumps(document)[:-1] + ', "x": ' + "[" * DEEP + "]" * DEEP + "}"
    return text.encode()


def build(registry: RegistryServer, pusher: ImagePusher, *, deep: bool) -> World:
    tail = secrets.token_hex(4)
    web_repo, bad_repo = f"team/web-{tail}", f"tenant/bad-{tail}"
    web = Tag(web_repo, *moved_tag(pusher, web_repo))
    bad = Tag(bad_repo, pusher.push_image(bad_repo, "latest").digest, "")
    if deep:
        body = deep_manifest(pusher, bad_repo)
        bad.new = pusher.push_manifest(bad_repo, "latest", body, OCI_MANIFEST)
    else:
        bad.new = pusher.push_image(bad_repo, "latest").digest
    world = scripted_cluster.ScriptedWorld()
    return World(world, registry.host, web, bad, registry)


def populate(world: World, host: str) -> None:
    for namespace, name, tag in (("shop", "web", world.web), ("tenant", "bad", world.bad)):
        enrol(
            world.world,
            namespace=namespace,
            name=name,
            image=f"{host}/{tag.repository}:latest",
            image_id=f"{host}/{tag.repository}@{tag.old}",
        )


# -- a manifest nested 1,500 arrays deep ---------------------------------------------------------


def test_a_manifest_nested_1500_arrays_deep_makes_only_its_workload_unknown(
    registry: RegistryServer, pusher: ImagePusher
) -> None:
    world = build(registry, pusher, deep=True)
    populate(world, world.host)
    # The real registry serves what it accepted, byte for byte.
    served = requests.get(
        f"{registry.url}/v2/{world.bad.repository}/manifests/{world.bad.new}",
        headers={"Authorization": registry.authorization, "Accept": OCI_MANIFEST},
        timeout=5,
    )
    assert served.status_code == 200 and served.content.count(b"[") >= DEEP
    with pytest.raises(RecursionError):
        json.loads(served.content)  # what the client did before: the pass ended here

    started = time.monotonic()
    report = world.reconciler().tick()
    took = time.monotonic() - started

    # The pass went on (web lost one pod); the bad workload is unknown, never stale.
    row = f"nested manifest: pass {took:.2f}s"
    detail = only_bad_is_unknown(world, report, Reason.CHILDREN_UNKNOWN, row=row)
    assert "bad-manifest" in detail and "nested more than 64" in detail


# -- an oversized token answer -------------------------------------------------------------------


def test_an_oversized_token_answer_makes_only_its_workload_unknown(
    registry: RegistryServer, pusher: ImagePusher
) -> None:
    world = build(registry, pusher, deep=False)
    with FaultyProxy(registry, mode="bearer") as proxy:
        # The realm answers the tenant's scope with a "token" over the cap, other scopes well.
        huge = b'{"token": "' + b"t" * (MAX_TOKEN_BYTES + 1) + b'", "expires_in": 300}'
        proxy.token_answers[world.bad.repository] = huge
        populate(world, proxy.host)
        report = world.reconciler(host=proxy.host).tick()
        issued = proxy.tokens_issued

    assert issued >= 1  # web's scope got a real token and its lookups went through
    detail = only_bad_is_unknown(world, report, Reason.REGISTRY_UNKNOWN, row="oversized token")
    assert "token-failed" in detail and "too-large" in detail


# -- a pass that raises is no progress for /livez -------------------------------------------------


@pytest.fixture
def raising_world(registry: RegistryServer, pusher: ImagePusher) -> Iterator[World]:
    world = build(registry, pusher, deep=False)
    populate(world, world.host)
    yield world


def test_livez_fails_once_every_pass_raises_and_recovers_with_one_that_does_not(
    raising_world: World,
) -> None:
    """Every list the API answers ends the pass with an error (it raises past every
    workload). A loop that only fails is as stuck as one that hangs: /livez turns 503 once
    no pass finished *without raising* within its bound, and says what the last one raised."""
    world = raising_world
    failing = threading.Event()
    failing.set()

    def on_request(scripted: scripted_cluster.ScriptedWorld, method: str, path: str) -> None:
        if failing.is_set() and "/deployments" in path:
            raise RuntimeError("the API answered something no adapter foresaw")

    world.world.on_request = on_request
    reconciler = world.reconciler()
    clock = ManualClock()
    metrics = Metrics(CollectorRegistry())
    nudge = Nudge(metrics)
    tick: Callable[[Callable[[], bool], Scope], TickReport] = reconciler.tick
    worker = Worker(
        tick,
        nudge=nudge,
        interval_seconds=3600,
        metrics=metrics,
        clock=clock,
        expected_errors=(ClusterError,),
        pass_timeout_seconds=300,
        step_seconds=40,
    )
    app = app_over(worker, nudge, metrics, "isolation-webhook-secret-0123456789")
    worker.start()
    try:
        wait_until(lambda: worker.passes == 1, 15, "the first pass")
        assert app.get("/livez").status_code == 200  # within the bound since the start
        clock.now += worker.liveness_bound + 1
        nudge.nudge()  # another pass: it raises too
        wait_until(lambda: worker.passes == 2, 15, "the second pass")
        answer = app.get("/livez")
        print(f"\nraising passes: /livez {answer.status_code}: {answer.text.strip()}")
        assert answer.status_code == 503
        assert "no reconcile pass finished" in answer.text
        assert "the last pass raised" in answer.text
        assert world.world.deleted == []
        failing.clear()  # the cause is gone: the next pass finishes, /livez is 200 again
        nudge.nudge()
        wait_until(lambda: worker.passes == 3, 15, "the third pass")
        assert app.get("/livez").status_code == 200
        # Both tags moved to ordinary images here: each workload loses its first pod.
        assert sorted(world.world.deleted) == [f"bad-{HASH}-a", f"web-{HASH}-a"]
    finally:
        worker.stop(timeout=10)
    errors = metrics.registry.get_sample_value("autoroll_ticks_total", {"outcome": "error"})
    assert errors == 2


# -- deep YAML in jobhash ------------------------------------------------------------------------


def test_jobhash_refuses_a_value_500_deep_behind_an_alias_in_one_line(tmp_path: Path) -> None:
    """The installed CLI, as CI runs it: one line naming the file, the line and the cap, the
    exit code of every values file jobhash refuses (1), and no traceback."""
    deep = tmp_path / "deep.yaml"
    deep.write_text(
        f"controller: {{enabled: false}}\nextra: &deep {'[' * 500}{']' * 500}\nagain: *deep\n",
        encoding="utf-8",
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "jobhash", "names", "--release", "rel", "-f", str(deep)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    took = time.monotonic() - started
    print(f"\njobhash deep alias: exit {done.returncode} in {took:.2f}s: {done.stderr.strip()}")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
    [line] = done.stderr.splitlines()
    assert f"{deep}: line 2" in line
    assert f"more than {MAX_VALUE_DEPTH} levels deep" in line
    assert done.stdout == ""
