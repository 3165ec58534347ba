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

from prometheus_client import CollectorRegistry

from autoroll.instruments.traffic import PREFIX, MetricMaker, TrafficMetrics


class Metrics(TrafficMetrics):
    """Every metric the controller exports; one instance per process. Here what the passes
    did (passes, pods, quarantine, guardrails); the traffic with the outside world
    (Kubernetes, registries, webhooks, the election) is built by ``TrafficMetrics``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        make = MetricMaker(registry)
        self._passes(make)
        self._pod_outcomes(make)
        self._guardrails(make)
        self._kubernetes(make)
        self._registry_lookups(make)
        self._webhooks(make)
        self._election(make)

    def _passes(self, make: MetricMaker) -> None:
        """Reconcile passes: how many, how long, their scope, the workloads they read."""
        self.ticks = make.counter(
            "ticks",
            "Reconcile passes, by outcome (ok: completed; error: failed and was survived).",
            labels=["outcome"],
        )
        self.tick_duration = make.histogram(
            "tick_duration_seconds",
            "Wall time of one reconcile pass, including registry and API calls.",
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
        )
        self.pass_scopes = make.counter(
            "pass_scopes",
            "Reconcile passes by scope: full (the poll timer, the first pass, a webhook whose"
            " body names no tag) or targeted (a package webhook's tag, a workload mid-roll).",
            labels=["scope"],
        )
        self.roll_pace_nudges = make.counter(
            "roll_pace_nudges",
            "Targeted passes asked for because a rolling workload's pods settled in the"
            " watched cache (its replacement is Ready): the next pod goes now, not at the poll.",
        )
        self.fresh_reads = make.counter(
            "fresh_reads",
            "Workloads whose pods were read again from the API right before a deletion was"
            " decided on (one narrow list each; the deletion is decided on that read).",
        )
        self.workloads = make.gauge(
            "workloads",
            "Enrolled workloads the last pass read, by kind (deployment, statefulset, daemonset).",
            labels=["kind"],
        )

    def _pod_outcomes(self, make: MetricMaker) -> None:
        """What the passes decided and did about pods: deletions, skips, spares, halts, Events."""
        self.deletions = make.counter(
            "pod_deletions",
            "Stale pods deleted (mode=real) or that would have been (mode=dry, DRY_RUN), by the"
            " kind of workload they belong to.",
            labels=["mode", "kind"],
        )
        self.deletions_not_done = make.counter(
            "pod_deletions_not_done",
            "Deletions that did not happen: pod already gone (404), replaced (UID precondition)"
            " or, with ROLLOUT_METHOD=evict, blocked by a PodDisruptionBudget (429); by kind.",
            labels=["reason", "kind"],
        )
        self.containers_skipped = make.counter(
            "containers_skipped",
            "Container decisions that were skipped this tick, by reason and workload kind.",
            labels=["reason", "kind"],
        )
        self.loop_guard_hits = make.counter(
            "loop_guard_hits",
            "Stale-looking pods spared because they were created after the target digest was"
            " first seen (the runtime reports an old digest for a fresh pull), by kind.",
            labels=["kind"],
        )
        self.rollouts_halted = make.gauge(
            "rollouts_halted",
            "Workloads whose rollout the last pass found halted: stale pods wait behind a"
            " pod that has not been Ready for ROLLOUT_HALTED_AFTER_SECONDS, or behind a"
            " replacement that restarted or went unready inside its health window"
            " (ROLL_HEALTHY_SECONDS); by kind.",
            labels=["kind"],
        )
        self.events = make.counter(
            "kubernetes_events",
            "Kubernetes Events about rolls (EMIT_EVENTS=true): one per roll started, done,"
            " halted or quarantined; by outcome (created, error).",
            labels=["outcome"],
        )
        self.notifications = make.counter(
            "notifications",
            "Notifications about rolls (NOTIFY_URLS): by happening (started, done, halted,"
            " quarantined) and outcome (sent, failed, dropped: more than the queue holds).",
            labels=["happening", "outcome"],
        )
        self._quarantine(make)

    def _quarantine(self, make: MetricMaker) -> None:
        """The digests quarantined for their tags (docs/adr/026)."""
        self.digests_quarantined = make.gauge(
            "digests_quarantined",
            "Digests quarantined for their repository:tag (a halt's evidence; not cleared, the"
            " tag not moved since): no workload rolls onto them.",
        )
        self.quarantines = make.counter(
            "quarantines",
            "Digests quarantined for their repository:tag by this process (a halted roll).",
        )
        self.quarantine_write_errors = make.counter(
            "quarantine_write_errors",
            "Writes of the quarantine's ConfigMap that failed (tried again at the next pass).",
        )

    def _guardrails(self, make: MetricMaker) -> None:
        """What the guardrails held back, and the budget as the last pass left it."""
        self.deletions_held = make.counter(
            "deletions_held",
            "Deletions decided but held by a guardrail this pass, by reason (budget, maturing,"
            " outside-window, paused, invalid-policy) and workload kind; counted again every"
            " pass they wait.",
            labels=["reason", "kind"],
        )
        self.budget_used = make.gauge(
            "roll_budget_used",
            "Deletions counted against ROLL_BUDGET_DELETIONS in the last"
            " ROLL_BUDGET_PERIOD_SECONDS, the last pass's included.",
        )
        self.mid_roll = make.gauge(
            "workloads_mid_roll",
            "Enrolled workloads mid-roll as the last pass began (ROLL_BUDGET_IN_FLIGHT bounds"
            " how many may be).",
        )
        self.paused = make.gauge(
            "paused",
            "1 while rolling is paused cluster-wide (ROLL_PAUSED=true), else 0.",
        )
        self.workloads_paused = make.gauge(
            "workloads_paused",
            "Enrolled workloads paused by their autoroll.aethnet.se/paused annotation.",
        )
        self.workloads_invalid_policy = make.gauge(
            "workloads_invalid_policy",
            "Enrolled workloads not rolled because an autoroll.aethnet.se/ annotation cannot"
            " be read.",
        )


__all__ = ["PREFIX", "Metrics"]
