"""The ``Reconciler`` over the fakes of ``tests.support.reconciler_fakes`` with whichever of its
arguments a test is about: events, Nodes, a quarantine, a term, pull credentials...

``make`` there builds the common pass (its registry, its clock, maybe a dry run and
guardrails); ``reconciler_with`` takes any other argument the ``Reconciler`` has.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry

from autoroll.controller.reconciler import Reconciler
from autoroll.core.ports import ClusterPort
from autoroll.instruments.metrics import Metrics
from tests.support.reconciler_fakes import HOST, NEW, REF, Clock, FakeRegistry


def reconciler_with(cluster: ClusterPort, **arguments: Any) -> tuple[Reconciler, Metrics]:
    """A ``Reconciler`` over ``cluster`` that counts into metrics of its own. Unless
    ``arguments`` (its keyword arguments) say otherwise: the registry answers ``REF`` with
    ``NEW``, ``HOST`` is the one registry enrolled, a ``Clock`` stopped at ``T0`` tells the
    time, and deletions are real."""
    metrics = Metrics(CollectorRegistry())
    defaults: dict[str, Any] = {
        "registry": FakeRegistry({REF: NEW}),
        "registries": {HOST},
        "dry_run": False,
        "clock": Clock(),
    }
    return Reconciler(cluster=cluster, metrics=metrics, **(defaults | arguments)), metrics
