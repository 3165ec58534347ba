"""The controller as one object: everything that reconciles, wired from a ``Config``.

``Controller`` owns the metrics registry, the nudge, the reconciler and its one reconcile
thread, the watched cache and, with ``LEADER_ELECTION``, the elector, the nudge watcher and
the webhook hand-off. Exactly one exists per pod: ``autoroll serve`` builds it in the
reconcile process (``autoroll.edge.reconcile_main``, docs/adr/027), tests build it in their
own process (``autoroll.edge.server.build_runtime``). The HTTP edge sees it only through the
``ControllerLink`` calls it answers: ``deliver`` a verified webhook's scope, ``status`` of the
loop for the probes, ``exposition`` of the metrics, and the start and stop.

Shutdown order (docs/adr/002): ``begin_stop`` tells the reconcile thread and the cache at
once; ``stop`` joins the thread within ``RECONCILE_STOP_SECONDS`` of that, then stops the
election threads together within ``ELECTION_STOP_SECONDS`` and releases the Lease only if
the thread stopped in time, then the cache.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final
from urllib.parse import quote

from prometheus_client import CollectorRegistry, generate_latest

from autoroll.config import Config
from autoroll.config.choices import RolloutMethod
from autoroll.config.leader import LeaderElection
from autoroll.controller.announcer import Announcer
from autoroll.controller.handoff import HandOff, NudgeWatcher
from autoroll.controller.leader import Elector
from autoroll.controller.notifier import Notifier
from autoroll.controller.pacer import RollPacer
from autoroll.controller.reconciler import Reconciler, TickReport
from autoroll.controller.worker import Health, LoopStatus, Nudge, Worker
from autoroll.core.election import Timings, default_identity
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
from autoroll.core.scope import Scope
from autoroll.edge.pinning_service import PinningService
from autoroll.edge.registries import pull_credentials, registry_pool, registry_secrets
from autoroll.edge.services import (
    QuarantineHolds,
    nobody,
    notifier_for,
    pinning_service,
    quarantine_record,
)
from autoroll.instruments import logs
from autoroll.instruments.metrics import Metrics
from autoroll.kube import ClusterError, KubeCluster, KubeEvents, KubeLease, WatchCache
from autoroll.kube.secrets import KubeSecrets
from autoroll.kube.transport import REQUEST_TIMEOUT, LazyRest, call_seconds, connect
from autoroll.notify.apprise_notifier import secret_parts
from autoroll.registry import Limits
from autoroll.registry.pool import RegistryPool

log = logging.getLogger(__name__)

#: Seconds the reconcile thread gets after SIGTERM (counted from the signal: the pass is
#: told to stop while gunicorn still drains requests).
RECONCILE_STOP_SECONDS: Final = 10.0
#: Seconds the three election threads get to stop, together (they wait on events or one
#: short API call).
ELECTION_STOP_SECONDS: Final = 3.0
#: Connections the watched cache may keep open: one per watch (the enrolled workloads and
#: each namespace holding one), plus its lists.
CACHE_POOL_SIZE: Final = 512
#: Seconds the watched cache's threads get to stop (they wait on a socket, aborted at once).
CACHE_STOP_SECONDS: Final = 3.0
#: Seconds the notifier's thread gets to stop; a send in flight is abandoned (a daemon).
NOTIFIER_STOP_SECONDS: Final = 0.5
#: Seconds the pinning webhook's listener and certificate threads get to stop.
PINNING_STOP_SECONDS: Final = 0.5
#: The longest single step of a pass: one Kubernetes API call, or the registry's budget.
STEP_SECONDS: Final = max(call_seconds(REQUEST_TIMEOUT), Limits().budget_seconds)


@dataclass(frozen=True, slots=True)
class Election:
    """The leader-election threads of one replica (``LEADER_ELECTION=true`` only)."""

    elector: Elector
    watcher: NudgeWatcher
    handoff: HandOff


class Controller:
    """Everything that reconciles (module docstring); one per pod."""

    def __init__(
        self,
        *,
        metrics: Metrics,
        nudge: Nudge,
        reconciler: Reconciler,
        worker: Worker,
        deliver: Callable[[Scope], None],
        deliver_later: Callable[[Scope, float], None],
        election: Election | None = None,
        cache: WatchCache | None = None,
        notifier: Notifier | None = None,
        pinning: PinningService | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.metrics = metrics
        self.notifier = notifier
        self.pinning = pinning
        self.nudge = nudge
        self.reconciler = reconciler
        self.worker = worker
        self.election = election
        self.cache = cache
        self._deliver = deliver
        self._deliver_later = deliver_later
        self._clock = clock
        self._stop_requested_at: float | None = None

    # -- what the HTTP edge asks ------------------------------------------------------------

    def deliver(self, scope: Scope) -> None:
        """A verified webhook's nudge: debounced per tag, or handed to the leader."""
        self._deliver(scope)

    def deliver_later(self, scope: Scope, seconds: float) -> None:
        """A verified delivery to look at ``seconds`` from now (the receivers' re-checks)."""
        self._deliver_later(scope, seconds)

    def status(self) -> LoopStatus:
        return self.worker.status()

    def liveness(self) -> Health:
        return self.worker.liveness()

    def readiness(self) -> Health:
        return self.worker.readiness()

    def exposition(self) -> bytes:
        """Every metric, as ``/metrics`` serves it."""
        return generate_latest(self.metrics.registry)

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        """Start the watched cache and campaigning (if on), then the reconcile thread."""
        if self.cache is not None:
            self.cache.start()
        if self.election is not None:
            self.election.elector.start()
            self.election.watcher.start()
            self.election.handoff.start()
        if self.notifier is not None:
            self.notifier.start()
        if self.pinning is not None:
            self.pinning.start()
        self.worker.start()

    def begin_stop(self) -> None:
        """SIGTERM arrived: tell the reconcile thread to stop now, without waiting (safe in
        a signal handler), so the pass winds down while requests drain, not after."""
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
                self.pinning.stop(timeout=PINNING_STOP_SECONDS)

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


def build_controller(
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
) -> Controller:
    """Wire the controller's objects together. Cheap: no network until it starts.

    Without an injected ``cluster`` the Kubernetes adapter is both the cluster and the Node
    reader; with one, Nodes are read only through ``nodes``. The quarantine's record is the
    ConfigMap ``QUARANTINE_CONFIGMAP`` names (memory only without it), notifications go to
    ``NOTIFY_URLS`` through Apprise (none without them), and with ``PINNING`` the admission
    webhook answers from this process's approvals (docs/adr/028)."""
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
    # The quarantine holds approvals too: a late-bound read of the reconciler's copy.
    pinning = pinning_service(
        config,
        metrics,
        registry=registry,
        events=events,
        holds=QuarantineHolds(lambda: reconciler.quarantine_book),
    )
    credentials = pull_credentials(
        config,
        secrets=secrets or KubeSecrets(observe=metrics.kube_request),
        on_secret=logs.redact_also,  # each pull secret's password, as it is read
    )
    notifier = notifier_for(config, metrics, notify)
    announcer = Announcer(
        metrics=metrics,
        events=events,
        notify=notifier.post if notifier is not None else nobody,
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
        quarantine=quarantine or quarantine_record(config),
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
    return Controller(
        metrics=metrics,
        nudge=nudge,
        reconciler=reconciler,
        worker=_worker(config, tick, nudge, metrics),
        deliver=webhook_nudge,
        deliver_later=webhook_later,
        election=election,
        cache=cache,
        notifier=notifier,
        pinning=pinning,
    )


def log_secrets(config: Config) -> list[str]:
    """Every form of the configured secrets a log line could carry (``logs.derived_forms``):
    each process that logs redacts them (``logs.configure(secrets=...)``)."""
    token = config.forgejo_token.reveal()
    forgejo = logs.derived_forms(user=config.forgejo_user, token=token) if token else []
    return [
        *forgejo,
        config.webhook_secret.reveal(),
        *registry_secrets(config),
        # A receiver's token may travel in a URL path: its percent-encoded form too.
        *(f for _, s in config.receivers.secrets for f in (s.reveal(), quote(s.reveal(), safe=""))),
        *(part for url in config.notifications.url_lines() for part in secret_parts(url)),
    ]


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
