"""The strategies a ``bench.tick`` process measures, each built as one pass: autoroll as it
runs (listed, or on its watched cache), autoroll with each pass held after the registry
answered (``stalled``), the naive baseline (``bench.naive``) and the floor (lists only).
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from prometheus_client import CollectorRegistry

from autoroll.controller.reconciler import Reconciler
from autoroll.core.decide import Decision
from autoroll.core.model import WorkloadKind
from autoroll.core.policy import Guardrails
from autoroll.core.scope import Scope
from autoroll.edge.wiring import CACHE_POOL_SIZE
from autoroll.instruments.metrics import Metrics
from autoroll.kube import KubeCluster, KubeRest, connect
from autoroll.kube.cache import WatchCache
from autoroll.kube.lists import list_items
from autoroll.kube.selectors import LabelSelector, pod_list_selector
from autoroll.kube.transport import LIVE_PODS_FIELD_SELECTOR, REQUEST_TIMEOUT, LazyRest
from autoroll.kube.workloads import workload_from_json
from autoroll.registry import Limits, RegistryClient
from bench.counting import count_kubernetes, counting_session
from bench.naive import NaiveController


@dataclass(frozen=True)
class Pass:
    """What one pass returned: its decisions and how many workloads it read again."""

    decisions: Sequence[Decision]
    fresh_reads: int = 0


class StalledRegistry:
    """A ``RegistryPort`` whose ``resolve`` and ``lookup`` return only ``seconds`` after the
    registry answered: the pass's deciding, stretched as a loaded CPU stretches it
    (simulated)."""

    def __init__(self, client: RegistryClient, seconds: float) -> None:
        self._client = client
        self._seconds = seconds

    def resolve(self, refs: Any) -> Any:
        answers = self._client.resolve(refs)
        time.sleep(self._seconds)
        return answers

    def lookup(self, lookups: Any) -> Any:
        answers = self._client.lookup(lookups)
        time.sleep(self._seconds)
        return answers

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


#: The kinds autoroll (and the floor) list each pass: every kind, the default WORKLOAD_KINDS.
KINDS = tuple(WorkloadKind)


def build(
    args: argparse.Namespace, kube: Counter[str], registry: Counter[str]
) -> tuple[Callable[[Scope], Pass], WatchCache | None]:
    """The strategy's pass as a callable taking the scope, and the cache it reads (if any)."""
    env = {"KUBECONFIG": args.kubeconfig}
    client = RegistryClient(
        session=counting_session(registry),
        base_url=args.registry_url,
        user=args.user,
        token=args.token,
        limits=Limits(budget_seconds=args.registry_budget) if args.registry_budget else None,
    )
    port: Any = client
    if args.strategy == "stalled":
        port = StalledRegistry(client, args.stall_after_resolve)
    if args.strategy == "floor":
        floor = lists_only(count_kubernetes(connect(env), kube), args.selector)
        return (lambda scope: Pass(floor())), None
    if args.strategy == "naive":
        naive = NaiveController(
            api_client=count_kubernetes(connect(env), kube),
            registry=client,
            registries={args.host},
            label_selector=args.selector,
        )
        return (lambda scope: Pass(naive.tick())), None
    cache = None
    if args.strategy == "cached":
        # Wired as autoroll.edge.wiring wires it: its own connection pool for the watches.
        cache = WatchCache(
            label_selector=args.selector,
            rest=LazyRest(lambda: count_kubernetes(connect(env, pool_size=CACHE_POOL_SIZE), kube)),
            kinds=KINDS,
        )
    cluster = KubeCluster(
        label_selector=args.selector,
        api_client_factory=lambda: count_kubernetes(connect(env), kube),
        kinds=KINDS,
        cache=cache,
    )
    reconciler = Reconciler(
        cluster=cluster,
        registry=port,
        metrics=Metrics(CollectorRegistry()),
        registries={args.host},
        dry_run=True,
        # The budget lifted: this counts what a pass sends, and the pods the bench created
        # seconds before are, by design, the budget's evidence of a previous leader's
        # deletions (ADR 016), which would hold every deletion (and its fresh read) here.
        # No health window either: with one, a new digest reaches one Deployment first
        # (autoroll.core.rollorder), and the fresh reads counted here would be one, not all.
        guardrails=Guardrails(deletions_per_period=0, in_flight=0, healthy=timedelta(0)),
    )

    def run(scope: Scope) -> Pass:
        report = reconciler.tick(lambda: False, scope)
        return Pass(report.decisions, report.fresh_reads)

    return run, cache


def lists_only(api_client: Any, selector: str) -> Callable[[], Any]:
    """The floor: autoroll's own kinds + namespaces lists (narrowed the same way), read as
    JSON, nothing converted, asked of the registry or decided.

    Not a strategy anyone runs: it shows how much of a pass is transport and JSON parsing,
    and so how much conversion, registry lookups and decisions add on top.
    """
    rest = KubeRest(api_client)

    def run() -> list[Decision]:
        selectors: dict[str, list[LabelSelector]] = {}
        for kind in KINDS:
            listed = rest.list_workloads(kind, label_selector=selector, timeout=REQUEST_TIMEOUT)
            for item in list_items(listed):
                view, pod_selector = workload_from_json(kind, item)
                selectors.setdefault(view.namespace, []).append(pod_selector)
        for namespace in sorted(selectors):
            narrowing = pod_list_selector(selectors[namespace])
            page = rest.list_pods(
                namespace,
                field_selector=LIVE_PODS_FIELD_SELECTOR,
                label_selector=narrowing,
                timeout=REQUEST_TIMEOUT,
            )
            list_items(page)
        return []

    return run
