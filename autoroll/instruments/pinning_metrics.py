"""The pinning webhook's metrics (docs/adr/028), on the process's one registry.

Kept beside ``metrics.Metrics`` rather than in it: they exist only with ``PINNING=true``,
and the admission handler may one day live in another process than the pass (it takes
this object, nothing else of the controller's). Label values are closed sets.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from autoroll.instruments.metrics import PREFIX


class PinningMetrics:
    """Admission answers, their latency, the view's size and what the pass saw unpinned."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.admissions = Counter(
            f"{PREFIX}_admissions",
            "Pod CREATE admission reviews answered, by result: pinned, nothing-to-pin,"
            " not-enrolled, no-controller, not-a-pod, bad-request, error (every answer but"
            " bad-request allows the pod).",
            ["result"],
            registry=registry,
        )
        self.admission_seconds = Histogram(
            f"{PREFIX}_admission_seconds",
            "Time to answer one admission review, from its body read to its answer written.",
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1),
            registry=registry,
        )
        self.approved_workloads = Gauge(
            f"{PREFIX}_pinning_workloads",
            "Workloads the admission view holds approvals for, by state: target (every tag"
            " approved on its registry digest) or held (some tag pinned to the digest it was"
            " last rolled to, or not pinned, while a newer one waits).",
            ["state"],
            registry=registry,
        )
        self.unpinned_pods = Counter(
            f"{PREFIX}_pods_admitted_unpinned",
            "Pods of enrolled workloads seen running their tag unpinned although the view had"
            " a digest for it (the webhook was not reached; failurePolicy Ignore let them in).",
            registry=registry,
        )
        self.presence_checks = Counter(
            f"{PREFIX}_pinning_presence_checks",
            "HEADs by digest asking whether the registry still holds a held-back digest, by"
            " answer (present, gone, unknown).",
            ["answer"],
            registry=registry,
        )
        self.certificate_rotations = Counter(
            f"{PREFIX}_pinning_certificate_rotations",
            "Serving certificates the controller made for the webhook (its first included),"
            " or loaded again from a mounted Secret (cert-manager).",
            registry=registry,
        )


__all__ = ["PinningMetrics"]
