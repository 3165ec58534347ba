"""The one request path to the Kubernetes API: ``connect`` and ``KubeRest``.

Every call of the controller (the pass's lists and deletes, Events, the Lease's reads,
writes and watch) goes through ``KubeRest.send`` or ``KubeRest.watch``. Both use the
client's ``ApiClient`` for configuration, authentication, TLS and pooling, but none of its
generated API classes: those import a few hundred model modules (about 26 MB) that nothing
here reads (docs/adr/005-reading-the-cluster.md). Answers are raw JSON bytes.

A failed call is mapped in one place (``autoroll.kube.errors``): no answer at all becomes
``ClusterUnreachableError``; a status that the call's ``Operation`` does not list as an
answer becomes the error for that status, with the operation's RBAC rule as the hint. What
each call is (its ``Operation``) is ``autoroll.kube.operations``'s; the events of an open
watch are read by ``autoroll.kube.watch_stream``.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from urllib3.exceptions import HTTPError
from urllib3.util.retry import Retry

from autoroll.core.model import WorkloadKind
from autoroll.kube.errors import (
    ClusterConfigError,
    Operation,
    api_error,
    unreachable,
)
from autoroll.kube.operations import (
    CREATE_EVENT,
    DELETE_POD,
    EVICT_POD,
    GET_NODE,
    LIST_NODES,
    LIST_PODS,
    LIST_WORKLOADS,
)
from autoroll.kube.watch_stream import WatchStream, release

log = logging.getLogger(__name__)

#: (connect, read) seconds for every call of a pass: a hung API server must not stall it.
REQUEST_TIMEOUT: Final = (5.0, 30.0)
#: Event calls are tiny; a slow one must not hold the pass long.
SMALL_CALL_TIMEOUT: Final = (2.0, 4.0)
#: Lease calls must answer well within the renew deadline, and the two of a release on
#: shutdown fit the shutdown budget (``autoroll.edge.runtime.ShutdownBudget``): 5 s each at most.
LEASE_CALL_TIMEOUT: Final = (1.0, 3.0)
#: Connection attempts per call: one immediate reconnect (``API_RETRIES``), then it fails.
CONNECT_ATTEMPTS: Final = 2

#: urllib3's default (3 retries, sleeping out any Retry-After on 429/503) would make a call
#: take up to 4x its read timeout, or sleep for however long a throttled API server asks,
#: inside the pass and past a SIGTERM. One immediate reconnect is all we allow; everything
#: else fails the call, and the next pass asks again.
API_RETRIES: Final = Retry(
    total=CONNECT_ATTEMPTS - 1,
    connect=CONNECT_ATTEMPTS - 1,
    read=0,
    redirect=0,
    status=0,
    other=0,
    respect_retry_after_header=False,
)

#: No phase filter (empty: no fieldSelector is sent). A deleted pod whose containers have
#: exited shows Succeeded or Failed while it is still terminating, and the core must count it
#: as terminating; a field selector cannot say "terminal and not being deleted". The label
#: selector still narrows each list, and the core ignores pods that finished for good.
LIVE_PODS_FIELD_SELECTOR: Final = ""

_JSON: Final = "application/json"
#: Objects' metadata only (labels), never their spec and status: a Node's status lists every
#: image on it and can be hundreds of KB; the platform labels are all a pass reads.
METADATA_ONLY: Final = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
MERGE_PATCH: Final = "application/merge-patch+json"


def call_seconds(timeout: tuple[float, float]) -> float:
    """The longest one call with ``timeout`` can take: every connection attempt times out
    connecting, or the last one connects and then waits out the read timeout."""
    connect, read = timeout
    return CONNECT_ATTEMPTS * connect + read


def connect(env: Mapping[str, str] | None = None, *, pool_size: int | None = None) -> Any:
    """An ``ApiClient`` for the in-cluster ServiceAccount, else the local kubeconfig.

    Builds a private ``Configuration`` (never the library's global default), so tests and
    the CLI can hold several clients side by side. ``pool_size`` is how many connections
    are kept open (the client's default is 5 per CPU): the watched cache holds one per
    watch for as long as it runs, and a pool smaller than that would open and throw away
    a connection for every other request.
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
    if pool_size is not None:
        configuration.connection_pool_maxsize = pool_size
    return client.ApiClient(configuration)


def segment(value: str) -> str:
    """One URL path segment (names and namespaces are DNS labels; quoted all the same)."""
    return quote(value, safe="")


@dataclass(frozen=True, slots=True)
class Answer:
    """A 2xx answer, or a status the operation listed in ``answers``."""

    status: int
    body: bytes

    @property
    def ok(self) -> bool:
        return 200 <= self.status <= 299

    def json(self) -> Any:
        return json.loads(self.body)


class KubeRest:
    """Sends every Kubernetes API call of the controller through one ``ApiClient``.

    ``observe`` is told the operation of every request sent (``Metrics.kube_request``), so
    the API load a pass, a watch or an idle poll causes is counted where it happens.
    """

    def __init__(self, api_client: Any, observe: Callable[[str], None] | None = None) -> None:
        self._client = api_client
        self._observe = observe

    # -- a pass ---------------------------------------------------------------------------

    def list_workloads(
        self,
        kind: WorkloadKind,
        *,
        label_selector: str,
        timeout: tuple[float, float],
        namespace: str = "",
        name: str = "",
    ) -> bytes:
        """One cluster-wide list of ``kind`` (apps/v1) by label; with ``namespace``, that
        namespace's (namespaced mode), and with ``name`` too, that one object as a list (a
        field selector: ``list`` RBAC, no ``get``)."""
        query = [("labelSelector", label_selector)]
        path = f"/apis/apps/v1/{kind.resource}"
        target = "(all namespaces)"
        if namespace:
            path = f"/apis/apps/v1/namespaces/{segment(namespace)}/{kind.resource}"
            target = f"in namespace {namespace}"
            if name:
                target = f"{namespace}/{name}"
                query.append(("fieldSelector", f"metadata.name={name}"))
        operation = LIST_WORKLOADS[kind]
        return self.send(operation, target, "GET", path, query=query, timeout=timeout).body

    def get_node(self, name: str, *, timeout: tuple[float, float]) -> bytes | None:
        """One Node as JSON, or None when it does not exist (404)."""
        path = f"/api/v1/nodes/{segment(name)}"
        answer = self.send(GET_NODE, name, "GET", path, timeout=timeout)
        return answer.body if answer.ok else None

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
        path = f"/api/v1/namespaces/{segment(namespace)}/pods"
        target = f"in namespace {namespace}"
        return self.send(LIST_PODS, target, "GET", path, query=query, timeout=timeout).body

    def list_node_metadata(self, *, timeout: tuple[float, float]) -> bytes:
        """Every Node's metadata (``PartialObjectMetadataList``): names and labels only."""
        return self.send(
            LIST_NODES, "", "GET", "/api/v1/nodes", accept=METADATA_ONLY, timeout=timeout
        ).body

    def delete_pod(
        self, namespace: str, name: str, *, uid: str, timeout: tuple[float, float]
    ) -> int:
        """DELETE with a UID precondition; returns the status (2xx, 404 or 409)."""
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid}}
        path = f"/api/v1/namespaces/{segment(namespace)}/pods/{segment(name)}"
        target = f"{namespace}/{name}"
        return self.send(DELETE_POD, target, "DELETE", path, body=body, timeout=timeout).status

    def evict_pod(
        self, namespace: str, name: str, *, uid: str, timeout: tuple[float, float]
    ) -> int:
        """POST an Eviction with a UID precondition; returns the status (2xx, 404, 409, 429)."""
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
            "deleteOptions": {"preconditions": {"uid": uid}},
        }
        path = f"/api/v1/namespaces/{segment(namespace)}/pods/{segment(name)}/eviction"
        target = f"{namespace}/{name}"
        return self.send(EVICT_POD, target, "POST", path, body=body, timeout=timeout).status

    def create_event(
        self, namespace: str, body: Mapping[str, Any], *, timeout: tuple[float, float]
    ) -> None:
        involved = body.get("involvedObject") or {}
        target = f"{str(involved.get('kind', '?')).lower()} {namespace}/{involved.get('name', '?')}"
        path = f"/api/v1/namespaces/{segment(namespace)}/events"
        self.send(CREATE_EVENT, target, "POST", path, body=body, timeout=timeout)

    # -- the two primitives ---------------------------------------------------------------

    def send(
        self,
        operation: Operation,
        target: str,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: Mapping[str, Any] | None = None,
        content_type: str = _JSON,
        accept: str = _JSON,
        timeout: tuple[float, float],
    ) -> Answer:
        """One request, read in full and released; errors mapped (module docstring)."""
        response = self._open(
            operation,
            target,
            method,
            path,
            query=query,
            body=body,
            content_type=content_type,
            accept=accept,
            timeout=timeout,
        )
        try:
            data: bytes = response.read()
        except (HTTPError, OSError) as exc:
            raise unreachable(operation, target, exc) from exc
        finally:
            release(response)
        answer = Answer(int(response.status), data)
        if not answer.ok and answer.status not in operation.answers:
            raise api_error(operation, target, answer.status, str(response.reason or ""))
        return answer

    def watch(
        self,
        operation: Operation,
        target: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]],
        timeout: tuple[float, float],
    ) -> WatchStream:
        """Open a watch (``watch=true`` in ``query``); its events are read from the result."""
        response = self._open(operation, target, "GET", path, query=query, timeout=timeout)
        if not 200 <= int(response.status) <= 299:
            try:
                reason = str(response.reason or "")
            finally:
                release(response)
            raise api_error(operation, target, int(response.status), reason)
        return WatchStream(operation, target, response)

    def _open(
        self,
        operation: Operation,
        target: str,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]],
        body: Mapping[str, Any] | None = None,
        content_type: str = _JSON,
        accept: str = _JSON,
        timeout: tuple[float, float],
    ) -> Any:
        headers = {"Accept": accept}
        if body is not None:
            headers["Content-Type"] = content_type
        if self._observe is not None:
            self._observe(operation.action)
        request = self._client.param_serialize(
            method=method,
            resource_path=path,
            query_params=list(query),
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        try:
            return self._client.call_api(*request, _request_timeout=timeout)
        except ApiException as exc:  # the client's own failures (TLS) arrive as status 0
            raise api_error(operation, target, int(exc.status or 0), str(exc.reason)) from exc
        except (HTTPError, OSError) as exc:
            raise unreachable(operation, target, exc) from exc


class LazyRest:
    """A ``KubeRest`` built on first use, and again after building it failed.

    Lazy so that the server starts (and answers its probes) while the API or its
    configuration is unusable; every pass then reports the problem and tries again.
    """

    def __init__(
        self,
        factory: Callable[[], Any],
        rest: KubeRest | None = None,
        observe: Callable[[str], None] | None = None,
    ) -> None:
        self._factory = factory
        self._rest = rest
        self._observe = observe
        self._lock = threading.Lock()

    def __call__(self) -> KubeRest:
        with self._lock:  # the watched cache's threads and the pass may ask at once
            if self._rest is None:
                self._rest = KubeRest(self._factory(), self._observe)
            return self._rest


__all__ = [
    "API_RETRIES",
    "LEASE_CALL_TIMEOUT",
    "LIVE_PODS_FIELD_SELECTOR",
    "MERGE_PATCH",
    "METADATA_ONLY",
    "REQUEST_TIMEOUT",
    "SMALL_CALL_TIMEOUT",
    "Answer",
    "KubeRest",
    "LazyRest",
    "call_seconds",
    "connect",
    "segment",
]
