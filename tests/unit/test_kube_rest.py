"""``KubeRest``: the requests themselves through a scripted ``ApiClient`` (query parameters,
preconditions, answers and connections), and what a pass may never import.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from autoroll.core.model import WorkloadKind
from autoroll.kube.cluster import KubeCluster
from autoroll.kube.errors import ClusterApiError, ClusterForbiddenError, ClusterUnauthorizedError
from autoroll.kube.transport import LIVE_PODS_FIELD_SELECTOR, KubeRest
from tests.support.fake_api_client import FakeApiClient, always
from tests.support.kube_rest import FakeRest

# --- KubeRest: the requests themselves, through a scripted ApiClient ---------------------------


def test_rest_lists_send_the_selectors_as_query_parameters() -> None:
    api = FakeApiClient()
    rest = KubeRest(api)
    listed = rest.list_workloads(WorkloadKind.DEPLOYMENT, label_selector="a=b", timeout=(1, 2))
    assert listed == b'{"items": []}'
    rest.list_pods("shop", field_selector="f!=x", label_selector="app in (web)", timeout=(1, 2))
    rest.list_pods("blog", field_selector="f!=x", label_selector=None, timeout=(1, 2))
    assert [(c["method"], c["resource_path"], c["query_params"]) for c in api.serialized] == [
        ("GET", "/apis/apps/v1/deployments", [("labelSelector", "a=b")]),
        (
            "GET",
            "/api/v1/namespaces/shop/pods",
            [("fieldSelector", "f!=x"), ("labelSelector", "app in (web)")],
        ),
        ("GET", "/api/v1/namespaces/blog/pods", [("fieldSelector", "f!=x")]),
    ]
    assert all(c["auth_settings"] == ["BearerToken"] for c in api.serialized)
    assert api.timeouts == [(1, 2)] * 3
    assert all(r.released for r in api.answers)


def test_pods_are_listed_without_a_phase_filter() -> None:
    # A deleted pod that already exited shows Succeeded or Failed while it still terminates;
    # a phase field selector would hide it and the core would not wait for it.
    api = FakeApiClient()
    KubeRest(api).list_pods(
        "shop", field_selector=LIVE_PODS_FIELD_SELECTOR, label_selector=None, timeout=(1, 2)
    )
    assert LIVE_PODS_FIELD_SELECTOR == ""
    assert [c["query_params"] for c in api.serialized] == [[]]


def test_rest_delete_and_evict_carry_the_uid_precondition() -> None:
    api = FakeApiClient(router=always((200, b"{}")))
    rest = KubeRest(api)
    rest.delete_pod("shop", "web-1", uid="u1", timeout=(1, 2))
    rest.evict_pod("shop", "web-1", uid="u1", timeout=(1, 2))
    delete, evict = api.serialized
    assert (delete["method"], delete["resource_path"]) == (
        "DELETE",
        "/api/v1/namespaces/shop/pods/web-1",
    )
    assert delete["body"]["preconditions"] == {"uid": "u1"}
    assert (evict["method"], evict["resource_path"]) == (
        "POST",
        "/api/v1/namespaces/shop/pods/web-1/eviction",
    )
    assert evict["body"]["kind"] == "Eviction"
    assert evict["body"]["metadata"] == {"name": "web-1", "namespace": "shop"}
    assert evict["body"]["deleteOptions"] == {"preconditions": {"uid": "u1"}}
    assert all(c["header_params"]["Content-Type"] == "application/json" for c in api.serialized)


@pytest.mark.parametrize("status", [401, 403, 404, 409, 429, 500])
def test_rest_reports_the_answers_status_and_frees_the_connection(status: int) -> None:
    # 404 and 409 are answers a delete expects (gone, replaced); the rest are errors.
    api = FakeApiClient(router=always((status, b'{"kind": "Status"}')))
    rest = KubeRest(api)
    if status in (404, 409):
        assert rest.delete_pod("shop", "web-1", uid="u1", timeout=(1, 2)) == status
    else:
        with pytest.raises(ClusterApiError) as info:
            rest.delete_pod("shop", "web-1", uid="u1", timeout=(1, 2))
        assert info.value.status == status
    assert api.answers[0].released


def test_a_pass_and_its_events_never_import_the_generated_api_classes() -> None:
    # They pull in a few hundred model modules (about 26 MB); a pass needs none of them.
    probe = """
import sys
from autoroll.kube import KubeCluster, KubeEvents, KubeLease
from autoroll.core.model import WorkloadKind; from autoroll.core.records import RollEvent

class Answer:
    status, reason = 200, "OK"
    def __init__(self, data): self.data = data; self.response = None
    def read(self): return self.data

class ApiClient:
    def param_serialize(self, **kw): return (kw["resource_path"],)
    def call_api(self, path, _request_timeout):
        if path.endswith("/deployments"):
            return Answer(b'{"items": [{"metadata": {"name": "web", "namespace": "shop"},'
                          b' "spec": {"selector": {"matchLabels": {"app": "web"}}}}]}')
        return Answer(b'{"items": []}')

cluster = KubeCluster(label_selector="x", api_client_factory=ApiClient)
assert [e.workload.name for e in cluster.snapshot()] == ["web"]
cluster.delete_pod("shop", "web-1", "uid-1")
KubeEvents(instance="a", api_client_factory=ApiClient).emit(
    RollEvent("shop", WorkloadKind.DEPLOYMENT, "web", "uid-web", "StalePodDeleted", "x")
)
lease = KubeLease(namespace="autoroll", name="rel", api_client_factory=ApiClient)
lease.get()
lease.publish_nudge("v")
loaded = [m for m in sys.modules if m.startswith("kubernetes.client.api.")]
assert not loaded, loaded
"""
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("status", [401])
def test_a_401_is_rejected_credentials_not_a_missing_rbac_rule(status: int) -> None:
    cluster = KubeCluster(label_selector="x", rest=FakeRest(list_error=status))
    with pytest.raises(ClusterUnauthorizedError) as info:
        cluster.snapshot()
    assert not isinstance(info.value, ClusterForbiddenError)
    message = str(info.value)
    assert message.startswith("list deployments (all namespaces): 401")
    assert "rejected the controller's credentials" in message
    assert "ClusterRole" not in message and "must grant" not in message
