"""jobhash.guards mirrors the chart's guards: delete policies split and trimmed, the job-group
guard with the chart's message, and the controller's service account a job may not run as.
"""

from __future__ import annotations

from typing import Any

import pytest

from jobhash.errors import RenderError
from jobhash.gojson import GoValue
from jobhash.guards import (
    controller_service_account,
    delete_policies,
    job_group_guard,
    job_group_service_account_guard,
)


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("HookSucceeded", ["HookSucceeded"]),
        (" BeforeHookCreation , HookSucceeded ,", ["BeforeHookCreation", "HookSucceeded"]),
        (["a ", " b"], ["a", "b"]),
        ("", []),
    ],
)
def test_delete_policies_split_and_trim(policy: GoValue, expected: list[str]) -> None:
    assert delete_policies(policy) == expected


@pytest.mark.parametrize(
    ("hooks", "hit"),
    [
        ({"argocd": {"deletePolicy": "BeforeHookCreation,HookSucceeded"}}, "argocd"),
        ({"helm": {"deletePolicy": ["hook-failed", "hook-succeeded"]}}, "helm"),
    ],
)
def test_guard_fails_with_the_charts_message(hooks: Any, hit: str) -> None:
    with pytest.raises(RenderError) as caught:
        job_group_guard({"hashSuffix": True, "hooks": hooks}, "db", "migrate")
    message = caught.value.message
    assert message.startswith(f"jobGroups.db.jobs.migrate: hashSuffix is true and hooks.{hit}")
    assert 'set hashSuffix: false on group "db"' in message


def test_guard_passes_when_opted_out_or_harmless() -> None:
    policy: Any = {"argocd": {"deletePolicy": "HookSucceeded"}}
    job_group_guard({"hashSuffix": False, "hooks": policy}, "db", "m")
    job_group_guard({"hashSuffix": True, "hooks": {"argocd": {"deletePolicy": "x"}}}, "db", "m")


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({}, "demo-autoroll"),  # the chart's defaults: created, named after the fullname
        ({"serviceAccount": {"create": True, "name": "ops"}}, "ops"),
        ({"serviceAccount": {"create": False, "name": ""}}, "default"),
        ({"serviceAccount": {"create": False, "name": "robot"}}, "robot"),
        ({"controller": {"enabled": False}}, None),  # no controller: any account may be used
    ],
)
def test_the_controllers_service_account_mirrors_the_chart_helper(
    values: dict[str, Any], expected: str | None
) -> None:
    # As the chart sees them: user values over values.yaml's defaults.
    defaults: dict[str, Any] = {
        "controller": {"enabled": True},
        "serviceAccount": {"create": True, "name": ""},
    }
    assert controller_service_account({**defaults, **values}, "demo-autoroll") == expected


@pytest.mark.parametrize(
    ("given", "controller", "refused"),
    [
        ("demo-autoroll", "demo-autoroll", True),
        ("", "default", True),  # empty is the namespace's default
        ("default", "default", True),
        ("", "demo-autoroll", False),
        ("migrator", "demo-autoroll", False),
        ("demo-autoroll", None, False),
    ],
)
def test_a_job_may_not_run_as_the_controllers_service_account(
    given: str, controller: str | None, refused: bool
) -> None:
    values: dict[str, GoValue] = {"serviceAccountName": given} if given else {}
    if not refused:
        job_group_service_account_guard(values, "db", "migrate", controller)
        return
    with pytest.raises(RenderError, match=r'^jobGroups\.db\.jobs\.migrate: serviceAccountName "'):
        job_group_service_account_guard(values, "db", "migrate", controller)
