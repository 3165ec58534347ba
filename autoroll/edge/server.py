"""gunicorn embedding: one worker process for HTTP, one reconcile process beside it.

Why one of each
---------------
autoroll's safety rules lean on one reconciler (docs/adr/002): one reconcile thread (ticks
never overlap, "at most one deletion per Deployment per tick" means one pod at a time), one
loop-guard memory, one metrics registry describing it, one nudge the webhooks wake. So
gunicorn runs exactly one worker process, and that worker starts exactly one reconcile
process (``autoroll.edge.reconcile_main``), which holds all of that state: the controller
(``autoroll.edge.wiring.Controller``), the watched cache and the leader election.

Why not the reconcile thread inside the worker, as before: a pass is CPU-bound Python, and a
webhook's answer waited for the interpreter lock it held (p95 81.8 ms on a loaded node,
issue 28). Now the worker only answers (a signature check, a nudge put on the pipe, the
probes from the loop's last reported status, ``/metrics`` asked of the reconcile process);
its threads share a lock with nothing that computes (docs/adr/027).

Requests are cheap, so concurrency comes from threads (the ``gthread`` worker), not
processes.

Lifecycle
---------
Nothing is built at import time or in the master process (``preload_app`` stays off); the
master only makes the owner key of this ``autoroll serve``. In the forked worker, ``load()``
builds the ``Runtime`` (the edge's metrics, the link to the reconcile process, the Flask
app, the probes' listener) and the ``post_worker_init`` hook starts the probes and the
reconcile process. On SIGTERM the master asks the worker to stop; the worker's signal handler
passes SIGTERM on to the reconcile process at once (``Runtime.begin_stop``), which stops its
pass, its election (releasing the Lease if the pass stopped in time) and exits, while the
worker drains its requests; then the ``worker_exit`` hook waits for the reconcile process.
``ShutdownBudget`` adds up the bound of every step; ``GRACEFUL_TIMEOUT_SECONDS`` is derived
from its worst case and stays below the pod's default 30 s grace period.

``build_runtime`` wires the same controller and edge in one process, for tests that inject
adapters (a fake cluster, a fake Lease) and read its objects directly.
"""

from __future__ import annotations

import logging
import math
import os
import secrets
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from flask import Flask
from gunicorn.app.base import BaseApplication
from gunicorn.glogging import Logger as GunicornLogger
from prometheus_client import CollectorRegistry

from autoroll.config import Config
from autoroll.controller.loop_health import liveness_bound
from autoroll.controller.worker import WorkerStopTimeoutError
from autoroll.core.ports import (
    ClusterPort,
    EventPort,
    LeasePort,
    NodePort,
    NotifyPort,
    QuarantinePort,
    RegistryPort,
    SecretPort,
)
from autoroll.edge.http_worker import REQUEST_READ_SECONDS
from autoroll.edge.lifecycle import (
    CACHE_STOP_SECONDS,
    ELECTION_STOP_SECONDS,
    RECONCILE_STOP_SECONDS,
    Controller,
    Election,
)
from autoroll.edge.link import ControllerLink
from autoroll.edge.probes import ProbeServer
from autoroll.edge.receivers import Receiving
from autoroll.edge.reconcile_process import ReconcileProcess, ReconcileProcessError
from autoroll.edge.web import create_app
from autoroll.edge.wiring import CACHE_POOL_SIZE, STEP_SECONDS, build_controller
from autoroll.instruments.metrics import Metrics
from autoroll.kube.transport import LEASE_CALL_TIMEOUT, call_seconds

log = logging.getLogger(__name__)

__all__ = [
    "CACHE_POOL_SIZE",
    "CACHE_STOP_SECONDS",
    "ELECTION_STOP_SECONDS",
    "GRACEFUL_TIMEOUT_SECONDS",
    "RECONCILE_STOP_SECONDS",
    "REQUEST_THREADS",
    "SHUTDOWN_BUDGET",
    "STEP_SECONDS",
    "WORKER_TMP_DIR",
    "AutorollServer",
    "Controller",
    "Election",
    "Runtime",
    "ShutdownBudget",
    "build_runtime",
    "build_served_runtime",
    "gunicorn_settings",
    "serve",
    "worker_tmp_dir",
]

#: Request threads: webhooks are tiny, but a slow client holds one for up to
#: ``http_worker.REQUEST_READ_SECONDS``. The kubelet's probes have their own listener and
#: threads (``autoroll.edge.probes`` on ``PROBE_ADDR``), so no number of slow clients here delays
#: them; the probe paths answer here too, for what still asks this port.
REQUEST_THREADS: Final = 16


@dataclass(frozen=True, slots=True)
class ShutdownBudget:
    """The longest each step of a shutdown can take, SIGTERM to exit, in seconds.

    On SIGTERM the reconcile process is told to stop at once while gunicorn drains its
    requests; it joins its reconcile thread (what is left of that budget), stops the
    election threads and, only if the reconcile thread stopped cleanly, releases the Lease
    (one read and one write), then exits; the worker waits for it. Every step is bounded by
    a timeout in the code, so the sum is a bound, not a hope; gunicorn's
    ``graceful_timeout`` is derived from it.
    """

    request_drain: float = REQUEST_READ_SECONDS + 1.0  # a request still arriving, then its answer
    reconcile_stop: float = RECONCILE_STOP_SECONDS  # runs beside the drain
    election_stop: float = ELECTION_STOP_SECONDS
    lease_release: float = 2 * call_seconds(LEASE_CALL_TIMEOUT)

    def worst_case(self, *, electing: bool) -> float:
        first = max(self.request_drain, self.reconcile_stop)
        return first + (self.election_stop + self.lease_release if electing else 0.0)


SHUTDOWN_BUDGET: Final = ShutdownBudget()
#: Seconds the master waits for the worker after SIGTERM before it SIGKILLs it: the worst
#: case with leader election, rounded up, plus a second for the process to exit. The pod's
#: terminationGracePeriodSeconds (30 s by default) must be larger (a test checks the chart).
GRACEFUL_TIMEOUT_SECONDS: Final = math.ceil(SHUTDOWN_BUDGET.worst_case(electing=True)) + 1

#: Where the worker's heartbeat file lives. gunicorn's default is the temp dir, and with a
#: read-only root filesystem and no /tmp mounted there is none: the worker would not boot.
#: /dev/shm is a tmpfs in every container (Docker, podman, containerd pods).
WORKER_TMP_DIR: Final = "/dev/shm"


def worker_tmp_dir(candidate: str = WORKER_TMP_DIR) -> str | None:
    """``candidate`` when it is a writable directory, else None (gunicorn's default: the
    temp dir), so a host without /dev/shm (macOS) still runs ``autoroll serve``."""
    if os.path.isdir(candidate) and os.access(candidate, os.W_OK | os.X_OK):
        return candidate
    return None


class Runtime:
    """Everything the one gunicorn worker process owns: the HTTP edge (the Flask app, the
    probes' listener) and its ``link`` to the controller, in this process or the next."""

    def __init__(
        self,
        *,
        app: Flask,
        link: ControllerLink,
        stop_seconds: float,
        probes: ProbeServer | None = None,
        controller: Controller | None = None,
    ) -> None:
        self.app = app
        self.link = link
        self.probes = probes
        self.controller = controller  # only when it runs in this process (tests)
        self._stop_seconds = stop_seconds

    # The controller's objects, when it runs in this process (tests read them).
    @property
    def metrics(self) -> Metrics:
        return self._local().metrics

    @property
    def nudge(self) -> Any:
        return self._local().nudge

    @property
    def reconciler(self) -> Any:
        return self._local().reconciler

    @property
    def worker(self) -> Any:
        return self._local().worker

    @property
    def election(self) -> Election | None:
        return self._local().election

    @property
    def cache(self) -> Any:
        return self._local().cache

    def _local(self) -> Controller:
        if self.controller is None:
            raise AttributeError("the controller runs in the reconcile process, not here")
        return self.controller

    def start(self) -> None:
        """Start the probes' listener (a port in use raises here and stops the worker at
        boot, before any reconciling starts), then the controller."""
        if self.probes is not None:
            self.probes.start()
        self.link.start()

    def begin_stop(self) -> None:
        """SIGTERM arrived: tell the controller to stop now, without waiting.

        Called from the worker's signal handler (``http_worker.DeadlineThreadWorker``), so
        the pass winds down while gunicorn drains requests, not after.
        """
        self.link.begin_stop()

    def stop(self, timeout: float | None = None) -> None:
        """Stop the controller (``timeout`` from ``begin_stop``; by default its own bound),
        then the probes' listener. Raises what the controller's stop raised."""
        try:
            self.link.stop(self._stop_seconds if timeout is None else timeout)
        finally:
            if self.probes is not None:
                # Last, so /readyz says "shutting down" until the end; at most one poll
                # (0.2 s), inside the second GRACEFUL_TIMEOUT_SECONDS leaves for the exit.
                self.probes.stop(timeout=0.5)


def build_runtime(
    config: Config,
    *,
    cluster: ClusterPort | None = None,
    registry: RegistryPort | None = None,
    lease: LeasePort | None = None,
    events: EventPort | None = None,
    nodes: NodePort | None = None,
    secrets: SecretPort | None = None,
    quarantine: QuarantinePort | None = None,
    notify: NotifyPort | None = None,
) -> Runtime:
    """The controller and the edge in one process (tests inject adapters). Cheap: no
    network until it starts."""
    controller = build_controller(
        config,
        cluster=cluster,
        registry=registry,
        lease=lease,
        events=events,
        nodes=nodes,
        secrets=secrets,
        quarantine=quarantine,
        notify=notify,
    )
    app = create_app(
        webhook_secret=config.webhook_secret.reveal(),
        nudge=controller.deliver,
        metrics=controller.metrics,
        live=controller.liveness,
        ready=controller.readiness,
        forgejo_host=config.forgejo_host,
        receiving=receiving(config),
        later=controller.deliver_later,
    )
    return Runtime(
        app=app,
        link=controller,
        stop_seconds=RECONCILE_STOP_SECONDS,
        probes=_probes(config, controller),
        controller=controller,
    )


def build_served_runtime(config: Config, *, owner: str) -> Runtime:
    """The edge of ``autoroll serve``: its controller runs in the reconcile process, which
    ``start`` starts (``owner`` keys its one-at-a-time lock). Cheap: nothing starts here."""
    metrics = Metrics(CollectorRegistry())  # only the webhook's answers are counted here
    link = ReconcileProcess(
        owner=owner,
        liveness_bound=liveness_bound(
            interval_seconds=config.poll_interval_seconds,
            pass_timeout_seconds=config.pass_timeout_seconds,
            step_seconds=STEP_SECONDS,
        ),
        edge_metrics=metrics.registry,
        on_lost=_leave,
    )
    app = create_app(
        webhook_secret=config.webhook_secret.reveal(),
        nudge=link.deliver,
        metrics=metrics,
        live=link.liveness,
        ready=link.readiness,
        forgejo_host=config.forgejo_host,
        receiving=receiving(config),
        later=link.deliver_later,
        exposition=link.exposition,
    )
    return Runtime(
        app=app,
        link=link,
        # The reconcile process's own stop, signal to exit: its pass, its election and the
        # Lease release (each bounded there), never past the worker's graceful timeout.
        stop_seconds=SHUTDOWN_BUDGET.worst_case(electing=config.leader_election is not None),
        probes=_probes(config, link),
    )


def receiving(config: Config) -> Receiving:
    """The registries' receivers that are on, with their secrets, and the registries autoroll
    reads (``REGISTRIES`` and the ``FORGEJO_HOST`` shorthand); a registry's receiver always
    names the host, so a push naming none is on no registry autoroll reads."""
    secrets = {s: secret.reveal() for s, secret in config.receivers.secrets}
    return Receiving(secrets, tuple(sorted(config.registry_hosts)), None)


def _probes(config: Config, link: ControllerLink) -> ProbeServer:
    return ProbeServer(
        config.probe_host.strip("[]"),  # "[::]" names the IPv6 wildcard
        config.probe_port,
        live=link.liveness,
        ready=link.readiness,
    )


def _leave(code: int) -> None:
    """The reconcile process ended on its own: this worker ends too (gracefully), and
    gunicorn's master starts a new one, with a new reconcile process."""
    os.kill(os.getpid(), signal.SIGTERM)


def gunicorn_settings(config: Config, *, tmp_dir: str | None = None) -> dict[str, object]:
    """The gunicorn settings autoroll runs with (pure, so a test can pin them).

    ``tmp_dir`` is the worker heartbeat's directory (``worker_tmp_dir()``; None: gunicorn's).
    """
    return {
        "bind": [config.listen_addr],
        "workers": 1,  # see the module docstring: one process owns all state
        # gthread plus a per-request read deadline (slow-drip clients; see http_worker)
        "worker_class": "autoroll.edge.http_worker.DeadlineThreadWorker",
        "threads": REQUEST_THREADS,
        "preload_app": False,  # nothing is built in the master
        "graceful_timeout": GRACEFUL_TIMEOUT_SECONDS,
        "timeout": 30,
        "keepalive": 5,
        "accesslog": None,  # probes every few seconds would drown the decision lines
        "errorlog": None,  # gunicorn's lines go to the root handler (see RootRoutedLogger)
        "logger_class": RootRoutedLogger,
        "loglevel": str(config.log_level),
        "proc_name": "autoroll",
        "control_socket_disable": True,  # no management socket in $HOME inside a pod
        "worker_tmp_dir": tmp_dir,  # /dev/shm: a missing /tmp is not fatal
        "post_worker_init": _post_worker_init,
        "worker_exit": _worker_exit,
    }


class RootRoutedLogger(GunicornLogger):  # type: ignore[misc]
    """gunicorn's own log lines through autoroll's root handler: one format, one redactor.

    Without this, ``LOG_FORMAT=json`` would still interleave gunicorn's plain-text lines.
    """

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        self.error_log.propagate = True
        self.access_log.propagate = True


class AutorollServer(BaseApplication):  # type: ignore[misc]
    """gunicorn with autoroll's settings; ``load()`` runs in the worker process only."""

    def __init__(
        self,
        config: Config,
        runtime_factory: Callable[[Config], Runtime] | None = None,
    ) -> None:
        self._config = config
        # Made in the master, so a worker gunicorn restarts keys the same owner lock and
        # its reconcile process waits for the old one (autoroll.edge.reconcile_main).
        owner = secrets.token_hex(8)
        self._factory = runtime_factory or (lambda cfg: build_served_runtime(cfg, owner=owner))
        self.runtime: Runtime | None = None
        super().__init__()

    def load_config(self) -> None:
        for name, value in gunicorn_settings(self._config, tmp_dir=worker_tmp_dir()).items():
            # Settings newer than the oldest supported gunicorn are applied when known.
            if name in self.cfg.settings:
                self.cfg.set(name, value)

    def load(self) -> Flask:
        self.runtime = self._factory(self._config)
        return self.runtime.app


def _post_worker_init(worker: Any) -> None:
    """gunicorn hook, in the worker process: start the probes and the one controller."""
    runtime: Runtime | None = worker.app.runtime
    if runtime is None:  # pragma: no cover - gunicorn always loads the app first
        raise RuntimeError("the app was not loaded before post_worker_init")
    runtime.start()
    log.info("controller started for worker pid %s", worker.pid)


def _worker_exit(server: Any, worker: Any) -> None:
    """gunicorn hook, in the worker process after its request loop ended: stop the
    controller (in the reconcile process: wait for it to exit)."""
    runtime: Runtime | None = getattr(worker.app, "runtime", None)
    if runtime is None:
        return
    try:
        runtime.stop()
    except (WorkerStopTimeoutError, ReconcileProcessError) as exc:
        # Abandoned (a daemon thread) or killed: the process exits anyway; say so loudly.
        log.error("%s; exiting without waiting for it", exc)
    else:
        log.info("controller stopped")


def serve(config: Config) -> int:
    """Run gunicorn in the foreground until it is told to stop; return its exit status."""
    AutorollServer(config).run()
    return 0
