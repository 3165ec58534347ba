"""The Kubernetes adapter's error tree, and the one function that maps a failed call onto it.

Every call names its ``Operation`` at the raise site: what it does and which RBAC rule it
needs are data carried with the request, so a 403's hint is read from the operation, never
recovered later by matching message text::

    ClusterError                      base: what failed, and what to check
    ├── ClusterConfigError            not in a cluster and no usable kubeconfig
    ├── ClusterUnreachableError       connection refused, TLS failure, timeout, broken watch
    └── ClusterApiError               the API answered with an error status (``.status``)
        ├── ClusterUnauthorizedError  401: the API server rejected the credentials
        └── ClusterForbiddenError     403: the credentials lack a rule (named in the message)

Statuses an operation expects as answers (404 on a delete, 409 on a Lease write, ...) are
listed in ``Operation.answers`` and returned to the caller instead of raised. Lease writes
turn their 409 into ``autoroll.core.ports.LeaseConflictError`` themselves (``autoroll.kube.lease``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ClusterError(Exception):
    """A Kubernetes API call failed; the message says what and what to check."""


class ClusterConfigError(ClusterError):
    """No in-cluster ServiceAccount and no usable kubeconfig."""


class ClusterUnreachableError(ClusterError):
    """The API server could not be reached (refused, TLS, DNS, timeout, broken stream)."""


class ClusterApiError(ClusterError):
    """The API server answered with an error status."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


class ClusterUnauthorizedError(ClusterApiError):
    """401: the API server did not accept the credentials at all (no RBAC rule helps)."""


class ClusterForbiddenError(ClusterApiError):
    """403: the credentials are accepted but lack a rule the controller needs."""


class Grant(StrEnum):
    """Which of the chart's RBAC objects grants an operation's rule."""

    CLUSTER_ROLE = "the ClusterRole must grant {rule}"
    #: a kind's list; the chart grants it only for the kinds in workloadKinds
    WORKLOAD_KIND = "the ClusterRole must grant {rule} (WORKLOAD_KINDS lists the kind)"
    #: DaemonSet rolls read the candidate's Node; the chart grants it with the daemonset kind
    NODES = "the ClusterRole must grant {rule} (WORKLOAD_KINDS lists daemonset)"
    EVENTS = "the ClusterRole must grant {rule} (EMIT_EVENTS=true)"
    #: platform awareness lists the Nodes; the chart grants it with guardrails.platformAware
    NODE_PLATFORMS = "the ClusterRole must grant {rule} (PLATFORM_AWARE=true)"
    WATCH = "the ClusterRole must grant {rule} (WATCH_CACHE=true)"
    #: pull secrets and ServiceAccounts are read only for registries with pullSecrets on
    PULL_SECRETS = (
        "the ClusterRole (or, in namespaced mode, the namespace's Role) must grant {rule}"
        " (the chart grants it when a registry has pullSecrets: true)"
    )
    LEASE_ROLE = "the namespaced Role must grant {rule} (LEADER_ELECTION=true)"


@dataclass(frozen=True, slots=True)
class Operation:
    """One kind of API call: what it does, the rule it needs, the statuses it answers with."""

    action: str  # "delete pod": the start of every message about this call
    rule: str  # "pods: delete": the RBAC rule a 403 names
    grant: Grant = Grant.CLUSTER_ROLE
    answers: frozenset[int] = frozenset()  # non-2xx statuses returned, not raised

    @property
    def hint(self) -> str:
        return self.grant.value.format(rule=self.rule)


def api_error(operation: Operation, target: str, status: int, reason: str) -> ClusterError:
    """The error for a failed answer of ``operation`` on ``target`` (the one mapping)."""
    what = f"{operation.action} {target}".rstrip()
    reason = reason or "error"
    if status == 0:
        # The client reports a TLS failure as a status-0 ApiException: nothing answered.
        return ClusterUnreachableError(f"{what}: cannot reach the Kubernetes API ({reason})")
    if status == 401:
        return ClusterUnauthorizedError(
            f"{what}: 401 {reason}: the API server rejected the controller's credentials"
            " (an expired or revoked ServiceAccount token, or a kubeconfig for another"
            " cluster); no RBAC rule fixes this",
            status=status,
        )
    if status == 403:
        return ClusterForbiddenError(f"{what}: 403 {reason}; {operation.hint}", status=status)
    return ClusterApiError(f"{what}: {status} {reason}", status=status)


def unreachable(operation: Operation, target: str, exc: BaseException) -> ClusterError:
    """The error for a call that got no answer (``urllib3`` or socket failure)."""
    what = f"{operation.action} {target}".rstrip()
    cause = getattr(exc, "reason", None) or exc  # MaxRetryError wraps the real one
    return ClusterUnreachableError(
        f"{what}: cannot reach the Kubernetes API ({type(cause).__name__}: {cause})"
    )
