"""The real-API fault rows share one fixture: ``cluster``, a private control plane per module
(etcd + kube-apiserver + kube-controller-manager, a simulated kubelet, a docker-registry),
defined with the rows that restart its API server (``test_real_api_faults.py``)."""

from __future__ import annotations

from tests.faults.e2e.test_real_api_faults import cluster

__all__ = ["cluster"]
