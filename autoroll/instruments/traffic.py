"""The controller's traffic with the outside world, as Prometheus objects.

What autoroll asks of the Kubernetes API (and what its watched cache holds), what it sends
to the registries, the webhooks and nudges it receives, and the leader election's Lease;
with the observer protocols the adapters count through (``kube_request``, ``request_sent``,
``lookup_failed``). ``autoroll.instruments.metrics.Metrics`` builds these beside the passes'
own metrics, on the same injected registry, in one instance per process.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

PREFIX = "autoroll"


class TrafficMetrics:
    """The metrics of the traffic with the outside; built by ``Metrics.__init__``."""

    def _kubernetes(self, registry: CollectorRegistry) -> None:
        """What the controller asks of the Kubernetes API, and the watched cache."""
        self.kube_requests = Counter(
            f"{PREFIX}_kube_requests",
            "Requests sent to the Kubernetes API, by operation (list pods, watch pods,"
            " delete pod, ...): a pass's lists and fresh reads, the cache's lists and watches.",
            ["operation"],
            registry=registry,
        )
        self.cache_synced = Gauge(
            f"{PREFIX}_cache_synced",
            "1 while the watched cache holds every enrolled workload and its pods (passes"
            " then list nothing), 0 while it lists or reconnects (passes list, as without it).",
            registry=registry,
        )
        self.cache_relists = Counter(
            f"{PREFIX}_cache_relists",
            "Full lists the watched cache made, by cause (start, resync, broken watch,"
            " expired resourceVersion, selector change).",
            ["cause"],
            registry=registry,
        )
        self.cache_objects = Gauge(
            f"{PREFIX}_cache_objects",
            "Objects the watched cache holds, by kind (workloads, pods).",
            ["kind"],
            registry=registry,
        )

    def _registry_lookups(self, registry: CollectorRegistry) -> None:
        """What the registry client sent and what stayed unknown."""
        self.registry_requests = Counter(
            f"{PREFIX}_registry_requests",
            "HTTP requests sent to the image registry, by kind (manifest HEAD, index GET, token).",
            ["kind"],
            registry=registry,
        )
        self.registry_errors = Counter(
            f"{PREFIX}_registry_errors",
            "Registry lookups that ended unknown, by reason; an unknown digest never rolls.",
            ["reason"],
            registry=registry,
        )

    def _webhooks(self, registry: CollectorRegistry) -> None:
        """POST /webhook, the registries' receivers, and the nudges they cause."""
        self.webhook_requests = Counter(
            f"{PREFIX}_webhook_requests",
            "Webhook deliveries by source (forgejo: POST /webhook; a registry: POST"
            " /webhook/<source>) and outcome; a refused token counts as bad-signature.",
            ["source", "outcome"],
            registry=registry,
        )
        self.nudges = Counter(
            f"{PREFIX}_nudges",
            "Requests for a reconcile pass (poll timer excluded), whether or not they coalesced.",
            registry=registry,
        )
        self.nudges_coalesced = Counter(
            f"{PREFIX}_nudges_coalesced",
            "Nudges that arrived while one was already pending and were folded into it.",
            registry=registry,
        )
        self.nudges_deferred = Counter(
            f"{PREFIX}_nudges_deferred",
            "Webhook deliveries for a tag a pass took within TAG_PASS_INTERVAL_SECONDS: held"
            " until that interval ends, then looked at once (autoroll.core.debounce).",
            registry=registry,
        )

    def _election(self, registry: CollectorRegistry) -> None:
        """Leader election and the webhook hand-off (LEADER_ELECTION=true)."""
        self.leader = Gauge(
            f"{PREFIX}_leader",
            "1 while this replica is the leader and may delete pods, else 0 (always 1 when"
            " leader election is off).",
            registry=registry,
        )
        self.leadership_changes = Counter(
            f"{PREFIX}_leadership_changes",
            "This replica acquired, lost (renew deadline passed or lease taken) or released"
            " (shutdown) the leader lease.",
            ["change"],
            registry=registry,
        )
        self.lease_errors = Counter(
            f"{PREFIX}_lease_errors",
            "Lease reads or writes that failed (API unreachable, 5xx, RBAC).",
            registry=registry,
        )
        self.handoffs = Counter(
            f"{PREFIX}_webhook_handoffs",
            "Verified webhooks routed by leader election: local (this replica leads), published"
            " (on the Lease for the leader), received (by the leader, from the Lease), error.",
            ["outcome"],
            registry=registry,
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
