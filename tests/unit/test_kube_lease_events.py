"""The Lease and Event adapters: JSON in and out, errors mapped, without an API server.

The real API server is exercised in tests/e2e/test_ha.py; here the conversions are pinned
and the error mapping is checked through the real ``KubeRest`` over a scripted
``ApiClient`` (tests/support/fake_api_client.py).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from autoroll.core.happenings import Happening, HappeningKind
from autoroll.core.model import StatefulSetStatus, WorkloadKind, WorkloadView
from autoroll.core.ports import LeaseConflictError
from autoroll.core.records import LeaseRecord, RollEvent
from autoroll.kube.errors import ClusterApiError, ClusterForbiddenError
from autoroll.kube.events import KubeEvents
from autoroll.kube.lease import KubeLease
from autoroll.kube.lease_event_bodies import (
    NUDGE_ANNOTATION,
    event_json,
    lease_from_json,
    lease_spec_json,
)
from autoroll.kube.transport import SMALL_CALL_TIMEOUT, KubeRest
from tests.support.fake_api_client import FakeApiClient, Reply, Stream, status_body

LEASE_TIMEOUT = SMALL_CALL_TIMEOUT

T = datetime(2026, 11, 29, 12, 0, 1, 250000, tzinfo=UTC)
LEASE_JSON = {
    "metadata": {
        "name": "rel-autoroll",
        "namespace": "autoroll",
        "resourceVersion": "42",
        "annotations": {NUDGE_ANNOTATION: "2026-11-29T12:00:00.000001Z b 3"},
    },
    "spec": {
        "holderIdentity": "rel-autoroll-abc",
        "leaseDurationSeconds": 15,
        "acquireTime": "2026-11-29T11:00:00.000000Z",
        "renewTime": "2026-11-29T12:00:01.250000Z",
        "leaseTransitions": 4,
    },
}


def test_lease_from_json_reads_every_field() -> None:
    record = lease_from_json(LEASE_JSON)
    assert record == LeaseRecord(
        holder="rel-autoroll-abc",
        duration_seconds=15,
        acquired_at=datetime(2026, 11, 29, 11, 0, tzinfo=UTC),
        renewed_at=T,
        transitions=4,
        resource_version="42",
        nudge="2026-11-29T12:00:00.000001Z b 3",
    )


def test_an_empty_lease_reads_as_free() -> None:
    record = lease_from_json({"metadata": {"resourceVersion": "1"}, "spec": {}})
    assert (record.holder, record.duration_seconds, record.renewed_at) == ("", 0, None)


def test_lease_spec_json_writes_micro_time_and_null_for_a_released_holder() -> None:
    spec = lease_spec_json(LeaseRecord("", 1, acquired_at=T, renewed_at=T, transitions=4))
    assert spec == {
        "holderIdentity": None,
        "leaseDurationSeconds": 1,
        "acquireTime": "2026-11-29T12:00:01.250000Z",
        "renewTime": "2026-11-29T12:00:01.250000Z",
        "leaseTransitions": 4,
    }
    # Whole seconds still carry six fractional digits (the API's MicroTime form).
    whole = lease_spec_json(LeaseRecord("a", 15, renewed_at=T.replace(microsecond=0)))
    assert whole["renewTime"] == "2026-11-29T12:00:01.000000Z"


class FakeCoordination(FakeApiClient):
    """The Lease API as the real ``KubeRest`` meets it: every call answers ``LEASE_JSON``,
    or the status in ``error``; ``patches`` records each PATCH's body and content type."""

    def __init__(self, error: int | None = None) -> None:
        super().__init__(router=self._answer)
        self.error = error
        self.patches: list[tuple[dict[str, Any], str]] = []

    def _answer(self, method: str, path: str, request: dict[str, Any]) -> Reply:
        assert path.startswith("/apis/coordination.k8s.io/v1/namespaces/autoroll/leases")
        if self.error is not None:
            return self.error, status_body(self.error)
        if method == "PATCH":
            self.patches.append((request["body"], request["header_params"]["Content-Type"]))
        return 200, json.dumps(LEASE_JSON).encode()


def lease(api: FakeCoordination) -> KubeLease:
    return KubeLease(namespace="autoroll", name="rel-autoroll", rest=KubeRest(api))


def test_update_is_a_merge_patch_conditional_on_the_resource_version() -> None:
    api = FakeCoordination()
    record = lease_from_json(LEASE_JSON)
    lease(api).update(record)
    body, content_type = api.patches[0]
    assert content_type == "application/merge-patch+json"
    assert body["metadata"] == {"resourceVersion": "42"}
    assert body["spec"]["holderIdentity"] == "rel-autoroll-abc"


def test_update_without_a_resource_version_is_refused() -> None:
    with pytest.raises(ValueError, match="resourceVersion"):
        lease(FakeCoordination()).update(LeaseRecord("a", 15))


def test_a_nudge_is_an_unconditional_annotation_patch() -> None:
    api = FakeCoordination()
    lease(api).publish_nudge("v1")
    body, content_type = api.patches[0]
    assert body == {"metadata": {"annotations": {NUDGE_ANNOTATION: "v1"}}}
    assert content_type == "application/merge-patch+json"


def test_a_conflict_becomes_lease_conflict_error() -> None:
    api = FakeCoordination(409)
    with pytest.raises(LeaseConflictError):
        lease(api).update(lease_from_json(LEASE_JSON))


def test_a_missing_lease_reads_as_none() -> None:
    assert lease(FakeCoordination(404)).get() is None


def test_a_forbidden_lease_call_names_the_role_verb() -> None:
    api = FakeCoordination(403)
    with pytest.raises(ClusterForbiddenError, match=r"namespaced Role must grant leases: patch"):
        lease(api).publish_nudge("v")
    with pytest.raises(ClusterForbiddenError, match=r"leases: get"):
        lease(api).get()


def test_a_nudge_without_a_lease_says_there_is_no_leader() -> None:
    api = FakeCoordination(404)
    with pytest.raises(ClusterApiError, match="no leader to nudge"):
        lease(api).publish_nudge("v")


EVENT = RollEvent(
    namespace="shop",
    kind=WorkloadKind.DEPLOYMENT,
    workload="web",
    workload_uid="uid-web",
    reason="StalePodDeleted",
    message="autoroll deleted stale pod web-1",
)


def test_event_json_names_the_deployment_so_describe_shows_it() -> None:
    body = event_json(EVENT, now=T, instance="rel-autoroll-abc")
    assert body["involvedObject"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "namespace": "shop",
        "name": "web",
        "uid": "uid-web",
    }
    assert (body["reason"], body["type"], body["count"]) == ("StalePodDeleted", "Normal", 1)
    assert body["metadata"]["namespace"] == "shop"
    assert body["metadata"]["name"].startswith("web.")
    assert body["firstTimestamp"] == body["lastTimestamp"] == "2026-11-29T12:00:01Z"
    assert body["source"] == {"component": "autoroll"}
    # Unique names: two rolls of one Deployment in one second are two Events.
    assert event_json(EVENT, now=T, instance="x")["metadata"]["name"] != body["metadata"]["name"]


def test_a_halted_rollout_is_a_warning_event_on_its_workload_with_its_facts_annotated() -> None:
    db = WorkloadView(
        namespace="shop",
        name="db",
        replicas=3,
        containers=(),
        uid="uid-db",
        kind=WorkloadKind.STATEFULSET,
        status=StatefulSetStatus(),
    )
    halted = Happening(
        HappeningKind.HALTED,
        db,
        "team/db:latest",
        "sha256:" + "0" * 64,
        "sha256:" + "1" * 64,
        "rollout of shop/statefulset/db is halted",
        T,
    )
    body = event_json(halted.event(), now=T, instance="x")
    assert (body["reason"], body["type"]) == ("RolloutHalted", "Warning")
    assert body["message"] == (
        "autoroll: team/db:latest sha256:000000000000 → sha256:111111111111:"
        " rollout of shop/statefulset/db is halted"
    )
    assert (body["involvedObject"]["kind"], body["involvedObject"]["uid"]) == (
        "StatefulSet",
        "uid-db",
    )
    annotations = body["metadata"]["annotations"]
    assert annotations["autoroll.aethnet.se/happening"] == "halted"
    assert annotations["autoroll.aethnet.se/to"] == "sha256:" + "1" * 64


class FakeRest(KubeRest):
    """The real ``KubeRest`` over a scripted ``ApiClient``, recording each Event it creates."""

    def __init__(self, error: int | None = None) -> None:
        super().__init__(FakeApiClient(router=self._answer))
        self.error = error
        self.created: list[tuple[str, dict[str, Any], Any]] = []

    def create_event(self, namespace: str, body: Any, *, timeout: Any) -> None:
        super().create_event(namespace, body, timeout=timeout)
        self.created.append((namespace, dict(body), timeout))

    def _answer(self, method: str, path: str, request: dict[str, Any]) -> Reply:
        assert (method, path) == ("POST", "/api/v1/namespaces/shop/events")
        if self.error is not None:
            return self.error, status_body(self.error)
        return 201, b"{}"


def test_kube_events_creates_one_core_event_in_the_deployments_namespace() -> None:
    rest = FakeRest()
    KubeEvents(instance="a", rest=rest, clock=lambda: T).emit(EVENT)
    assert [(ns, body["reason"]) for ns, body, _ in rest.created] == [("shop", "StalePodDeleted")]
    assert rest.created[0][2] == LEASE_TIMEOUT  # small calls, short deadline


def test_a_forbidden_event_names_the_rbac_rule_and_emit_events() -> None:
    rest = FakeRest(403)
    with pytest.raises(ClusterForbiddenError, match=r"events: create \(EMIT_EVENTS=true\)"):
        KubeEvents(instance="a", rest=rest).emit(EVENT)


def watch_lease(api: FakeApiClient, *chunks: bytes) -> KubeLease:
    api.streams["/apis/coordination.k8s.io/v1/namespaces/autoroll/leases"] = Stream(list(chunks))
    return KubeLease(namespace="autoroll", name="rel-autoroll", rest=KubeRest(api))


def test_the_watch_goes_through_kube_rest_with_the_name_selector_and_yields_records() -> None:
    api = FakeApiClient()
    event = json.dumps({"type": "MODIFIED", "object": LEASE_JSON}).encode()
    # one event split across chunks, then a bookmark-like event of another type
    lease = watch_lease(
        api, event[:10], event[10:] + b"\n", b'{"type": "BOOKMARK", "object": {}}\n'
    )
    records = list(lease.watch("41", 30))
    assert [r.resource_version for r in records] == ["42"]
    [request] = api.serialized
    assert request["method"] == "GET"
    assert ("fieldSelector", "metadata.name=rel-autoroll") in request["query_params"]
    assert ("watch", "true") in request["query_params"]
    assert ("resourceVersion", "41") in request["query_params"]
    assert api.timeouts == [(1.0, 33.0)]  # the server's watch timeout plus the read timeout
    assert api.streams["/apis/coordination.k8s.io/v1/namespaces/autoroll/leases"].released


def test_an_error_event_in_the_watch_is_an_api_error_with_its_code() -> None:
    error = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old"}}
    lease = watch_lease(FakeApiClient(), json.dumps(error).encode() + b"\n")
    with pytest.raises(ClusterApiError, match=r"watch lease autoroll/rel-autoroll: 410") as info:
        list(lease.watch("1", 30))
    assert info.value.status == 410


def test_a_forbidden_watch_names_the_watch_verb() -> None:
    api = FakeCoordination(403)
    lease = KubeLease(namespace="autoroll", name="rel-autoroll", rest=KubeRest(api))
    with pytest.raises(ClusterForbiddenError, match=r"leases: watch"):
        list(lease.watch("1", 30))


def test_abort_watch_ends_a_watch_in_progress() -> None:
    api = FakeApiClient()
    event = json.dumps({"type": "MODIFIED", "object": LEASE_JSON}).encode() + b"\n"
    lease = watch_lease(api, event, event, event)
    seen = []
    for record in lease.watch("1", 30):
        seen.append(record)
        lease.abort_watch()
    assert len(seen) == 1


def test_abort_watch_never_raises_when_the_connection_is_already_gone() -> None:
    class Gone(Stream):
        def shutdown(self) -> None:  # what urllib3 says once the socket is released
            raise ValueError("Cannot shutdown socket as self._sock_shutdown is not set")

    api = FakeApiClient()
    event = json.dumps({"type": "MODIFIED", "object": LEASE_JSON}).encode() + b"\n"
    api.streams["/apis/coordination.k8s.io/v1/namespaces/autoroll/leases"] = Gone([event, event])
    lease = KubeLease(namespace="autoroll", name="rel-autoroll", rest=KubeRest(api))
    for _ in lease.watch("1", 30):
        lease.abort_watch()  # must not raise
        break
