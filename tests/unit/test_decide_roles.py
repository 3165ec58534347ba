"""Every container of a pod spec is compared, whatever its role (docs/adr/015), and its verdict
says which role it has: the plan and the log tell a native sidecar or an init container from
the app container."""

from __future__ import annotations

from autoroll.core.model import ContainerRole, ContainerView
from tests.support import decide_cases as cases
from tests.support.decide_scene import decide_app


def test_each_verdict_carries_its_containers_role() -> None:
    workload = cases.deployment(
        ContainerView("app", cases.IMAGE),
        ContainerView("proxy", cases.SIDE_IMAGE, role=ContainerRole.SIDECAR),
        ContainerView("migrate", cases.SIDE_IMAGE, role=ContainerRole.INIT),
    )
    extra = [("proxy", cases.SIDE_IMAGE, cases.NEW), ("migrate", cases.SIDE_IMAGE, cases.NEW)]
    pods = [cases.pod(name, digest=cases.NEW, extra=extra) for name in "ab"]
    decision = decide_app(
        pods, workload=workload, resolved={cases.REF: cases.NEW, cases.SIDE_REF: cases.NEW}
    )
    assert [(v.container, v.role) for v in decision.containers] == [
        ("app", ContainerRole.CONTAINER),
        ("proxy", ContainerRole.SIDECAR),
        ("migrate", ContainerRole.INIT),
    ]
