"""Prometheus objects for the controller, built on an injected ``CollectorRegistry``.

Nothing registers on the global default registry: the one gunicorn worker process builds
one registry, ``/metrics`` serves exactly that one, and tests build their own and read it
with ``get_sample_value`` instead of scraping text. That is also why there is no
multiprocess mode: one worker process, one registry (see docs/adr/002-one-worker-process.md).

Label values are small closed sets (reasons, outcomes, modes, the three workload kinds),
never workload, pod or image names, so cardinality stays bounded however many workloads are
enrolled.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

PREFIX = "autoroll"


class Metrics:
    """Every metric the controller exports; one instance per process."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self._passes(registry)
        self._pod_outcomes(registry)
        self._guardrails(registry)
        self._kubernetes(registry)
        self._registry_lookups(registry)
        self._webhooks(registry)
        self._election(registry)

    def _passes(self, registry: CollectorRegistry) -> None:
        """Reconcile passes: how many, how long, their scope, the workloads they read."""
        self.ticks = Counter(
            f"{PREFIX}_ticks",
            "Reconcile passes, by outcome (ok: completed; error: failed and was survived).",
            ["outcome"],
            registry=registry,
        )
        self.tick_duration = Histogram(
            f"{PREFIX}_tick_duration_seconds",
            "Wall time of one reconcile pass, including registry and API calls.",
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
            registry=registry,
        )
        self.pass_scopes = Counter(
            f"{PREFIX}_pass_scopes",
            "Reconcile passes by scope: full (the poll timer, the first pass, a webhook whose"
            " body names no tag) or targeted (a package webhook's tag, a workload mid-roll).",
            ["scope"],
            registry=registry,
        )
        self.roll_pace_nudges = Counter(
            f"{PREFIX}_roll_pace_nudges",
            "Targeted passes asked for because a rolling workload's pods settled in the"
            " watched cache (its replacement is Ready): the next pod goes now, not at the poll.",
            registry=registry,
        )
        self.fresh_reads = Counter(
            f"{PREFIX}_fresh_reads",
            "Workloads whose pods were read again from the API right before a deletion was"
            " decided on (one narrow list each; the deletion is decided on that read).",
            registry=registry,
        )
        self.workloads = Gauge(
            f"{PREFIX}_workloads",
            "Enrolled workloads the last pass read, by kind (deployment, statefulset, daemonset).",
            ["kind"],
            registry=registry,
        )

    def _pod_outcomes(self, registry: CollectorRegistry) -> None:
        """What the passes decided and did about pods: deletions, skips, spares, halts, Events."""
        self.deletions = Counter(
            f"{PREFIX}_pod_deletions",
            "Stale pods deleted (mode=real) or that would have been (mode=dry, DRY_RUN), by the"
            " kind of workload they belong to.",
            ["mode", "kind"],
            registry=registry,
        )
        self.deletions_not_done = Counter(
            f"{PREFIX}_pod_deletions_not_done",
            "Deletions that did not happen: pod already gone (404), replaced (UID precondition)"
            " or, with ROLLOUT_METHOD=evict, blocked by a PodDisruptionBudget (429); by kind.",
            ["reason", "kind"],
            registry=registry,
        )
        self.containers_skipped = Counter(
            f"{PREFIX}_containers_skipped",
            "Container decisions that were skipped this tick, by reason and workload kind.",
            ["reason", "kind"],
            registry=registry,
        )
        self.loop_guard_hits = Counter(
            f"{PREFIX}_loop_guard_hits",
            "Stale-looking pods spared because they were created after the target digest was"
            " first seen (the runtime reports an old digest for a fresh pull), by kind.",
            ["kind"],
            registry=registry,
        )
        self.rollouts_halted = Gauge(
            f"{PREFIX}_rollouts_halted",
            "Workloads whose rollout the last pass found halted: stale pods wait behind a"
            " pod that has not been Ready for ROLLOUT_HALTED_AFTER_SECONDS, or behind a"
            " replacement that restarted or went unready inside its health window"
            " (ROLL_HEALTHY_SECONDS); by kind.",
            ["kind"],
            registry=registry,
        )
        self.events = Counter(
            f"{PREFIX}_kubernetes_events",
            "Kubernetes Events about rolls (EMIT_EVENTS=true), by outcome (created, error).",
            ["outcome"],
            registry=registry,
        )

    def _guardrails(self, registry: CollectorRegistry) -> None:
        """What the guardrails held back, and the budget as the last pass left it."""
        self.deletions_held = Counter(
            f"{PREFIX}_deletions_held",
            "Deletions decided but held by a guardrail this pass, by reason (budget, maturing,"
            " outside-window, paused, invalid-policy) and workload kind; counted again every"
            " pass they wait.",
            ["reason", "kind"],
            registry=registry,
        )
        self.budget_used = Gauge(
            f"{PREFIX}_roll_budget_used",
            "Deletions counted against ROLL_BUDGET_DELETIONS in the last"
            " ROLL_BUDGET_PERIOD_SECONDS, the last pass's included.",
            registry=registry,
        )
        self.mid_roll = Gauge(
            f"{PREFIX}_workloads_mid_roll",
            "Enrolled workloads mid-roll as the last pass began (ROLL_BUDGET_IN_FLIGHT bounds"
            " how many may be).",
            registry=registry,
        )
        self.paused = Gauge(
            f"{PREFIX}_paused",
            "1 while rolling is paused cluster-wide (ROLL_PAUSED=true), else 0.",
            registry=registry,
        )
        self.workloads_paused = Gauge(
            f"{PREFIX}_workloads_paused",
            "Enrolled workloads paused by their autoroll.aethnet.se/paused annotation.",
            registry=registry,
        )
        self.workloads_invalid_policy = Gauge(
            f"{PREFIX}_workloads_invalid_policy",
            "Enrolled workloads not rolled because an autoroll.aethnet.se/ annotation cannot"
            " be read.",
            registry=registry,
        )

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
