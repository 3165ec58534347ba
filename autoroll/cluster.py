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

Conversion helpers (``*_from_json``, ``selector_matches``, ``pod_list_selector``,
``group_pods``) are pure and tested without an API server; the I/O methods stay thin. Lists
are read as raw JSON, never as the client's model objects (see ``KubeCluster.snapshot``).

Errors (raised ``from`` the client's exception)::

    ClusterError                    base: what failed, and what to check
    ├── ClusterConfigError          not in a cluster and no usable kubeconfig
    ├── ClusterUnreachableError     connection refused, TLS failure or timeout
    └── ClusterApiError             the API answered with an error status (``.status``)
        └── ClusterForbiddenError   403: the ServiceAccount lacks a verb (named in the message)

A 404 on delete is not an error (the pod is already gone), nor is a 409 from the UID
precondition (the name now belongs to a newer pod), nor a 429 on eviction (a disruption
budget says not now); all are reported as ``DeleteOutcome``.

Two optional adapters sit beside it. ``KubeLease`` reads and writes the controller's own
``coordination.k8s.io/v1`` Lease for leader election (RBAC in the namespaced Role: leases
``create`` and, for that one name, ``get, patch, watch``); a 409 becomes
``autoroll.leader.LeaseConflictError``. ``KubeEvents`` records a core/v1 Event on a
Deployment for each roll (``events: create``, only with EMIT_EVENTS=true). Both talk JSON
bodies directly rather than client models, so a MicroTime is always sent in the exact form
the API expects.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final
from urllib.parse import quote

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from urllib3.exceptions import HTTPError
from urllib3.util.retry import Retry

from autoroll.images import DEFAULT_TAG, ImageRefError, parse_image
from autoroll.leader import NUDGE_ANNOTATION, LeaseConflictError, LeaseRecord
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

#: No phase filter (empty: no fieldSelector is sent). A deleted pod whose containers have
#: exited shows Succeeded or Failed while it is still terminating, and the core must count it
#: as terminating; a field selector cannot say "terminal and not being deleted". The label
#: selector still narrows each list, and the core ignores pods that finished for good.
LIVE_PODS_FIELD_SELECTOR: Final = ""

#: A pod-list narrowing selector longer than this is not sent (the URL would get unwieldy);
#: the namespace is then listed whole, which costs parsing, never correctness.
MAX_NARROWING_SELECTOR: Final = 8192

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


def selector_from_json(selector: Mapping[str, Any] | None) -> LabelSelector:
    """Convert a ``LabelSelector`` as the API sends it. Unknown operators raise ``ValueError``."""
    if not selector:
        return LabelSelector()
    labels = tuple(sorted((selector.get("matchLabels") or {}).items()))
    requirements = []
    for expression in selector.get("matchExpressions") or ():
        try:
            operator = Operator(expression.get("operator"))
        except ValueError:
            raise ValueError(
                f"unsupported label selector operator {expression.get('operator')!r}"
                f" (expected one of {', '.join(o.value for o in Operator)})"
            ) from None
        requirements.append(
            Requirement(
                expression.get("key", ""), operator, frozenset(expression.get("values") or ())
            )
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


def container_from_json(container: Mapping[str, Any]) -> ContainerView:
    """Convert a ``Container`` (pod template or pod spec)."""
    image = container.get("image") or ""
    policy = container.get("imagePullPolicy") or default_pull_policy(image)
    return ContainerView(name=container.get("name", ""), image=image, image_pull_policy=policy)


def deployment_from_json(deployment: Mapping[str, Any]) -> tuple[DeploymentView, LabelSelector]:
    """Convert a ``Deployment`` into the core's view plus the selector to match pods with."""
    meta = deployment.get("metadata") or {}
    spec = deployment.get("spec") or {}
    replicas = spec.get("replicas")
    pod_spec = (spec.get("template") or {}).get("spec") or {}
    view = DeploymentView(
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        replicas=1 if replicas is None else int(replicas),  # the API's default
        containers=tuple(container_from_json(c) for c in pod_spec.get("containers") or ()),
        labels=tuple(sorted((meta.get("labels") or {}).items())),
        uid=meta.get("uid") or "",
        generation=meta.get("generation"),
    )
    return view, selector_from_json(spec.get("selector"))


def pod_from_json(pod: Mapping[str, Any]) -> tuple[PodView, Mapping[str, str]]:
    """Convert a ``Pod`` into the core's view plus its labels (for selector matching)."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    conditions = status.get("conditions") or ()
    view = PodView(
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        uid=meta.get("uid") or "",
        created_at=_creation_time(meta.get("creationTimestamp")),
        phase=status.get("phase") or "Pending",
        deleting=meta.get("deletionTimestamp") is not None,
        ready=any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions),
        ready_changed_at=_ready_changed_at(conditions),
        containers=tuple(
            container_from_json(c) for c in (pod.get("spec") or {}).get("containers") or ()
        ),
        statuses=tuple(
            ContainerStatusView(
                name=s.get("name", ""),
                image=s.get("image") or "",
                image_id=s.get("imageID") or "",
                ready=bool(s.get("ready")),
                restart_count=s.get("restartCount") or 0,
            )
            for s in status.get("containerStatuses") or ()
        ),
    )
    return view, meta.get("labels") or {}


def _ready_changed_at(conditions: Any) -> datetime | None:
    """``lastTransitionTime`` of the Ready condition; None when absent or unreadable."""
    for condition in conditions:
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            raw = condition.get("lastTransitionTime")
            stamp = _creation_time(raw)
            return None if stamp is _UNKNOWN_CREATION else stamp
    return None


def _creation_time(raw: object) -> datetime:
    """``creationTimestamp`` (RFC 3339, UTC); missing or unreadable reads as the far future,
    so the loop guard spares the pod: the safe direction for data we never expect."""
    if not isinstance(raw, str):
        return _UNKNOWN_CREATION
    try:
        created = datetime.fromisoformat(raw)
    except ValueError:
        return _UNKNOWN_CREATION
    return created if created.tzinfo is not None else created.replace(tzinfo=UTC)


def pod_list_selector(selectors: Iterable[LabelSelector]) -> str | None:
    """A label selector that narrows one namespace's pod list to pods that *may* match one
    of ``selectors``, or None when no such selector is simple to write.

    It takes a label key that every selector pins to a finite set of values (``matchLabels``
    or ``In``) and asks for ``key in (union of values)``; with the usual chart selectors
    (``app.kubernetes.io/instance``, ``app``) that leaves out every unenrolled workload.
    Still one request per namespace; the exact match is done afterwards by
    ``selector_matches``, so a loose narrowing can never adopt a wrong pod.
    """
    pinned: dict[str, set[str]] | None = None
    for selector in selectors:
        if selector.is_empty:
            return None
        values: dict[str, set[str]] = {k: {v} for k, v in selector.match_labels}
        for requirement in selector.requirements:
            if requirement.operator is Operator.IN:
                values.setdefault(requirement.key, set(requirement.values)).intersection_update(
                    requirement.values
                )
        if pinned is None:
            pinned = values
        else:
            pinned = {k: pinned[k] | v for k, v in values.items() if k in pinned}
        if not pinned:
            return None
    if not pinned:
        return None
    key, wanted = min(pinned.items(), key=lambda item: (len(item[1]), item[0]))
    if not wanted or "" in wanted:  # nothing to narrow to, or a value the syntax cannot say
        return None
    rendered = f"{key} in ({','.join(sorted(wanted))})"
    return rendered if len(rendered) <= MAX_NARROWING_SELECTOR else None


def list_items(body: bytes | str) -> list[dict[str, Any]]:
    """The ``items`` of a list answer, as JSON objects without their ``managedFields``.

    ``managedFields`` is often the largest part of an object and nothing here reads it;
    dropping it while parsing frees it at once, which lowers the peak memory of a big
    list and the garbage collector's work. ``ValueError`` names what is wrong with a body
    that is not a list answer.
    """
    try:
        document = json.loads(body, object_hook=_without_managed_fields)
    except ValueError as exc:
        raise ValueError(f"the API answered with a body that is not JSON ({exc})") from None
    items = document.get("items") if isinstance(document, dict) else None
    if items is None:
        return []
    if not isinstance(items, list):
        raise ValueError("the answer's items are not a list")
    return [item for item in items if isinstance(item, dict)]


def _without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    obj.pop("managedFields", None)
    return obj


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


class KubeRest:
    """The REST calls of a pass (and its Events), sent through the client's ``ApiClient``
    (its configuration, authentication, TLS and connection pool) but not through its
    generated API classes: instantiating ``AppsV1Api``/``CoreV1Api`` imports a few hundred
    model modules, about 26 MB that a pass never uses. Answers are raw JSON bytes; a
    non-2xx answer raises ``ApiException`` with its status, as the generated calls do.
    """

    def __init__(self, api_client: Any) -> None:
        self._client = api_client

    def list_deployments(self, *, label_selector: str, timeout: tuple[float, float]) -> bytes:
        return self._send(
            "GET", "/apis/apps/v1/deployments", [("labelSelector", label_selector)], None, timeout
        )

    def list_pods(
        self,
        namespace: str,
        *,
        field_selector: str,
        label_selector: str | None,
        timeout: tuple[float, float],
    ) -> bytes:
        query = [("fieldSelector", field_selector)] if field_selector else []
        if label_selector:
            query.append(("labelSelector", label_selector))
        path = f"/api/v1/namespaces/{_segment(namespace)}/pods"
        return self._send("GET", path, query, None, timeout)

    def delete_pod(
        self, namespace: str, name: str, *, uid: str, timeout: tuple[float, float]
    ) -> None:
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid}}
        path = f"/api/v1/namespaces/{_segment(namespace)}/pods/{_segment(name)}"
        self._send("DELETE", path, [], body, timeout)

    def evict_pod(
        self, namespace: str, name: str, *, uid: str, timeout: tuple[float, float]
    ) -> None:
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
            "deleteOptions": {"preconditions": {"uid": uid}},
        }
        path = f"/api/v1/namespaces/{_segment(namespace)}/pods/{_segment(name)}/eviction"
        self._send("POST", path, [], body, timeout)

    def create_event(
        self, namespace: str, body: Mapping[str, Any], *, timeout: tuple[float, float]
    ) -> None:
        self._send("POST", f"/api/v1/namespaces/{_segment(namespace)}/events", [], body, timeout)

    def _send(
        self,
        method: str,
        path: str,
        query: list[tuple[str, str]],
        body: Mapping[str, Any] | None,
        timeout: tuple[float, float],
    ) -> bytes:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        request = self._client.param_serialize(
            method=method,
            resource_path=path,
            query_params=query,
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        response = self._client.call_api(*request, _request_timeout=timeout)
        try:
            data: bytes = response.read()
        finally:
            _discard(getattr(response, "response", None))
        if not 200 <= response.status <= 299:
            raise ApiException(status=response.status, reason=response.reason)
        return data


def _segment(value: str) -> str:
    """One URL path segment (names and namespaces are DNS labels; quoted all the same)."""
    return quote(value, safe="")


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
        rest: Any = None,
        evict: bool = False,
        request_timeout: tuple[float, float] = REQUEST_TIMEOUT,
    ) -> None:
        self._label_selector = label_selector
        self._evict = evict
        self._timeout = request_timeout
        self._factory = api_client_factory
        self._rest = rest  # a KubeRest, injectable for tests
        self.requests = 0  # API requests sent, for benchmarks and tests

    def _api(self) -> Any:
        if self._rest is None:
            self._rest = KubeRest(self._factory())
        return self._rest

    def snapshot(self) -> tuple[Enrolled, ...]:
        """Every enrolled Deployment with its live pods: ``1 + namespaces`` list requests.

        Lists are read as plain JSON, never as the client's model objects: building a
        validated model per pod cost several times the request itself
        (docs/adr/005-reading-the-cluster.md). Each namespace's pod list is narrowed
        server-side where its enrolled selectors allow (``pod_list_selector``), converted,
        and dropped before the next one is read, so memory follows the enrolled pods, not
        the cluster.
        """
        rest = self._api()
        listed = self._list(
            "list deployments (all namespaces)",
            functools.partial(
                rest.list_deployments, label_selector=self._label_selector, timeout=self._timeout
            ),
        )
        deployments = []
        for item in listed:
            try:
                deployments.append(deployment_from_json(item))
            except (ValueError, TypeError, AttributeError) as exc:
                meta = item.get("metadata") or {}
                log.warning(
                    "ignoring Deployment %s/%s: %s",
                    meta.get("namespace", "?"),
                    meta.get("name", "?"),
                    exc,
                )
        del listed
        by_namespace: dict[str, list[LabelSelector]] = {}
        for view, selector in deployments:
            by_namespace.setdefault(view.namespace, []).append(selector)
        pods: list[tuple[PodView, Mapping[str, str]]] = []
        for namespace in sorted(by_namespace):
            page = self._list(
                f"list pods in namespace {namespace}",
                functools.partial(
                    rest.list_pods,
                    namespace,
                    field_selector=LIVE_PODS_FIELD_SELECTOR,
                    label_selector=pod_list_selector(by_namespace[namespace]),
                    timeout=self._timeout,
                ),
            )
            pods.extend(pod_from_json(item) for item in page)
        return group_pods(deployments, pods)

    def _list(self, what: str, call: Callable[[], bytes]) -> list[dict[str, Any]]:
        """Send one list request and return its ``items`` as JSON objects."""

        def read() -> list[dict[str, Any]]:
            try:
                return list_items(call())
            except ValueError as exc:
                raise ClusterApiError(f"{what}: {exc}", status=0) from None

        result: list[dict[str, Any]] = self._call(what, read)
        return result

    def delete_pod(self, namespace: str, name: str, uid: str) -> DeleteOutcome:
        """Remove one pod, only if it is still the object with ``uid``.

        A plain DELETE, or an Eviction when built with ``evict=True``; both carry the UID
        precondition and both are a single API call, so a shutdown never leaves one half-done.
        The answer (the Pod, or a Status) is not read beyond its status code.
        """
        rest = self._api()
        what = f"{'evict' if self._evict else 'delete'} pod {namespace}/{name}"
        send = rest.evict_pod if self._evict else rest.delete_pod
        try:
            self._call(
                what,
                functools.partial(send, namespace, name, uid=uid, timeout=self._timeout),
                passthrough=(ApiException,),
            )
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


# --------------------------------------------------------------------------------------------
# Leader election: the controller's Lease

#: Lease calls are tiny; they must answer well within the renew deadline or count as failed.
LEASE_TIMEOUT: Final = (2.0, 4.0)


def _micro_time(value: datetime) -> str:
    """A ``MicroTime`` as the API writes it: UTC, six fractional digits, ``Z``."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_time(raw: object) -> datetime | None:
    if not isinstance(raw, str) or not raw:
        return None
    try:
        parsed = datetime.fromisoformat(raw)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def lease_from_json(document: Mapping[str, Any]) -> LeaseRecord:
    """A Lease object (as JSON) → ``LeaseRecord``. Missing fields read as a free lease."""
    meta = document.get("metadata") or {}
    spec = document.get("spec") or {}
    annotations = meta.get("annotations") or {}
    return LeaseRecord(
        holder=str(spec.get("holderIdentity") or ""),
        duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
        acquired_at=_parse_time(spec.get("acquireTime")),
        renewed_at=_parse_time(spec.get("renewTime")),
        transitions=int(spec.get("leaseTransitions") or 0),
        resource_version=str(meta.get("resourceVersion") or ""),
        nudge=str(annotations.get(NUDGE_ANNOTATION) or ""),
    )


def lease_spec_json(record: LeaseRecord) -> dict[str, Any]:
    """The ``spec`` to write for ``record``; an empty holder is sent as null (released)."""
    return {
        "holderIdentity": record.holder or None,
        "leaseDurationSeconds": record.duration_seconds,
        "acquireTime": _micro_time(record.acquired_at) if record.acquired_at else None,
        "renewTime": _micro_time(record.renewed_at) if record.renewed_at else None,
        "leaseTransitions": record.transitions,
    }


class KubeLease:
    """One named Lease in one namespace; implements ``autoroll.leader.LeasePort``.

    Writes are JSON merge patches that carry ``metadata.resourceVersion``: the API server
    then refuses them with 409 if anyone wrote since our read (optimistic concurrency), and,
    unlike a PUT, they leave the nudge annotation alone.
    """

    def __init__(
        self,
        *,
        namespace: str,
        name: str,
        api_client_factory: Callable[[], Any] = connect,
        api: Any = None,
    ) -> None:
        self.namespace = namespace
        self.name = name
        self._factory = api_client_factory
        self._api = api  # CoordinationV1Api, injectable for tests
        self._watch_lock = threading.Lock()
        self._watch_response: Any = None

    def _coordination(self) -> Any:
        if self._api is None:
            self._api = client.CoordinationV1Api(self._factory())
        return self._api

    def _json(self, what: str, call: Callable[[], Any]) -> Any:
        try:
            response = call()
        except ApiException as exc:
            if exc.status == 409:
                raise LeaseConflictError(f"{what}: {exc.status} {exc.reason}") from exc
            if exc.status == 404:
                return None
            raise _api_error(what, exc) from exc
        except (HTTPError, OSError) as exc:
            cause = getattr(exc, "reason", None) or exc
            raise ClusterUnreachableError(
                f"{what}: cannot reach the Kubernetes API ({type(cause).__name__}: {cause})"
            ) from exc
        try:
            return json.loads(response.data)
        finally:
            _discard(response)

    def get(self) -> LeaseRecord | None:
        api = self._coordination()
        document = self._json(
            f"get lease {self.namespace}/{self.name}",
            lambda: api.read_namespaced_lease(
                self.name, self.namespace, _preload_content=False, _request_timeout=LEASE_TIMEOUT
            ),
        )
        return None if document is None else lease_from_json(document)

    def create(self, record: LeaseRecord) -> LeaseRecord:
        api = self._coordination()
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": lease_spec_json(record),
        }
        document = self._json(
            f"create lease {self.namespace}/{self.name}",
            lambda: api.create_namespaced_lease(
                self.namespace, body, _preload_content=False, _request_timeout=LEASE_TIMEOUT
            ),
        )
        if document is None:
            raise ClusterApiError(
                f"create lease {self.namespace}/{self.name}: 404 (does the namespace exist?)",
                status=404,
            )
        return lease_from_json(document)

    def update(self, record: LeaseRecord) -> LeaseRecord:
        """Write ``record`` only if the Lease is still at ``record.resource_version``."""
        if not record.resource_version:
            raise ValueError("an update needs the resourceVersion it was decided on")
        api = self._coordination()
        body = {
            "metadata": {"resourceVersion": record.resource_version},
            "spec": lease_spec_json(record),
        }
        document = self._json(
            f"patch lease {self.namespace}/{self.name}",
            lambda: api.patch_namespaced_lease(
                self.name,
                self.namespace,
                body,
                _content_type="application/merge-patch+json",
                _preload_content=False,
                _request_timeout=LEASE_TIMEOUT,
            ),
        )
        if document is None:
            raise LeaseConflictError(f"lease {self.namespace}/{self.name} is gone")
        return lease_from_json(document)

    def publish_nudge(self, value: str) -> None:
        """Set the nudge annotation (no resourceVersion: it must not lose to a renewal)."""
        api = self._coordination()
        body = {"metadata": {"annotations": {NUDGE_ANNOTATION: value}}}
        document = self._json(
            f"patch lease {self.namespace}/{self.name} (nudge)",
            lambda: api.patch_namespaced_lease(
                self.name,
                self.namespace,
                body,
                _content_type="application/merge-patch+json",
                _preload_content=False,
                _request_timeout=LEASE_TIMEOUT,
            ),
        )
        if document is None:
            raise ClusterApiError(
                f"lease {self.namespace}/{self.name} does not exist: no leader to nudge",
                status=404,
            )

    def watch(self, resource_version: str, timeout_seconds: int) -> Iterator[LeaseRecord]:
        """Changes to the Lease after ``resource_version``, until the server ends the watch.

        A field selector on the name lets RBAC grant ``watch`` for this one Lease only.
        """
        api = self._coordination()
        what = f"watch lease {self.namespace}/{self.name}"
        try:
            response = api.list_namespaced_lease(
                self.namespace,
                field_selector=f"metadata.name={self.name}",
                watch=True,
                resource_version=resource_version or None,
                timeout_seconds=timeout_seconds,
                allow_watch_bookmarks=False,
                _preload_content=False,
                _request_timeout=(LEASE_TIMEOUT[0], timeout_seconds + LEASE_TIMEOUT[1]),
            )
        except ApiException as exc:
            raise _api_error(what, exc) from exc
        except (HTTPError, OSError) as exc:
            raise ClusterUnreachableError(
                f"{what}: cannot reach the Kubernetes API ({exc})"
            ) from exc
        with self._watch_lock:
            self._watch_response = response
        try:
            for line in _lines(response):
                event = json.loads(line)
                kind = event.get("type")
                if kind == "ERROR":
                    status = event.get("object") or {}
                    raise ClusterApiError(
                        f"{what}: {status.get('code')} {status.get('message')}",
                        status=int(status.get("code") or 0),
                    )
                if kind in ("ADDED", "MODIFIED"):
                    yield lease_from_json(event.get("object") or {})
        except (HTTPError, OSError) as exc:
            raise ClusterUnreachableError(f"{what}: the watch broke ({exc})") from exc
        finally:
            with self._watch_lock:
                self._watch_response = None
            response.release_conn()

    def abort_watch(self) -> None:
        """Unblock a watch waiting in another thread (used on shutdown)."""
        with self._watch_lock:
            response = self._watch_response
        if response is not None:
            shutdown = getattr(response, "shutdown", None)  # urllib3 >= 2.3
            if callable(shutdown):
                shutdown()


def _lines(response: Any) -> Iterator[bytes]:
    """Newline-delimited JSON from a streaming response, across chunk boundaries."""
    buffer = b""
    for chunk in response.stream(amt=None, decode_content=False):
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if line.strip():
                yield line
    if buffer.strip():
        yield buffer


# --------------------------------------------------------------------------------------------
# Events


#: Event reasons, one per kind of roll (``kubectl describe deploy`` shows them).
REASON_DELETED: Final = "StalePodDeleted"
REASON_EVICTED: Final = "StalePodEvicted"
REASON_DRY_RUN: Final = "WouldDeletePod"
REASON_HALTED: Final = "RolloutHalted"


@dataclass(frozen=True, slots=True)
class RollEvent:
    """What a core/v1 Event about one roll says (plain data; see ``event_json``)."""

    namespace: str
    deployment: str
    deployment_uid: str
    reason: str
    message: str
    type: str = "Normal"  # or "Warning" (a halted rollout)


def event_json(event: RollEvent, *, now: datetime, instance: str) -> dict[str, Any]:
    """The core/v1 Event body for ``event`` (pure, so a test can pin every field)."""
    stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            # Unique per roll; the Deployment's name first, as kubectl's own events do.
            "name": f"{event.deployment[:200]}.{uuid.uuid4().hex[:16]}",
            "namespace": event.namespace,
        },
        "involvedObject": {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "namespace": event.namespace,
            "name": event.deployment,
            **({"uid": event.deployment_uid} if event.deployment_uid else {}),
        },
        "reason": event.reason,
        "message": event.message[:1024],
        "type": event.type,
        "source": {"component": "autoroll"},
        "reportingComponent": "aethnet.se/autoroll",
        "reportingInstance": instance[:128],
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


class KubeEvents:
    """Creates core/v1 Events (``events: create`` in the ClusterRole's core API group)."""

    def __init__(
        self,
        *,
        instance: str,
        api_client_factory: Callable[[], Any] = connect,
        rest: Any = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._instance = instance
        self._factory = api_client_factory
        self._rest = rest  # a KubeRest, injectable for tests
        self._clock = clock

    def emit(self, event: RollEvent) -> None:
        if self._rest is None:
            self._rest = KubeRest(self._factory())
        body = event_json(event, now=self._clock(), instance=self._instance)
        what = f"create event for deployment {event.namespace}/{event.deployment}"
        try:
            self._rest.create_event(event.namespace, body, timeout=LEASE_TIMEOUT)
        except ApiException as exc:
            raise _api_error(what, exc) from exc
        except (HTTPError, OSError) as exc:
            raise ClusterUnreachableError(
                f"{what}: cannot reach the Kubernetes API ({exc})"
            ) from exc


_VERBS: Final = {
    "list deployments": "deployments: list",
    "list pods": "pods: list",
    "delete pod": "pods: delete",
    "evict pod": "pods/eviction: create",
    "create event": "events: create (EMIT_EVENTS=true)",
}
_ROLE_VERBS: Final = {
    "get lease": "leases: get",
    "create lease": "leases: create",
    "patch lease": "leases: patch",
    "watch lease": "leases: watch",
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
        role = next((v for k, v in _ROLE_VERBS.items() if what.startswith(k)), "")
        if role:
            hint = f"; the namespaced Role must grant {role} (LEADER_ELECTION=true)"
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
    "KubeEvents",
    "KubeLease",
    "KubeRest",
    "LabelSelector",
    "Operator",
    "Requirement",
    "RollEvent",
    "connect",
    "container_from_json",
    "deployment_from_json",
    "event_json",
    "group_pods",
    "lease_from_json",
    "lease_spec_json",
    "list_items",
    "pod_from_json",
    "pod_list_selector",
    "selector_from_json",
    "selector_matches",
]
