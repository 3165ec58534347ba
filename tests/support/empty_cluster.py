"""A cluster port with no workloads, for wiring tests (runtime, server, executor, leader
handoff) where a pass must run but finds nothing; subclasses count passes or script a delete.
"""

from __future__ import annotations

from collections.abc import Sequence

from autoroll.core.model import DeleteOutcome, Enrolled, WorkloadView
from autoroll.core.scope import FULL, Scope


class EmptyCluster:
    """Every snapshot is empty, a fresh read finds no pods, and a deletion is a test failure."""

    def snapshot(self, scope: Scope = FULL) -> Sequence[Enrolled]:
        return ()

    def read_now(self, workload: WorkloadView) -> Enrolled:
        return Enrolled(workload, tuple(()))

    def delete_pod(
        self, namespace: str, name: str, uid: str, *, within: float | None = None
    ) -> DeleteOutcome:
        raise AssertionError("nothing to delete")
