"""The reconcile worker's fixtures (``tests.support.worker_rig``) for the modules here."""

from __future__ import annotations

from tests.support.worker_rig import metrics, nudge, tick, worker

__all__ = ["metrics", "nudge", "tick", "worker"]
