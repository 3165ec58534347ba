"""The real-API fault rows share one fixture: ``cluster``, a private control plane per module
(etcd + kube-apiserver + kube-controller-manager, a simulated kubelet, a docker-registry),
defined with the rest of that world in ``private_cluster.py``."""

from __future__ import annotations

from tests.faults.e2e.private_cluster import cluster

__all__ = ["cluster"]
