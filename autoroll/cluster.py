"""The Kubernetes adapter: enrolled Deployments and their pods in, one kind of write out.

Reads per tick: one cluster-wide Deployment list by label, then one pod list per namespace
that holds an enrolled Deployment (``1 + namespaces`` requests, never one per Deployment).
Pods are matched to Deployments here, with the Deployment's own ``spec.selector``, so the
core receives ``(DeploymentView, pods)`` pairs and never sees a label or a client model.

The only write is ``delete_pod``, sent with a UID precondition: a pod recreated under the
same name (StatefulSet-style names, or a very fast ReplicaSet) is a different object and is
never deleted by a decision made about its predecessor. RBAC therefore needs exactly
``deployments: list`` and ``pods: list, delete``. With ``evict=True`` (ROLLOUT_METHOD=evict)
the same call goes through the Eviction API instead, so PodDisruptionBudgets are honoured;
that needs ``pods/eviction: create`` rather than ``pods: delete``.

Conversion helpers (``*_from_client``, ``selector_matches``, ``group_pods``) are pure and
tested without an API server; the I/O methods stay thin.

Errors (raised ``from`` the client's exception)::

    ClusterError                    base: what failed, and what to check
    ├── ClusterConfigError          not in a cluster and no usable kubeconfig
    ├── ClusterUnreachableError     connection refused, TLS failure or timeout
    └── ClusterApiError             the API answered with an error status (``.status``)
        └── ClusterForbiddenError   403: the ServiceAccount lacks a verb (named in the message)

A 404 on delete is not an error (the pod is already gone), nor is a 409 from the UID
precondition (the name now belongs to a newer pod), nor a 429 on eviction (a disruption
budget says not now); all are reported as ``DeleteOutcome``.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from urllib3.exceptions import HTTPError
from urllib3.util.retry import Retry

from autoroll.images import DEFAULT_TAG, ImageRefError, parse_image
from autoroll.model import PULL_ALWAYS, ContainerStatusView, ContainerView, DeploymentView, PodView

log = logging.getLogger(__name__)

#: (connect, read) seconds for every API call: a hung API server must not stall a tick forever.
REQUEST_TIMEOUT: Final = (5.0, 30.0)

#: urllib3's default (3 retries, sleeping out any Retry-After on 429/503) would make a call
#: take up to 4x its read timeout, or sleep for however long a throttled API server asks,
#: inside the pass and past a SIGTERM. One immediate reconnect is all we allow; everything
#: else fails the call, and the next tick asks again.
API_RETRIES: Final = Retry(
    total=1, connect=1, read=0, redirect=0, status=0, other=0, respect_retry_after_header=False
)

#: Pods that finished for good are excluded server-side; the core would ignore them anyway.
LIVE_PODS_FIELD_SELECTOR: Final = "status.phase!=Succeeded,status.phase!=Failed"

#: Stands in for a missing creationTimestamp (never seen from a real API server): "created
#: in the future" makes the loop guard spare the pod, the safe direction.
_UNKNOWN_CREATION: Final = datetime.max.replace(tzinfo=UTC)


# --------------------------------------------------------------------------------------------
# Errors


class ClusterError(Exception):
    """A Kubernetes API call failed; the message says what and what to check."""


class ClusterConfigError(ClusterError):
    """No in-cluster ServiceAccount and no usable kubeconfig."""


class ClusterUnreachableError(ClusterError):
    """The API server could not be reached (refused, TLS, DNS, timeout)."""


class ClusterApiError(ClusterError):
    """The API server answered with an error status."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


class ClusterForbiddenError(ClusterApiError):
    """403: the credentials lack a verb the controller needs."""


class DeleteOutcome(StrEnum):
    """What a delete call found. Only DELETED means this call removed the pod."""

    DELETED = "deleted"
    ALREADY_GONE = "already-gone"  # 404: someone (or the last tick) got there first
    REPLACED = "replaced"  # 409 on the UID precondition: the name is a newer pod now
    BLOCKED = "blocked-by-disruption-budget"  # 429 on eviction: try again next tick


# --------------------------------------------------------------------------------------------
# Plain data of the adapter


class Operator(StrEnum):
    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``matchExpressions`` entry."""

    key: str
    operator: Operator
    values: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A Deployment's ``spec.selector``: all ``match_labels`` and all requirements must hold."""

    match_labels: tuple[tuple[str, str], ...] = ()
    requirements: tuple[Requirement, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.match_labels and not self.requirements


@dataclass(frozen=True, slots=True)
class Enrolled:
    """One enrolled Deployment with the live pods its selector matches (the core's input)."""

    deployment: DeploymentView
    pods: tuple[PodView, ...]


# --------------------------------------------------------------------------------------------
# Pure conversions


def selector_matches(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    """Does ``labels`` satisfy ``selector`` (Kubernetes label-selector semantics)?

    An empty selector matches nothing here, unlike the API's "everything": apps/v1 rejects
    empty Deployment selectors, and if one slipped through, adopting every pod in the
    namespace would be the dangerous reading.
    """
    if selector.is_empty:
        return False
    for key, value in selector.match_labels:
        if labels.get(key) != value:
            return False
    for requirement in selector.requirements:
        present = requirement.key in labels
        if requirement.operator is Operator.IN:
            if not present or labels[requirement.key] not in requirement.values:
                return False
        elif requirement.operator is Operator.NOT_IN:
            if present and labels[requirement.key] in requirement.values:
                return False
        elif requirement.operator is Operator.EXISTS:
            if not present:
                return False
        elif present:  # DoesNotExist
            return False
    return True


def selector_from_client(selector: Any) -> LabelSelector:
    """Convert a ``V1LabelSelector`` (or None). Unknown operators raise ``ValueError``."""
    if selector is None:
        return LabelSelector()
    labels = tuple(sorted((selector.match_labels or {}).items()))
    requirements = []
    for expression in selector.match_expressions or ():
        try:
            operator = Operator(expression.operator)
        except ValueError:
            raise ValueError(
                f"unsupported label selector operator {expression.operator!r}"
                f" (expected one of {', '.join(o.value for o in Operator)})"
            ) from None
        requirements.append(
            Requirement(expression.key, operator, frozenset(expression.values or ()))
        )
    return LabelSelector(labels, tuple(requirements))


def default_pull_policy(image: str) -> str:
    """The pull policy the API server would default: Always for ``:latest`` or no tag.

    Only used when an object arrives without one (the API server always fills it in).
    An unparsable image gets no policy, so the core never rolls it.
    """
    try:
        ref = parse_image(image)
    except ImageRefError:
        return ""
    if ref.digest is None and (ref.tag is None or ref.tag == DEFAULT_TAG):
        return PULL_ALWAYS
    return "IfNotPresent"


def container_from_client(container: Any) -> ContainerView:
    """Convert a ``V1Container`` (template or pod spec)."""
    image = container.image or ""
    policy = container.image_pull_policy or default_pull_policy(image)
    return ContainerView(name=container.name, image=image, image_pull_policy=policy)


def deployment_from_client(deployment: Any) -> tuple[DeploymentView, LabelSelector]:
    """Convert a ``V1Deployment`` into the core's view plus the selector to match pods with."""
    meta, spec = deployment.metadata, deployment.spec
    replicas = spec.replicas if spec.replicas is not None else 1  # the API's default
    view = DeploymentView(
        namespace=meta.namespace,
        name=meta.name,
        replicas=replicas,
        containers=tuple(container_from_client(c) for c in spec.template.spec.containers or ()),
        labels=tuple(sorted((meta.labels or {}).items())),
        uid=meta.uid or "",
        generation=meta.generation,
    )
    return view, selector_from_client(spec.selector)


def pod_from_client(pod: Any) -> tuple[PodView, Mapping[str, str]]:
    """Convert a ``V1Pod`` into the core's view plus its labels (for selector matching)."""
    meta, spec, status = pod.metadata, pod.spec, pod.status
    created = meta.creation_timestamp
    if created is None:
        created = _UNKNOWN_CREATION
    elif created.tzinfo is None:
        created = created.replace(tzinfo=UTC)  # API timestamps are UTC ("…Z")
    conditions = (status.conditions if status is not None else None) or ()
    ready = any(c.type == "Ready" and c.status == "True" for c in conditions)
    statuses = (status.container_statuses if status is not None else None) or ()
    view = PodView(
        namespace=meta.namespace,
        name=meta.name,
        uid=meta.uid or "",
        created_at=created,
        phase=(status.phase if status is not None else None) or "Pending",
        deleting=meta.deletion_timestamp is not None,
        ready=ready,
        containers=tuple(container_from_client(c) for c in (spec.containers if spec else ()) or ()),
        statuses=tuple(
            ContainerStatusView(
                name=s.name,
                image=s.image or "",
                image_id=s.image_id or "",
                ready=bool(s.ready),
                restart_count=s.restart_count or 0,
            )
            for s in statuses
        ),
    )
    return view, dict(meta.labels or {})


def group_pods(
    deployments: Sequence[tuple[DeploymentView, LabelSelector]],
    pods: Iterable[tuple[PodView, Mapping[str, str]]],
) -> tuple[Enrolled, ...]:
    """Give each Deployment the pods of its namespace that its selector matches.

    A pod matched by two enrolled Deployments (overlapping selectors) is given to both:
    each decision then counts it, which can only make either less eager to delete.
    """
    by_namespace: dict[str, list[tuple[PodView, Mapping[str, str]]]] = {}
    for pod, labels in pods:
        by_namespace.setdefault(pod.namespace, []).append((pod, labels))
    enrolled = []
    for deployment, selector in deployments:
        candidates = by_namespace.get(deployment.namespace, ())
        matched = tuple(
            sorted(
                (pod for pod, labels in candidates if selector_matches(selector, labels)),
                key=lambda p: p.name,
            )
        )
        enrolled.append(Enrolled(deployment, matched))
    return tuple(sorted(enrolled, key=lambda e: e.deployment.key))


# --------------------------------------------------------------------------------------------
# I/O


def connect(env: Mapping[str, str] | None = None) -> Any:
    """An ``ApiClient`` for the in-cluster ServiceAccount, else the local kubeconfig.

    Builds a private ``Configuration`` (never the library's global default), so tests and
    the CLI can hold several clients side by side.
    """
    environ = os.environ if env is None else env
    configuration = client.Configuration()
    try:
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        log.debug("using the in-cluster ServiceAccount")
    except ConfigException as in_cluster:
        path = environ.get("KUBECONFIG") or "~/.kube/config"
        try:
            config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=path, client_configuration=configuration, persist_config=False
            )
        except (ConfigException, OSError, ValueError, TypeError) as exc:
            raise ClusterConfigError(
                f"no Kubernetes configuration: not running in a cluster ({in_cluster}) and"
                f" kubeconfig {path!r} is unusable ({exc}); set KUBECONFIG or run in a pod"
                " with a ServiceAccount"
            ) from exc
        log.debug("using kubeconfig %s", path)
    configuration.retries = API_RETRIES
    return client.ApiClient(configuration)


class KubeCluster:
    """The live cluster. The ``ApiClient`` is built on first use and rebuilt after a config error.

    Lazy so that the server starts (and answers ``/healthz``) even while the API is
    unreachable; every tick then reports the problem and tries again.
    """

    def __init__(
        self,
        *,
        label_selector: str,
        api_client_factory: Callable[[], Any] = connect,
        apis: tuple[Any, Any] | None = None,
        evict: bool = False,
        request_timeout: tuple[float, float] = REQUEST_TIMEOUT,
    ) -> None:
        self._label_selector = label_selector
        self._evict = evict
        self._timeout = request_timeout
        self._factory = api_client_factory
        self._apis = apis  # (AppsV1Api, CoreV1Api), injectable for tests
        self.requests = 0  # API requests sent, for benchmarks and tests

    def _clients(self) -> tuple[Any, Any]:
        if self._apis is None:
            api_client = self._factory()
            self._apis = (client.AppsV1Api(api_client), client.CoreV1Api(api_client))
        return self._apis

    def snapshot(self) -> tuple[Enrolled, ...]:
        """Every enrolled Deployment with its live pods: ``1 + namespaces`` list requests."""
        apps, core = self._clients()
        listed = self._call(
            "list deployments (all namespaces)",
            lambda: apps.list_deployment_for_all_namespaces(
                label_selector=self._label_selector, _request_timeout=self._timeout
            ),
        )
        deployments = []
        for item in listed.items or ():
            try:
                deployments.append(deployment_from_client(item))
            except ValueError as exc:
                log.warning(
                    "ignoring Deployment %s/%s: %s",
                    item.metadata.namespace,
                    item.metadata.name,
                    exc,
                )
        pods: list[tuple[PodView, Mapping[str, str]]] = []
        for namespace in sorted({d.namespace for d, _ in deployments}):
            page = self._call(
                f"list pods in namespace {namespace}",
                functools.partial(
                    core.list_namespaced_pod,
                    namespace,
                    field_selector=LIVE_PODS_FIELD_SELECTOR,
                    _request_timeout=self._timeout,
                ),
            )
            pods.extend(pod_from_client(item) for item in page.items or ())
        return group_pods(deployments, pods)

    def delete_pod(self, namespace: str, name: str, uid: str) -> DeleteOutcome:
        """Remove one pod, only if it is still the object with ``uid``.

        A plain DELETE, or an Eviction when built with ``evict=True``; both carry the UID
        precondition and both are a single API call, so a shutdown never leaves one half-done.
        """
        _, core = self._clients()
        options = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=uid))
        what = f"{'evict' if self._evict else 'delete'} pod {namespace}/{name}"
        if self._evict:
            eviction = client.V1Eviction(
                metadata=client.V1ObjectMeta(name=name, namespace=namespace),
                delete_options=options,
            )
            call = functools.partial(
                core.create_namespaced_pod_eviction,
                name,
                namespace,
                eviction,
                _request_timeout=self._timeout,
                _preload_content=False,
            )
        else:
            call = functools.partial(
                core.delete_namespaced_pod,
                name,
                namespace,
                body=options,
                _request_timeout=self._timeout,
                _preload_content=False,
            )
        try:
            # The answer body is not needed, and not deserialized: servers answer a delete
            # with the Pod or with a Status, and the client would reject the latter as a Pod.
            _discard(self._call(what, call, passthrough=(ApiException,)))
        except ApiException as exc:
            if exc.status == 404:
                return DeleteOutcome.ALREADY_GONE
            if exc.status == 409:
                return DeleteOutcome.REPLACED
            if exc.status == 429 and self._evict:
                return DeleteOutcome.BLOCKED
            raise _api_error(what, exc) from exc
        return DeleteOutcome.DELETED

    def _call(
        self,
        what: str,
        call: Callable[[], Any],
        passthrough: tuple[type[Exception], ...] = (),
    ) -> Any:
        self.requests += 1
        try:
            return call()
        except passthrough:
            raise
        except ApiException as exc:
            raise _api_error(what, exc) from exc
        except (HTTPError, OSError) as exc:
            cause = getattr(exc, "reason", None) or exc  # MaxRetryError wraps the real one
            raise ClusterUnreachableError(
                f"{what}: cannot reach the Kubernetes API ({type(cause).__name__}: {cause})"
            ) from exc


_VERBS: Final = {
    "list deployments": "deployments: list",
    "list pods": "pods: list",
    "delete pod": "pods: delete",
    "evict pod": "pods/eviction: create",
}


def _discard(response: Any) -> None:
    """Read and release a raw (``_preload_content=False``) response, if it is one."""
    for step in ("read", "release_conn"):
        method = getattr(response, step, None)
        if callable(method):
            method()


def _api_error(what: str, exc: Any) -> ClusterApiError:
    status = int(exc.status or 0)
    reason = exc.reason or "error"
    if status in (401, 403):
        needed = next((v for k, v in _VERBS.items() if what.startswith(k)), "")
        hint = f"; the ClusterRole must grant {needed}" if needed else ""
        return ClusterForbiddenError(f"{what}: {status} {reason}{hint}", status=status)
    return ClusterApiError(f"{what}: {status} {reason}", status=status)


__all__ = [
    "ClusterApiError",
    "ClusterConfigError",
    "ClusterError",
    "ClusterForbiddenError",
    "ClusterUnreachableError",
    "DeleteOutcome",
    "Enrolled",
    "KubeCluster",
    "LabelSelector",
    "Operator",
    "Requirement",
    "connect",
    "container_from_client",
    "deployment_from_client",
    "group_pods",
    "pod_from_client",
    "selector_from_client",
    "selector_matches",
]
