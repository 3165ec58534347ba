"""The controller wired from a ``Config``: ``build_controller`` and the secrets to redact.

``build_controller`` builds every object that reconciles (metrics, nudge, reconciler and its
thread, the watched cache, the election, the registry pool and pull credentials, and the
services: notifier, quarantine record, pinning webhook) and hands them to the
``Controller`` (``autoroll.edge.lifecycle``), which holds, starts and stops them. Exactly
one exists per pod: ``autoroll serve`` builds it in the reconcile process
(``autoroll.edge.reconcile_main``, docs/adr/027), tests build it in their own process
(``autoroll.edge.runtime.build_runtime``). ``log_secrets`` lists every form of the
configured secrets a log line could carry.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, Final, TypedDict, Unpack
from urllib.parse import quote

from prometheus_client import CollectorRegistry

from autoroll.config import Config
from autoroll.config.choices import RolloutMethod
from autoroll.config.leader import LeaderElection
from autoroll.controller.announcer import Announcer
from autoroll.controller.handoff import HandOff, NudgeWatcher
from autoroll.controller.leader import Elector
from autoroll.controller.pacer import RollPacer
from autoroll.controller.reconciler import Reconciler, TickReport
from autoroll.controller.worker import Nudge, Worker
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
from autoroll.edge.lifecycle import Controller, Election
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

#: Connections the watched cache may keep open: one per watch (the enrolled workloads and
#: each namespace holding one), plus its lists.
CACHE_POOL_SIZE: Final = 512
#: The longest single step of a pass: one Kubernetes API call, or the registry's budget.
STEP_SECONDS: Final = max(call_seconds(REQUEST_TIMEOUT), Limits().budget_seconds)


class Adapters(TypedDict, total=False):
    """The adapters a test may hand ``build_controller`` in place of its own; one left out
    (or None) is what the config asks for (``build_controller`` says which)."""

    cluster: ClusterPort | None
    registry: RegistryPort | None
    lease: LeasePort | None
    events: EventPort | None
    nodes: NodePort | None
    secrets: SecretPort | None
    quarantine: QuarantinePort | None
    notify: NotifyPort | None


def build_controller(config: Config, **adapters: Unpack[Adapters]) -> Controller:
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
        settings, adapters.get("lease"), identity, metrics, nudge
    )
    evicting = config.rollout_method is RolloutMethod.EVICT
    cache: WatchCache | None = None
    cluster, nodes = adapters.get("cluster"), adapters.get("nodes")
    if cluster is None:
        kube, cache = _kube_cluster(config, metrics, evicting=evicting)
        cluster, nodes = kube, nodes or kube
    events = adapters.get("events") or (
        KubeEvents(instance=identity) if config.emit_events else None
    )
    registry = adapters.get("registry") or _registry(config, metrics)
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
        secrets=adapters.get("secrets") or KubeSecrets(observe=metrics.kube_request),
        on_secret=logs.redact_also,  # each pull secret's password, as it is read
    )
    notifier = notifier_for(config, metrics, adapters.get("notify"))
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
        quarantine=adapters.get("quarantine") or quarantine_record(config),
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
