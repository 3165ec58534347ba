"""The guards: ``autoroll.jobGroupGuard`` and ``autoroll.jobGroupServiceAccountGuard``.

A hash-named Job whose successful run would delete it (a ``HookSucceeded``/``hook-succeeded``
delete policy), and an entry that would run as the controller's own ServiceAccount
(``autoroll.serviceAccountName`` of ``_helpers.tpl``), fail the render. One function per
``define``, named after it.
"""

from __future__ import annotations

from collections.abc import Mapping

from jobhash.container import scalar_string
from jobhash.gojson import GoValue
from jobhash.gotemplate import GoMap, _fail, go_default, go_empty, go_get, go_trim_space


def delete_policies(value: GoValue) -> list[str]:
    """``autoroll.jobs.deletePolicies``: a comma string or a list, as trimmed names.

    Keep in sync with ``_jobs.tpl`` autoroll.jobs.deletePolicies.
    """
    raw: GoValue = value
    if isinstance(value, str):
        parts: list[GoValue] = []
        parts.extend(value.split(","))
        raw = parts
    out: list[str] = []
    items = go_default(raw, [])
    for item in items if isinstance(items, list) else []:
        # The schema allows only strings here; Sprig toString of anything else is not mirrored.
        text = go_trim_space(item if isinstance(item, str) else scalar_string(item))
        if text:
            out.append(text)
    return out


def job_group_guard(values: GoMap, group: str, job: str) -> None:
    """``autoroll.jobGroupGuard``: hashSuffix with a succeeded delete policy fails the render.

    Keep the message in sync with ``_jobs.tpl`` autoroll.jobGroupGuard.

    Keep in sync with ``_jobs.tpl`` autoroll.jobGroupGuard.
    """
    if go_empty(go_get(values, "hashSuffix")):
        return
    hooks = go_default(go_get(values, "hooks"), {})
    hooks_map = hooks if isinstance(hooks, dict) else {}
    argo = go_default(go_get(hooks_map, "argocd"), {})
    helm = go_default(go_get(hooks_map, "helm"), {})
    argo_policies = delete_policies(go_get(argo, "deletePolicy") if isinstance(argo, dict) else "")
    helm_policies = delete_policies(go_get(helm, "deletePolicy") if isinstance(helm, dict) else "")
    hit = ""
    if "HookSucceeded" in argo_policies:
        hit = "hooks.argocd.deletePolicy contains HookSucceeded"
    elif "hook-succeeded" in helm_policies:
        hit = "hooks.helm.deletePolicy contains hook-succeeded"
    if hit:
        raise _fail(
            f"jobGroups.{group}.jobs.{job}: hashSuffix is true and {hit}. Every successful run "
            "would delete the Job, so the next sync re-creates it under the same name and it "
            "runs again, on every sync. Fix it one of two ways: remove the hook "
            "(hooks.argocd.hook/hooks.helm.hook and the delete policy; order the Job with "
            "hooks.argocd.syncWave instead) so it is a plain resource that runs once per spec "
            f'hash; or set hashSuffix: false on group "{group}" to opt out of spec hashing and '
            "run it on every sync on purpose."
        )


def controller_service_account(values: Mapping[str, GoValue], prefix: str) -> str | None:
    """``autoroll.serviceAccountName`` while ``controller.enabled``, else ``None``: with
    ``serviceAccount.create`` the name or ``prefix`` (the fullname), without it the name or
    ``default``.

    Keep in sync with ``_helpers.tpl`` autoroll.serviceAccountName.
    """
    controller = go_default(values.get("controller"), {})
    if isinstance(controller, dict) and go_empty(go_get(controller, "enabled")):
        return None
    account = go_default(values.get("serviceAccount"), {})
    account_map = account if isinstance(account, dict) else {}
    name = go_get(account_map, "name")
    fallback = prefix if not go_empty(go_get(account_map, "create")) else "default"
    return fallback if go_empty(name) else str(name)


def job_group_service_account_guard(
    values: GoMap, group: str, job: str, controller_account: str | None
) -> None:
    """``autoroll.jobGroupServiceAccountGuard``: an entry may not run as the controller's own
    ServiceAccount (an empty ``serviceAccountName`` is the namespace's ``default``).

    Keep the message in sync with ``_jobs.tpl`` autoroll.jobGroupServiceAccountGuard.
    """
    if controller_account is None:
        return
    raw = go_get(values, "serviceAccountName")
    given = "" if go_empty(raw) else str(raw)
    if (given or "default") == controller_account:
        raise _fail(
            f'jobGroups.{group}.jobs.{job}: serviceAccountName "{given}" (empty: the '
            "namespace's \"default\") is the controller's own ServiceAccount, which may delete "
            "pods; give the Job a ServiceAccount of its own with serviceAccountName, or run the "
            "controller as another one (serviceAccount.name)"
        )
