"""What the bench counts: each Kubernetes request by its verb and resource
(``bench.counting``), and the naive baseline's list selector (``bench/naive.py``)."""

from __future__ import annotations

import pytest

from autoroll.kube.selectors import LabelSelector, Operator, Requirement
from autoroll.kube.selectors import selector_query as selector_text  # what bench/naive.py sends
from bench.counting import kube_request_kind


@pytest.mark.parametrize(
    ("method", "url", "kind"),
    [
        ("GET", "https://h/apis/apps/v1/deployments?labelSelector=a%3Db", "list deployments"),
        ("GET", "https://h/api/v1/namespaces/ns/pods?fieldSelector=x", "list pods"),
        ("GET", "https://h/api/v1/namespaces/ns/pods/p", "get pods"),
        ("DELETE", "https://h/api/v1/namespaces/ns/pods/p", "delete pods"),
        ("POST", "https://h/api/v1/namespaces/ns/pods/p/eviction", "create pods/eviction"),
        ("GET", "https://h/api/v1/namespaces/ns/pods?watch=true", "watch pods"),
        ("GET", "https://h/api/v1/namespaces/ns", "get namespaces"),
    ],
)
def test_kubernetes_requests_are_classified_by_verb(method: str, url: str, kind: str) -> None:
    assert kube_request_kind(method, url) == kind


def test_the_naive_baseline_lists_with_the_deployments_own_selector() -> None:
    selector = LabelSelector(
        (("app", "web"),),
        (
            Requirement("tier", Operator.IN, frozenset({"b", "a"})),
            Requirement("canary", Operator.DOES_NOT_EXIST),
        ),
    )
    assert selector_text(selector) == "app=web,tier in (a,b),!canary"
