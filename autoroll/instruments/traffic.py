"""The controller's traffic with the outside world, as Prometheus objects.

What autoroll asks of the Kubernetes API (and what its watched cache holds), what it sends
to the registries, the webhooks and nudges it receives, and the leader election's Lease;
with the observer protocols the adapters count through (``kube_request``, ``request_sent``,
``lookup_failed``). ``autoroll.instruments.metrics.Metrics`` builds these beside the passes'
own metrics, on the same injected registry, in one instance per process.
"""

from __future__ import annotations

from collections.abc import Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

PREFIX = "autoroll"


class MetricMaker:
    """Makes the controller's metrics on one registry, each named ``autoroll_<name>``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def counter(self, name: str, documentation: str, *, labels: Sequence[str] = ()) -> Counter:
        return Counter(f"{PREFIX}_{name}", documentation, labels, registry=self.registry)

    def gauge(self, name: str, documentation: str, *, labels: Sequence[str] = ()) -> Gauge:
        return Gauge(f"{PREFIX}_{name}", documentation, labels, registry=self.registry)

    def histogram(self, name: str, documentation: str, *, buckets: Sequence[float]) -> Histogram:
        return Histogram(f"{PREFIX}_{name}", documentation, buckets=buckets, registry=self.registry)


class TrafficMetrics:
    """The metrics of the traffic with the outside; built by ``Metrics.__init__``."""

    def _kubernetes(self, make: MetricMaker) -> None:
        """What the controller asks of the Kubernetes API, and the watched cache."""
        self.kube_requests = make.counter(
            "kube_requests",
            "Requests sent to the Kubernetes API, by operation (list pods, watch pods,"
            " delete pod, ...): a pass's lists and fresh reads, the cache's lists and watches.",
            labels=["operation"],
        )
        self.cache_synced = make.gauge(
            "cache_synced",
            "1 while the watched cache holds every enrolled workload and its pods (passes"
            " then list nothing), 0 while it lists or reconnects (passes list, as without it).",
        )
        self.cache_relists = make.counter(
            "cache_relists",
            "Full lists the watched cache made, by cause (start, resync, broken watch,"
            " expired resourceVersion, selector change).",
            labels=["cause"],
        )
        self.cache_objects = make.gauge(
            "cache_objects",
            "Objects the watched cache holds, by kind (workloads, pods).",
            labels=["kind"],
        )

    def _registry_lookups(self, make: MetricMaker) -> None:
        """What the registry client sent and what stayed unknown."""
        self.registry_requests = make.counter(
            "registry_requests",
            "HTTP requests sent to the image registry, by kind (manifest HEAD, index GET, token).",
            labels=["kind"],
        )
        self.registry_errors = make.counter(
            "registry_errors",
            "Registry lookups that ended unknown, by reason; an unknown digest never rolls.",
            labels=["reason"],
        )

    def _webhooks(self, make: MetricMaker) -> None:
        """POST /webhook, the registries' receivers, and the nudges they cause."""
        self.webhook_requests = make.counter(
            "webhook_requests",
            "Webhook deliveries by source (forgejo: POST /webhook; a registry: POST"
            " /webhook/<source>) and outcome; a refused token counts as bad-signature.",
            labels=["source", "outcome"],
        )
        self.nudges = make.counter(
            "nudges",
            "Requests for a reconcile pass (poll timer excluded), whether or not they coalesced.",
        )
        self.nudges_coalesced = make.counter(
            "nudges_coalesced",
            "Nudges that arrived while one was already pending and were folded into it.",
        )
        self.nudges_deferred = make.counter(
            "nudges_deferred",
            "Webhook deliveries for a tag a pass took within TAG_PASS_INTERVAL_SECONDS: held"
            " until that interval ends, then looked at once (autoroll.core.debounce).",
        )

    def _election(self, make: MetricMaker) -> None:
        """Leader election and the webhook hand-off (LEADER_ELECTION=true)."""
        self.leader = make.gauge(
            "leader",
            "1 while this replica is the leader and may delete pods, else 0 (always 1 when"
            " leader election is off).",
        )
        self.leadership_changes = make.counter(
            "leadership_changes",
            "This replica acquired, lost (renew deadline passed or lease taken) or released"
            " (shutdown) the leader lease.",
            labels=["change"],
        )
        self.lease_errors = make.counter(
            "lease_errors",
            "Lease reads or writes that failed (API unreachable, 5xx, RBAC).",
        )
        self.handoffs = make.counter(
            "webhook_handoffs",
            "Verified webhooks routed by leader election: local (this replica leads), published"
            " (on the Lease for the leader), received (by the leader, from the Lease), error.",
            labels=["outcome"],
        )

    # -- the adapters' observer protocols -----------------------------------------------------

    def kube_request(self, operation: str) -> None:
        """The Kubernetes adapter sent one request of ``operation`` ("list pods", ...)."""
        self.kube_requests.labels(operation=operation).inc()

    def request_sent(self, kind: str) -> None:
        """The registry client sent one HTTP request of ``kind``."""
        self.registry_requests.labels(kind=kind).inc()

    def lookup_failed(self, reason: str) -> None:
        """A registry lookup ended unknown for ``reason``."""
        self.registry_errors.labels(reason=reason).inc()
