"""gunicorn embedding: exactly one worker process, which owns the reconcile thread.

Why exactly one worker process
------------------------------
autoroll's state lives in one process, on purpose:

- **one reconcile thread** — ticks must never overlap, and "at most one deletion per
  Deployment per tick" only means something if there is one ticker. Two worker processes
  would each run a thread and could each delete a pod of the same Deployment in the same
  second;
- **one loop-guard memory** — "when was this target digest first seen" is an in-memory map;
  split across processes, each would have its own idea of "first", and the guard would hold
  only as well as the least informed process;
- **one metrics registry** — ``/metrics`` must describe the process that reconciles. With
  several workers a scrape lands on a random one; fixing that needs prometheus_client's
  multiprocess mode (a shared directory of mmap files, no custom collectors), which is cost
  without benefit here;
- **one nudge** — a webhook handled by worker A could not wake a thread living in worker B.

Requests are cheap (a signature check and an ``Event.set()``), so concurrency comes from
threads (the ``gthread`` worker), not processes.

Lifecycle
---------
Nothing is built at import time or in the master process (``preload_app`` stays off). In
the forked worker, ``load()`` builds the ``Runtime`` (metrics registry, nudge, registry
client, cluster adapter, reconciler, Flask app) and the ``post_worker_init`` hook starts the
reconcile thread. On SIGTERM the master asks the worker to stop; the worker finishes its
in-flight requests while the reconcile thread is told to stop (the worker's SIGTERM handler
calls ``Runtime.begin_stop``); then the ``worker_exit`` hook joins it: a pass in progress
ends before its next Deployment (a deletion is one API call, never half-done). With leader
election the election threads stop next and the Lease is released. ``ShutdownBudget`` adds
up the bound of every step; ``GRACEFUL_TIMEOUT_SECONDS`` is derived from its worst case and
stays below the pod's default 30 s grace period.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final

from flask import Flask
from gunicorn.app.base import BaseApplication
from gunicorn.glogging import Logger as GunicornLogger
from prometheus_client import CollectorRegistry

from autoroll.config import Config
from autoroll.config.choices import RolloutMethod
from autoroll.config.leader import LeaderElection
from autoroll.controller.announcer import Announcer
from autoroll.controller.leader import Elector, HandOff, NudgeWatcher
from autoroll.controller.notifier import Notifier
from autoroll.controller.pacer import RollPacer
from autoroll.controller.reconciler import Reconciler, TickReport
from autoroll.controller.worker import Nudge, Worker, WorkerStopTimeoutError
from autoroll.core.election import Timings, default_identity
from autoroll.core.ports import (
    ClusterPort,
    EventPort,
    LeasePort,
    NodePort,
    NotifyPort,
    PresencePort,
    QuarantinePort,
    RegistryPort,
    SecretPort,
)
from autoroll.core.scope import Scope
from autoroll.edge.http_worker import REQUEST_READ_SECONDS
from autoroll.edge.pinning_service import PinningService
from autoroll.edge.probes import ProbeServer
from autoroll.edge.receivers import Receiving
from autoroll.edge.registries import pull_credentials, registry_pool
from autoroll.edge.web import create_app
from autoroll.instruments import logs
from autoroll.instruments.metrics import Metrics
from autoroll.instruments.pinning_metrics import PinningMetrics
from autoroll.kube import (
    ClusterError,
    KubeCluster,
    KubeEvents,
    KubeLease,
    KubeQuarantine,
    WatchCache,
)
from autoroll.kube.secrets import KubeSecrets
from autoroll.kube.transport import (
    LEASE_CALL_TIMEOUT,
    REQUEST_TIMEOUT,
    LazyRest,
    call_seconds,
    connect,
)
from autoroll.kube.webhook_config import KubeWebhookConfig
from autoroll.notify import AppriseNotifier
from autoroll.registry import Limits
from autoroll.registry.pool import RegistryPool

log = logging.getLogger(__name__)

#: Seconds the worker process gives the reconcile thread after SIGTERM (counted from the
#: signal: the pass is told to stop while gunicorn still drains requests).
RECONCILE_STOP_SECONDS: Final = 10.0
#: Seconds the three election threads get to stop, together (they wait on events or one
#: short API call).
ELECTION_STOP_SECONDS: Final = 3.0
#: Request threads: webhooks are tiny, but a slow client holds one for up to
#: ``http_worker.REQUEST_READ_SECONDS``. The kubelet's probes have their own listener and
#: threads (``autoroll.edge.probes`` on ``PROBE_ADDR``), so no number of slow clients here delays
#: them; the probe paths answer here too, for what still asks this port.
REQUEST_THREADS: Final = 16

#: Connections the watched cache may keep open: one per watch (the enrolled workloads and
#: each namespace holding one), plus its lists.
CACHE_POOL_SIZE: Final = 512
#: Seconds the watched cache's threads get to stop (they wait on a socket, aborted at once).
CACHE_STOP_SECONDS: Final = 3.0
#: Seconds the notifier's thread gets to stop; a send in flight is abandoned (a daemon).
NOTIFIER_STOP_SECONDS: Final = 0.5

#: The longest single step of a pass: one Kubernetes API call, or the registry's budget.
STEP_SECONDS: Final = max(call_seconds(REQUEST_TIMEOUT), Limits().budget_seconds)


@dataclass(frozen=True, slots=True)
class ShutdownBudget:
    """The longest each step of a shutdown can take, SIGTERM to exit, in seconds.

    On SIGTERM the reconcile thread is told to stop at once while gunicorn drains its
    requests; then the worker process joins the thread (what is left of its budget), stops
    the election threads and, only if the reconcile thread stopped cleanly, releases the
    Lease (one read and one write). Every step is bounded by a timeout in the code, so the
    sum is a bound, not a hope; gunicorn's ``graceful_timeout`` is derived from it.
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


@dataclass(frozen=True, slots=True)
class Election:
    """The leader-election threads of one replica (``LEADER_ELECTION=true`` only)."""

    elector: Elector
    watcher: NudgeWatcher
    handoff: HandOff


class Runtime:
    """Everything the one worker process owns."""

    def __init__(
        self,
        *,
        metrics: Metrics,
        nudge: Nudge,
        reconciler: Reconciler,
        worker: Worker,
        app: Flask,
        election: Election | None = None,
        cache: WatchCache | None = None,
        probes: ProbeServer | None = None,
        notifier: Notifier | None = None,
        clock: Callable[[], float] = time.monotonic,
        pinning: PinningService | None = None,
    ) -> None:
        self.metrics = metrics
        self.probes = probes
        self.nudge = nudge
        self.reconciler = reconciler
        self.worker = worker
        self.app = app
        self.election = election
        self.cache = cache
        self.notifier = notifier
        self.pinning = pinning
        self._clock = clock
        self._stop_requested_at: float | None = None

    def start(self) -> None:
        """Start the watched cache and campaigning (if on), the probes' listener (a port in
        use raises here and stops the worker at boot), then the reconcile thread."""
        if self.cache is not None:
            self.cache.start()
        if self.election is not None:
            self.election.elector.start()
            self.election.watcher.start()
            self.election.handoff.start()
        if self.probes is not None:
            self.probes.start()
        if self.notifier is not None:
            self.notifier.start()
        if self.pinning is not None:
            self.pinning.start()
        self.worker.start()

    def begin_stop(self) -> None:
        """SIGTERM arrived: tell the reconcile thread to stop now, without waiting.

        Called from the worker's signal handler (``http_worker.DeadlineThreadWorker``), so
        the pass winds down while gunicorn drains requests, not after.
        """
        if self._stop_requested_at is None:
            self._stop_requested_at = self._clock()
        self.worker.request_stop()
        if self.cache is not None:
            self.cache.request_stop()
        if self.notifier is not None:
            self.notifier.request_stop()

    def stop(self, timeout: float = RECONCILE_STOP_SECONDS) -> None:
        """Stop the reconcile thread, then hand the lease back (only if that stop was clean).

        The thread gets ``timeout`` seconds from ``begin_stop`` (or from now). Raises
        ``WorkerStopTimeoutError`` after releasing nothing when a pass is stuck: the lease
        then simply expires, and the stuck pass cannot delete past the renew deadline.
        """
        self.begin_stop()
        assert self._stop_requested_at is not None
        left = timeout - (self._clock() - self._stop_requested_at)
        stopped = False
        try:
            self.worker.stop(timeout=max(0.1, left))
            stopped = True
        finally:
            if self.election is not None:
                self._stop_election(self.election, release=stopped)
            if self.cache is not None:
                try:
                    self.cache.stop(CACHE_STOP_SECONDS)
                except Exception as exc:  # daemon threads: the process exits anyway
                    log.error("stopping the watched cache: %s", exc)
            if self.notifier is not None:
                self.notifier.stop(NOTIFIER_STOP_SECONDS)
            if self.pinning is not None:
                self.pinning.stop(timeout=0.5)
            if self.probes is not None:
                # Last, so /readyz says "shutting down" until the end; at most one poll
                # (0.2 s), inside the second GRACEFUL_TIMEOUT_SECONDS leaves for the exit.
                self.probes.stop(timeout=0.5)

    def _stop_election(self, election: Election, *, release: bool) -> None:
        # All three are told first, then joined against one deadline: one stuck must not
        # keep the others (or the release) from running, and the process exits anyway.
        election.handoff.request_stop()
        election.watcher.request_stop()
        election.elector.request_stop()
        deadline = self._clock() + ELECTION_STOP_SECONDS
        steps: tuple[tuple[str, Callable[[float], None]], ...] = (
            ("hand-off", election.handoff.stop),
            ("nudge watcher", election.watcher.stop),
            ("elector", lambda left: election.elector.stop(left, release=release)),
        )
        for name, stop in steps:
            try:
                stop(max(0.05, deadline - self._clock()))
            except Exception as exc:  # one failing must not keep the others from stopping
                log.error("stopping the %s: %s", name, exc)


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
    """Wire one process's objects together. Cheap: no network until the first pass.

    Without an injected ``cluster`` the Kubernetes adapter is both the cluster and the Node
    reader; with one, Nodes are read only through ``nodes``. The quarantine's record is the
    ConfigMap ``QUARANTINE_CONFIGMAP`` names (memory only without it), notifications go to
    ``NOTIFY_URLS`` through Apprise (none without them)."""
    metrics = Metrics(CollectorRegistry())
    nudge = Nudge(metrics, tag_interval_seconds=config.tag_pass_interval_seconds)
    settings = config.leader_election
    identity = (settings.identity if settings else None) or default_identity()
    election, may_act, webhook_nudge, webhook_later = _leadership(
        settings, lease, identity, metrics, nudge
    )
    evicting = config.rollout_method is RolloutMethod.EVICT
    cache: WatchCache | None = None
    if cluster is None:
        kube, cache = _kube_cluster(config, metrics, evicting=evicting)
        cluster, nodes = kube, nodes or kube
    events = events or (KubeEvents(instance=identity) if config.emit_events else None)
    registry = registry or _registry(config, metrics)
    pinning = _pinning(config, metrics, registry=registry, events=events)
    credentials = pull_credentials(
        config,
        secrets=secrets or KubeSecrets(observe=metrics.kube_request),
        on_secret=logs.redact_also,  # each pull secret's password, as it is read
    )
    notifier = _notifier(config, metrics, notify)
    announcer = Announcer(
        metrics=metrics,
        events=events,
        notify=notifier.post if notifier is not None else _nobody,
        dry_run=config.dry_run,
        evicting=evicting,
    )
    reconciler = Reconciler(
        cluster=cluster,
        nodes=nodes,
        registry=registry,
        metrics=metrics,
        registries=config.registry_hosts,
        dry_run=config.dry_run,
        may_act=may_act,  # before every deletion
        leading=may_act,  # followers skip whole passes
        **_term_and_authority(election),
        announcer=announcer,
        quarantine=quarantine or _quarantine_record(config),
        guardrails=config.guardrails,
        lookups_per_namespace=config.tenancy.lookups_per_namespace,
        halted_after=timedelta(seconds=config.rollout_halted_after_seconds),
        credentials=credentials,
        pinning=pinning is not None,
        approvals=pinning.approver if pinning is not None else None,
    )
    tick: Callable[[Callable[[], bool], Scope], TickReport] = reconciler.tick
    if cache is not None:
        # Rolls go on as soon as a replacement is Ready, not at the next poll.
        tick = RollPacer(
            watch=cache, nudge=nudge.nudge, metrics=metrics, later=nudge.nudge_in
        ).paced(tick)
    worker = _worker(config, tick, nudge, metrics)
    app = create_app(
        webhook_secret=config.webhook_secret.reveal(),
        nudge=webhook_nudge,
        metrics=metrics,
        live=worker.liveness,
        ready=worker.readiness,
        forgejo_host=config.forgejo_host,
        receiving=receiving(config),
        later=webhook_later,
    )
    probes = ProbeServer(
        config.probe_host.strip("[]"),  # "[::]" names the IPv6 wildcard
        config.probe_port,
        live=worker.liveness,
        ready=worker.readiness,
    )
    return Runtime(
        metrics=metrics,
        nudge=nudge,
        reconciler=reconciler,
        worker=worker,
        app=app,
        election=election,
        cache=cache,
        probes=probes,
        notifier=notifier,
        pinning=pinning,
    )


def _pinning(
    config: Config, metrics: Metrics, *, registry: RegistryPort, events: EventPort | None
) -> PinningService | None:
    """The pinning webhook (docs/adr/028), or None when ``PINNING`` is off."""
    settings = config.pinning
    if settings is None:
        return None
    return PinningService(
        settings,
        guardrails=config.guardrails,
        registries=config.registry_hosts,
        metrics=PinningMetrics(metrics.registry),
        presence=registry if isinstance(registry, PresencePort) else None,
        events=events,
        webhook_config=KubeWebhookConfig(
            settings.webhook_configuration, observe=metrics.kube_request
        )
        if settings.webhook_configuration
        else None,
    )


def receiving(config: Config) -> Receiving:
    """The registries' receivers that are on, with their secrets, and the registries autoroll
    reads (``REGISTRIES`` and the ``FORGEJO_HOST`` shorthand); a registry's receiver always
    names the host, so a push naming none is on no registry autoroll reads."""
    secrets = {s: secret.reveal() for s, secret in config.receivers.secrets}
    return Receiving(secrets, tuple(sorted(config.registry_hosts)), None)


def _nobody(_: object) -> None:
    return None


def _notifier(config: Config, metrics: Metrics, port: NotifyPort | None) -> Notifier | None:
    """The notifier thread, when there is anyone to tell (NOTIFY_URLS, or a port given)."""
    settings = config.notifications
    if port is None:
        if not settings.enabled:
            return None
        port = AppriseNotifier(settings.url_lines(), on_secret=logs.redact_also)
    return Notifier(
        port,
        metrics=metrics,
        happenings=settings.happenings,
        throttle_seconds=settings.throttle_seconds,
    )


def _quarantine_record(config: Config) -> QuarantinePort | None:
    """The ConfigMap that keeps the quarantine (docs/adr/026), if one is named."""
    record = config.quarantine
    if record.configmap is None:
        return None
    return KubeQuarantine(namespace=record.namespace, name=record.configmap)


def _leadership(
    settings: LeaderElection | None,
    lease: LeasePort | None,
    identity: str,
    metrics: Metrics,
    nudge: Nudge,
) -> tuple[
    Election | None,
    Callable[[], bool],
    Callable[[Scope], None],
    Callable[[Scope, float], None],
]:
    """The election (None without one), whether this process may act now, and where a
    verified webhook's nudge goes, at once and some seconds from now (with an election:
    handed to the leader)."""
    if settings is None:
        metrics.leader.set(1)  # alone, so always the leader
        return None, _always, nudge.deliver, nudge.nudge_in
    election = _election(settings, lease, identity=identity, metrics=metrics, nudge=nudge)
    handoff = election.handoff
    return election, election.elector.may_act, handoff.nudge, handoff.nudge_in


def _term_and_authority(election: Election | None) -> dict[str, Any]:
    """With an election, the Reconciler's leadership term and the authority a deletion may
    use; alone, one term for the process and no bound (the defaults)."""
    if election is None:
        return {}
    elector = election.elector
    return {"term": lambda: elector.term, "authority": elector.authority_left}


def _kube_cluster(
    config: Config, metrics: Metrics, *, evicting: bool
) -> tuple[KubeCluster, WatchCache | None]:
    """The Kubernetes adapter, with its watched cache when ``config.watch_cache``."""
    cache: WatchCache | None = None
    if config.watch_cache:
        cache = WatchCache(
            label_selector=config.label_selector,
            rest=LazyRest(lambda: connect(pool_size=CACHE_POOL_SIZE), observe=metrics.kube_request),
            kinds=config.workload_kinds,
            metrics=metrics,
            resync_seconds=config.cache_resync_seconds,
            namespaces=config.tenancy.namespaces,
            namespaced=config.tenancy.namespaced,
        )
    kube = KubeCluster(
        label_selector=config.label_selector,
        evict=evicting,
        platform_aware=config.platform_aware,
        kinds=config.workload_kinds,
        cache=cache,
        observe=metrics.kube_request,
        namespaces=config.tenancy.namespaces,
        namespaced=config.tenancy.namespaced,
    )
    return kube, cache


def _worker(
    config: Config,
    tick: Callable[[Callable[[], bool], Scope], TickReport],
    nudge: Nudge,
    metrics: Metrics,
) -> Worker:
    return Worker(
        tick,
        nudge=nudge,
        interval_seconds=config.poll_interval_seconds,
        metrics=metrics,
        expected_errors=(ClusterError,),
        pass_timeout_seconds=config.pass_timeout_seconds,
        step_seconds=STEP_SECONDS,
    )


def _always() -> bool:
    return True


def _registry(config: Config, metrics: Metrics) -> RegistryPool:
    # each Bearer token fetched is redacted from then on
    return registry_pool(config, observer=metrics, on_secret=logs.redact_also)


def _election(
    settings: LeaderElection,
    lease: LeasePort | None,
    *,
    identity: str,
    metrics: Metrics,
    nudge: Nudge,
) -> Election:
    """The elector, the leader's nudge watcher and the webhook hand-off, on one Lease."""
    port = lease or KubeLease(namespace=settings.namespace, name=settings.lease_name)
    elector = Elector(
        port,
        identity=identity,
        timings=Timings(
            lease_duration=settings.lease_duration_seconds,
            renew_deadline=settings.renew_deadline_seconds,
            retry_period=settings.retry_period_seconds,
        ),
        metrics=metrics,
        on_elected=nudge.nudge,  # a new leader reconciles at once, not a poll later
    )
    return Election(
        elector=elector,
        watcher=NudgeWatcher(port, elector=elector, on_nudge=nudge.nudge, metrics=metrics),
        handoff=HandOff(port, elector=elector, local=nudge.deliver, metrics=metrics),
    )


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
        runtime_factory: Callable[[Config], Runtime] = build_runtime,
    ) -> None:
        self._config = config
        self._factory = runtime_factory
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
    """gunicorn hook, in the worker process: start the one reconcile thread."""
    runtime: Runtime | None = worker.app.runtime
    if runtime is None:  # pragma: no cover - gunicorn always loads the app first
        raise RuntimeError("the app was not loaded before post_worker_init")
    runtime.start()
    log.info("reconcile thread started in worker pid %s", worker.pid)


def _worker_exit(server: Any, worker: Any) -> None:
    """gunicorn hook, in the worker process after its request loop ended: stop the thread."""
    runtime: Runtime | None = getattr(worker.app, "runtime", None)
    if runtime is None:
        return
    try:
        runtime.stop(timeout=RECONCILE_STOP_SECONDS)
    except WorkerStopTimeoutError as exc:
        # The thread is a daemon: the process exits anyway; say so loudly.
        log.error("%s; exiting without waiting for it", exc)
    else:
        log.info("reconcile thread stopped")


def serve(config: Config) -> int:
    """Run gunicorn in the foreground until it is told to stop; return its exit status."""
    AutorollServer(config).run()
    return 0
