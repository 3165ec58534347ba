"""The pinning webhook's metrics (docs/adr/028), on the process's one registry.

Kept beside ``metrics.Metrics`` rather than in it: they exist only with ``PINNING=true``,
and the admission handler may one day live in another process than the pass (it takes
this object, nothing else of the controller's). Label values are closed sets.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from autoroll.instruments.traffic import MetricMaker


class PinningMetrics:
    """Admission answers, their latency, the view's size and what the pass saw unpinned."""

    def __init__(self, registry: CollectorRegistry) -> None:
        make = MetricMaker(registry)
        self.admissions = make.counter(
            "admissions",
            "Pod CREATE admission reviews answered, by result: pinned, nothing-to-pin,"
            " not-enrolled, no-controller, not-a-pod, bad-request, error (every answer but"
            " bad-request allows the pod).",
            labels=["result"],
        )
        self.admission_seconds = make.histogram(
            "admission_seconds",
            "Time to answer one admission review, from its body read to its answer written.",
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1),
        )
        self.approved_workloads = make.gauge(
            "pinning_workloads",
            "Workloads the admission view holds approvals for, by state: target (every tag"
            " approved on its registry digest) or held (some tag pinned to the digest it was"
            " last rolled to, or not pinned, while a newer one waits).",
            labels=["state"],
        )
        self.unpinned_pods = make.counter(
            "pods_admitted_unpinned",
            "Pods of enrolled workloads seen running their tag unpinned although the view had"
            " a digest for it (the webhook was not reached; failurePolicy Ignore let them in).",
        )
        self.presence_checks = make.counter(
            "pinning_presence_checks",
            "HEADs by digest asking whether the registry still holds a held-back digest, by"
            " answer (present, gone, unknown).",
            labels=["answer"],
        )
        self.certificate_rotations = make.counter(
            "pinning_certificate_rotations",
            "Serving certificates the controller made for the webhook (its first included),"
            " or loaded again from a mounted Secret (cert-manager).",
        )


__all__ = ["PinningMetrics"]
