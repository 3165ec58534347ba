"""The Kubernetes adapter: the only package that imports the Kubernetes client.

    transport.py  connect() and KubeRest: the one request path, for every call
    errors.py     the error tree and the one mapping of a failed call onto it
    selectors.py  pure: label-selector semantics, parsing, narrowing, query syntax, index
    workloads.py  pure: Deployment, StatefulSet, DaemonSet JSON -> WorkloadView (per kind)
    pods.py       pure: Pod JSON -> PodView; pods grouped under the workloads that claim them
    nodes.py      pure: Node JSON -> platforms and NodeView (Ready)
    lists.py      pure: list answers parsed without managedFields, one page of them
    api_time.py   pure: the API's RFC 3339 times and MicroTime
    lease_event_bodies.py  pure: Lease JSON <-> LeaseRecord, the Event body of a roll
    cluster.py    KubeCluster (ClusterPort): a pass's snapshot, the fresh read, delete or evict
    informer.py   Informer: one collection kept by list + watch, in a thread of its own
    cache.py      WatchCache (WatchPort): enrolled workloads and their pods, for finding work
    lease.py      KubeLease (LeasePort): the leader-election Lease, its writes and watch
    events.py     KubeEvents (EventPort): one core/v1 Event per happening of a roll
    quarantine_store.py  KubeQuarantine (QuarantinePort): the quarantine's ConfigMap
    history.py    the autoroll Events read back for `autoroll history`

Everything that leaves this package is plain data (``autoroll.core.model``) or one of the errors
in ``autoroll.kube.errors``; the ports it implements are in ``autoroll.core.ports``.
"""

from __future__ import annotations

from autoroll.kube.cache import WatchCache
from autoroll.kube.cluster import KubeCluster
from autoroll.kube.errors import (
    ClusterApiError,
    ClusterConfigError,
    ClusterError,
    ClusterForbiddenError,
    ClusterUnauthorizedError,
    ClusterUnreachableError,
)
from autoroll.kube.events import KubeEvents
from autoroll.kube.lease import KubeLease
from autoroll.kube.quarantine_store import KubeQuarantine
from autoroll.kube.transport import KubeRest, connect

__all__ = [
    "ClusterApiError",
    "ClusterConfigError",
    "ClusterError",
    "ClusterForbiddenError",
    "ClusterUnauthorizedError",
    "ClusterUnreachableError",
    "KubeCluster",
    "KubeEvents",
    "KubeLease",
    "KubeQuarantine",
    "KubeRest",
    "WatchCache",
    "connect",
]
