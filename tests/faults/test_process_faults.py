"""Fault matrix, process rows: SIGTERM mid-pass, and secrets in all log output of a full run.

The real ``autoroll serve`` (gunicorn) runs as a subprocess against the fake Kubernetes
API and a real docker-registry behind the fault proxy, both in this test process, so a
test can stall a pass exactly where it wants and then send SIGTERM. Production limits
apply here (5 s registry read timeout, 30 s API read timeout, 10 s reconcile stop).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from autoroll.edge.runtime import SHUTDOWN_BUDGET
from autoroll.edge.server import GRACEFUL_TIMEOUT_SECONDS, RECONCILE_STOP_SECONDS, STEP_SECONDS
from tests.support.autoroll_cli import run_autoroll
from tests.support.fake_kube import LEASE_NAME, LEASE_NAMESPACE, Fault, FaultyKubeApi, KubeApiServer
from tests.support.fault_proxy import FaultProxy, ProxyFault
from tests.support.moved_tag import api_on_moved_tag
from tests.support.ports import free_port
from tests.support.registry import ImagePusher, RegistryServer
from tests.support.serve import POD_GRACE_SECONDS, Serve, dead_kubeconfig, drip, start_serve
from tests.support.wait import wait_until

pytestmark = pytest.mark.integration

SECRET = "process-webhook-secret-0123456789abcdef"


@dataclass
class World:
    api: FaultyKubeApi
    kube: KubeApiServer
    proxy: FaultProxy
    registry: RegistryServer
    tmp: Path

    def env(self, **extra: str) -> dict[str, str]:
        return {
            "KUBECONFIG": str(self.kube.write_kubeconfig(self.tmp / "kubeconfig")),
            "FORGEJO_HOST": self.proxy.host,
            "REGISTRY_SCHEME": "http",
            "FORGEJO_USER": self.registry.user,
            "FORGEJO_TOKEN": self.registry.password,
            "WEBHOOK_SECRET": SECRET,
            **extra,
        }

    def serve(self, **extra: str) -> Serve:
        return start_serve(self.tmp, self.env(**extra))


@pytest.fixture
def world(
    registry: RegistryServer, pusher: ImagePusher, repository: str, tmp_path: Path
) -> Iterator[World]:
    """As in the in-process rig: pods run ``old``, the tag names ``new``."""
    with FaultProxy(registry) as proxy:
        api, _, _ = api_on_moved_tag(pusher, repository, host=proxy.host)
        kube = KubeApiServer(api)
        kube.start()
        try:
            yield World(api, kube, proxy, registry, tmp_path)
        finally:
            kube.stop()


def webhook(serve: Serve, body: bytes = b"{}", *, secret: str = SECRET) -> int:
    signature = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return requests.post(
        f"{serve.url}/webhook", data=body, headers={"X-Forgejo-Signature": signature}, timeout=5
    ).status_code


# -- SIGTERM mid-pass ----------------------------------------------------------------------------


def test_sigterm_while_a_pass_waits_on_a_slow_registry(world: World) -> None:
    world.proxy.fault = ProxyFault("delay", seconds=30.0)
    serve = world.serve()
    try:
        wait_until(lambda: world.proxy.count("HEAD") >= 1, 15, "the pass to reach the registry")
        code, seconds = serve.terminate()
    finally:
        serve.kill()
    print(f"\nSIGTERM during a slow registry HEAD: exit {code} after {seconds:.1f}s")
    assert code == 0, serve.output()
    # One 5 s read timeout, then the pass stops before deciding: the reconcile thread ends
    # by itself, never abandoned at its stop timeout (5.8 s on a quiet machine; CPU-starved
    # at a load of 10 on CI's 2 cores it took 17.1 s, so the clock bound is the grace's).
    assert "reconcile thread stopped" in serve.output()
    assert "still running after" not in serve.output()
    assert seconds < GRACEFUL_TIMEOUT_SECONDS < POD_GRACE_SECONDS
    assert world.api.deletes == []  # a deletion never started


def test_sigterm_while_a_pass_waits_on_a_hung_api_server(world: World) -> None:
    release = threading.Event()
    world.api.inject("list-deployments", Fault(0, hang=release))
    # The pass's own list hangs, not the watched cache's (the fake API serves no watch, so
    # an informer relisting could take the fault; its threads are not what stops here).
    serve = world.serve(WATCH_CACHE="false")
    try:
        assert world.api.arrived["list-deployments"].wait(15)
        code, seconds = serve.terminate()
    finally:
        release.set()
        serve.kill()
    print(f"\nSIGTERM during a hung API list: exit {code} after {seconds:.1f}s")
    assert code == 0, serve.output()
    # The thread is abandoned after RECONCILE_STOP_SECONDS (10 s), well inside the grace.
    assert seconds < GRACEFUL_TIMEOUT_SECONDS < POD_GRACE_SECONDS
    assert world.api.deletes == []
    assert "reconcile thread 'autoroll-reconcile' still running after" in serve.output()


def test_sigterm_while_a_delete_is_in_flight_lets_it_finish(world: World) -> None:
    release = threading.Event()
    world.api.inject("delete", Fault(0, hang=release))
    serve = world.serve()
    try:
        assert world.api.arrived["delete"].wait(15)
        serve.process.send_signal(15)
        started = time.monotonic()
        time.sleep(1.0)  # the process is shutting down with the DELETE still unanswered
        assert serve.process.poll() is None
        release.set()
        code = serve.process.wait(POD_GRACE_SECONDS)
        seconds = time.monotonic() - started
    finally:
        release.set()
        serve.kill()
    print(f"\nSIGTERM during a DELETE: exit {code} {seconds:.1f}s after the signal")
    assert code == 0, serve.output()
    # Once answered, the DELETE ends the pass: the process exits without running out its
    # reconcile thread's stop timeout (5.4 s was seen on CI's loaded 2 cores, so no tighter).
    assert seconds < SHUTDOWN_BUDGET.reconcile_stop
    # One call, carried out whole and seen through: the pod went, and autoroll knows it.
    assert world.api.deletes == [("web-1", "uid-web-1")]
    assert world.api.deleted == ["web-1"]
    assert "deleted stale pod shop/web-1" in serve.output()


# -- the shutdown budget, worst case with leader election -----------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("pass_seconds", "slow_lease"),
    [(8.0, False), (14.0, True)],
    ids=["pass-ends-in-time-then-a-slow-release", "pass-overruns-and-the-lease-api-is-slow"],
)
def test_sigterm_in_the_worst_case_with_leader_election_fits_the_budget(
    world: World, pass_seconds: float, slow_lease: bool
) -> None:
    """The shutdown steps near their bounds together: a client dripping a request (the
    drain), a pass inside a slow API list (the reconcile stop), and either a slow release
    write (the pass stopped in time, so the Lease is handed back) or slow Lease calls
    throughout (the election threads are busy when told to stop). The process must exit by
    itself within GRACEFUL_TIMEOUT_SECONDS, so gunicorn's master never SIGKILLs the worker,
    and the Lease is released only when the pass stopped within its 10 s."""
    serve = world.serve(
        LEADER_ELECTION="true",
        LEADER_ELECTION_NAMESPACE=LEASE_NAMESPACE,
        LEADER_ELECTION_LEASE=LEASE_NAME,
        POD_NAME="autoroll-a",
        # Only the passes list Deployments: the fake API serves no watch, so the watched
        # cache's informer would relist them all along and could take the slow list meant
        # for the pass (it did, once the reconcile process started a moment after the worker).
        WATCH_CACHE="false",
    )
    try:
        wait_until(lambda: world.api.holder() == "autoroll-a", 20, "autoroll-a to lead")
        wait_until(lambda: world.api.deleted == ["web-1"], 20, "the first roll")
        wait_until(lambda: serve.ticks() >= 1, 20, "the first pass to end")
        before = world.api.requests_to("list-deployments")
        world.api.inject("list-deployments", Fault(0, delay_seconds=pass_seconds))
        if slow_lease:
            for route in ("get-lease", "patch-lease"):
                world.api.inject(route, Fault(0, delay_seconds=2.5), times=20)
        else:
            world.api.release_delay_seconds = 2.5
        cut: list[float] = []
        dripper = threading.Thread(
            target=drip,
            args=(
                serve.port,
                # Signed (wrongly): an unsigned request is refused before its body is read,
                # and this one must hold a thread while its body drips (the drain).
                b"POST /webhook HTTP/1.1\r\nHost: x\r\nX-Forgejo-Signature: "
                + b"0" * 64
                + b"\r\nContent-Length: 60\r\n\r\n",
                b"x" * 60,
                cut,
            ),
            daemon=True,
        )
        dripper.start()
        assert webhook(serve) == 202  # the leader's own pass: into the slow list
        wait_until(
            lambda: world.api.requests_to("list-deployments") > before, 10, "the pass's list"
        )
        code, seconds = serve.terminate(timeout=POD_GRACE_SECONDS + 10)
    finally:
        serve.kill()
    output = serve.output()
    released = "released the lease" in output
    print(
        f"\nSIGTERM, pass of {pass_seconds:g}s: exit {code} after {seconds:.1f}s"
        f" (budget {SHUTDOWN_BUDGET.worst_case(electing=True):g}s,"
        f" graceful timeout {GRACEFUL_TIMEOUT_SECONDS}s); lease released: {released}"
    )
    assert code == 0, output
    assert "SIGKILL" not in output and "WORKER TIMEOUT" not in output, output
    assert seconds <= GRACEFUL_TIMEOUT_SECONDS < POD_GRACE_SECONDS
    if pass_seconds >= RECONCILE_STOP_SECONDS:
        assert "still running after" in output  # abandoned, said loudly
        assert not released and world.api.holder() == "autoroll-a"  # it expires instead
    else:
        assert released and world.api.holder() == "", output  # the next leader needn't wait
    assert world.api.deleted == ["web-1"]  # nothing more was deleted on the way out


# -- health ----------------------------------------------------------------------------------------


def probe(serve: Serve, path: str) -> int:
    return requests.get(f"{serve.url}{path}", timeout=5).status_code


def test_a_hung_pass_fails_livez_within_its_bound_so_the_pod_is_restarted(world: World) -> None:
    """A pass stuck in an API call that never times out: its answer drips a byte a second,
    so every read gets data within the read timeout. /livez (the chart's livenessProbe)
    turns 503 once no pass has finished for poll interval + pass timeout + one step, which
    is what makes the kubelet restart the container; /readyz stays 200 meanwhile (the pod
    still serves webhooks). The kubelet's restart itself needs a real node (not here yet).
    """
    release = threading.Event()
    world.api.inject("list-deployments", Fault(0, drip=release))
    started = time.monotonic()
    serve = world.serve(POLL_INTERVAL_SECONDS="5", PASS_TIMEOUT_SECONDS="5")
    bound = 5 + 5 + STEP_SECONDS
    try:
        assert world.api.arrived["list-deployments"].wait(15)
        assert probe(serve, "/livez") == 200
        wait_until(
            lambda: probe(serve, "/livez") == 503, bound + 30, "/livez to fail", interval=0.5
        )
        failed_after = time.monotonic() - started
        assert probe(serve, "/healthz") == 503  # the old path answers as /livez does
        assert probe(serve, "/readyz") == 200
        detail = requests.get(f"{serve.url}/livez", timeout=5).text
        assert "no reconcile pass finished" in detail
        # The call ends (a cut body) and that pass fails: a failed pass is no progress, so
        # /livez recovers only with the next pass, which finishes (the fault was one call's).
        release.set()
        wait_until(lambda: probe(serve, "/livez") == 200, 30, "/livez to recover", interval=0.2)
        code, _ = serve.terminate()
    finally:
        release.set()
        serve.kill()
    print(f"\nhung pass: /livez failed {failed_after:.1f}s after start (bound {bound:.0f}s)")
    assert failed_after >= bound - 1  # not before the bound: a slow pass is not a dead one
    assert code == 0
    assert world.api.deletes == []


def nudged_pass(serve: Serve) -> None:
    before = serve.ticks()
    assert webhook(serve) == 202
    wait_until(lambda: serve.ticks() > before, 15, "a nudged pass")


# -- secrets -------------------------------------------------------------------------------------


#: Two registries' receivers on in the secret scan: a path token and a header token.
RECEIVER_TOKENS = {
    "DOCKERHUB_WEBHOOK_TOKEN": "dockerhub-path-token-0123456789",
    "HARBOR_WEBHOOK_TOKEN": "harbor-header-token-0123456789",
}


def forbidden_strings(world: World) -> dict[str, str]:
    user, token = world.registry.user, world.registry.password
    return {
        "FORGEJO_TOKEN": token,
        "WEBHOOK_SECRET": SECRET,
        "Basic credentials": base64.b64encode(f"{user}:{token}".encode()).decode(),
        **RECEIVER_TOKENS,
    }


def receiver_deliveries(serve: Serve) -> None:
    """A receiver's deliveries at debug level: a path token right and wrong, a header token
    right (with a body it cannot read, which is logged) and wrong."""
    url, hub = serve.url, RECEIVER_TOKENS["DOCKERHUB_WEBHOOK_TOKEN"]
    harbor = {"Authorization": f"Bearer {RECEIVER_TOKENS['HARBOR_WEBHOOK_TOKEN']}"}
    push = b'{"push_data": {"tag": "latest"}, "repository": {"repo_name": "team/app"}}'
    assert requests.post(f"{url}/webhook/dockerhub/{hub}", data=push, timeout=5).status_code == 202
    assert requests.post(f"{url}/webhook/dockerhub/{hub}x", data=push, timeout=5).status_code == 403
    assert (
        requests.post(f"{url}/webhook/harbor", data=b"[", headers=harbor, timeout=5).status_code
        == 400
    )
    wrong = {"Authorization": "Bearer " + RECEIVER_TOKENS["HARBOR_WEBHOOK_TOKEN"][::-1]}
    assert (
        requests.post(f"{url}/webhook/harbor", data=b"{}", headers=wrong, timeout=5).status_code
        == 403
    )


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_no_secret_in_any_output_of_a_full_run(world: World, log_format: str) -> None:
    """A roll, webhooks good and bad (Forgejo's and two registries' receivers), registry and
    API errors, shutdown; at debug level."""
    # Every pass lists: the fake API serves no watch, so a watched cache would hold whatever
    # its last relist saw (a relist before make_ready() kept the replacement unready for good).
    serve = world.serve(
        LOG_LEVEL="debug", LOG_FORMAT=log_format, WATCH_CACHE="false", **RECEIVER_TOKENS
    )
    try:
        wait_until(lambda: world.api.deleted == ["web-1"], 15, "the first deletion")
        wait_until(lambda: serve.ticks() >= 1, 15, "the first pass to end")
        assert webhook(serve, secret="not-the-secret-0123456789") == 403
        receiver_deliveries(serve)
        world.proxy.fault = ProxyFault("status", status=500)
        nudged_pass(serve)
        world.proxy.fault = None
        world.api.inject("list-pods", Fault(500))
        nudged_pass(serve)
        world.api.make_ready()
        assert webhook(serve) == 202
        wait_until(lambda: len(world.api.deleted) == 2, 15, "the second deletion")
        code, _ = serve.terminate()
    finally:
        serve.kill()
    assert code == 0
    output = serve.output()
    # The scan read real lines: a roll, a registry error and an API error.
    assert "deleted stale pod" in output
    assert "HTTP 500 from" in output and "500 Internal Server Error" in output
    assert "harbor webhook unreadable" in output
    for what, value in forbidden_strings(world).items():
        assert value not in output, f"{what} leaked into the log"


def test_a_webhook_secret_under_16_bytes_is_refused_at_startup(tmp_path: Path) -> None:
    short = "fifteen-bytes!!"
    assert len(short.encode()) == 15
    port = free_port()
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "KUBECONFIG": str(dead_kubeconfig(tmp_path / "kubeconfig")),
        "FORGEJO_HOST": "git.example.org",
        "FORGEJO_USER": "autoroll",
        "FORGEJO_TOKEN": "a-valid-token-0123456789",
        "WEBHOOK_SECRET": short,
        "LISTEN_ADDR": f"127.0.0.1:{port}",
        "PROBE_ADDR": f"127.0.0.1:{free_port()}",
    }
    result = run_autoroll("serve", env=env)
    output = result.stdout + result.stderr
    assert result.returncode == 2
    assert "WEBHOOK_SECRET" in result.stderr and "16" in result.stderr
    assert short not in output
    assert "Traceback" not in output
    # It refused before serving anything: only the one problem, and nothing listens.
    assert "FORGEJO" not in result.stderr
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
