"""The hash input of one jobGroups entry: a step-by-step mirror of ``templates/_jobs.tpl``.

One function per ``define``, named after it (``job_group_values`` mirrors
``autoroll.jobGroupValues``, ``job_group_spec`` mirrors ``autoroll.jobGroupSpec`` …); each
docstring names its template. Keep them in sync with ``charts/autoroll/templates/_jobs.tpl``:
the golden vectors (tests/golden/) and the parity test (tests/integration/test_parity.py)
fail when they drift.

One module per group of helpers: :mod:`jobhash.writable` (step 0a, the characters Helm cannot
write), :mod:`jobhash.layers` (step 1, the effective values), :mod:`jobhash.container` and this
module (step 2, the Job spec: the pod labels, ``autoroll.jobGroupSpec`` and the rendered
``autoroll.jobGroupJobSpec``; step 3, ``autoroll.jobGroupHash``), :mod:`jobhash.guards` (the
guards); the Go template and Sprig primitives they share are in :mod:`jobhash.gotemplate`.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from jobhash.container import container, is_set, set_if_set
from jobhash.gojson import GoValue, clone, marshal
from jobhash.gotemplate import GoMap, _fail, go_default, go_empty, go_get, go_kind, json_round_trip
from jobhash.layers import merge_env, merge_into

KEY_PATTERN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
"""``autoroll.jobs.keyPattern`` (``^…$`` in the template; matched whole here)."""


def valid_key(key: GoValue) -> bool:
    """``regexMatch (include "autoroll.jobs.keyPattern") k`` and ``le (len k) 63``: the test
    jobGroupPlan applies to group and job keys and jobGroupSpec to task names."""
    return isinstance(key, str) and bool(KEY_PATTERN.fullmatch(key)) and len(key.encode()) <= 63


def job_group_pod_labels(group: str, job: str) -> GoMap:
    """``autoroll.jobGroupPodLabels``: the pod template's identity labels, part of the hash input.

    Only the group and job keys: labels that vary with the chart version, appVersion, release or
    controller values would change an existing Job's immutable pod template under the same name
    (ADR 012). Keep in sync with ``_jobs.tpl`` autoroll.jobGroupPodLabels.
    """
    return {"autoroll.aethnet.se/job-group": group, "autoroll.aethnet.se/job": job}


def job_group_template_labels(group: str, job: str, hash_hex: str) -> GoMap:
    """``autoroll.jobGroupTemplateLabels``: the pod labels plus ``spec-hash`` (the sha8).

    The labels of a pod template and of a CronJob's ``jobTemplate``. Keep in sync with
    ``_jobs.tpl`` autoroll.jobGroupTemplateLabels.
    """
    labels = job_group_pod_labels(group, job)
    labels["autoroll.aethnet.se/spec-hash"] = hash_hex[:8]
    return labels


def check_pull_secrets(value: GoValue, path: str) -> None:
    """``autoroll.jobs.checkPullSecrets``: unset, or a list of maps holding only a non-empty
    string ``name``; anything else fails naming the entry.

    Keep in sync with ``_jobs.tpl`` autoroll.jobs.checkPullSecrets.
    """
    if not is_set(value):
        return
    if not isinstance(value, list):
        raise _fail(
            f"{path}: must be a list of {{name: <Secret name>}}, e.g. [{{name: regcred}}], "
            f"got {go_kind(value)}"
        )
    for index, entry in enumerate(value):
        name = go_get(entry, "name") if isinstance(entry, dict) else ""
        if not (isinstance(entry, dict) and len(entry) == 1 and isinstance(name, str) and name):
            raise _fail(
                f"{path}[{index}]: must be a map holding only name, a Secret's name, "
                f"e.g. {{name: regcred}}, got {go_kind(entry)}"
            )


def job_group_spec(values: GoMap, group: str, job: str) -> str:
    """``autoroll.jobGroupSpec``: the hash input, the Job ``.spec`` as ``mustToJson`` writes it.

    Everything the pod template carries is in it but the spec-hash label (the hash itself) and
    opted-out pod annotations. Keep in sync with ``_jobs.tpl`` autoroll.jobGroupSpec.
    """
    path = f"jobGroups.{group}.jobs.{job}"
    image = go_default(go_get(values, "image"), {})
    env = go_default(go_get(values, "env"), {})
    main = container(
        name="main",
        image=image,
        command=go_get(values, "command"),
        args=go_get(values, "args"),
        env=env,
        shared=values,
        path=path,
    )
    pod: GoMap = {"containers": [main]}
    inits: list[GoValue] = []
    seen: list[str] = ["main"]
    tasks = go_default(go_get(values, "tasks"), [])
    if not isinstance(tasks, list):
        raise _fail(
            f"{path}.tasks: must be a list of {{name, image, command, args, env}}, "
            f"got {go_kind(tasks)}"
        )
    for index, task in enumerate(tasks):
        task_path = f"{path}.tasks[{index}]"
        if not isinstance(task, dict):
            raise _fail(
                f"{task_path}: must be a map {{name, image, command, args, env}}, "
                f"got {go_kind(task)}"
            )
        name = go_get(task, "name")
        if not valid_key(name):
            raise _fail(
                f"{task_path}.name: must be a DNS-1123 label (lowercase letters, digits and "
                f"'-', at most 63 characters), got {name}"
            )
        assert isinstance(name, str)
        if name in seen:
            raise _fail(
                f'{task_path}.name: "{name}" is already used by an earlier task or by the main '
                'container; task names must be unique and not "main"'
            )
        seen.append(name)
        task_image = clone(image)
        merge_into(task_image, go_default(go_get(task, "image"), {}), f"{task_path}.image")
        task_env = clone(env)
        holder: GoMap = {"env": task_env}
        merge_env(holder, go_default(go_get(task, "env"), {}), f"{task_path}.env")
        inits.append(
            container(
                name=name,
                image=task_image,
                command=go_get(task, "command"),
                args=go_get(task, "args"),
                env=holder["env"],
                shared=values,
                path=task_path,
            )
        )
    set_if_set(pod, "initContainers", inits)
    check_pull_secrets(go_get(values, "imagePullSecrets"), f"{path}.imagePullSecrets")
    set_if_set(pod, "securityContext", go_get(values, "podSecurityContext"))
    for key in (
        "volumes",
        "serviceAccountName",
        "imagePullSecrets",
        "restartPolicy",
        "nodeSelector",
        "affinity",
        "tolerations",
        "topologySpreadConstraints",
    ):
        set_if_set(pod, key, go_get(values, key))
    meta: GoMap = {"labels": job_group_pod_labels(group, job)}
    pod_annotations = go_get(values, "podAnnotations")
    if not go_empty(go_get(values, "hashIncludePodAnnotations")) and is_set(pod_annotations):
        meta["annotations"] = clone(pod_annotations)
    template: GoMap = {"metadata": meta, "spec": pod}
    spec: GoMap = {"template": template}
    for key in ("backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"):
        set_if_set(spec, key, go_get(values, key))
    return marshal(spec)


def job_group_job_spec(
    *, spec_json: str, hash_hex: str, values: GoMap, group: str, job: str
) -> Any:
    """``autoroll.jobGroupJobSpec``: the rendered Job ``.spec`` (a CronJob's jobTemplate.spec).

    The hashed spec parsed back (every number a float64), plus the spec-hash pod label and,
    under ``hashIncludePodAnnotations: false``, the pod annotations: the only parts of a Job's
    immutable pod template that can differ under one name are those annotations (and, with
    ``hashSuffix: false``, anything). Keep in sync with ``_jobs.tpl`` autoroll.jobGroupJobSpec.
    """
    spec = json_round_trip(json.loads(spec_json))
    meta = spec["template"]["metadata"]
    meta["labels"] = job_group_template_labels(group, job, hash_hex)
    pod_annotations = go_get(values, "podAnnotations")
    if go_empty(go_get(values, "hashIncludePodAnnotations")) and is_set(pod_annotations):
        meta["annotations"] = clone(pod_annotations)
    return spec


# ---------------------------------------------------------------------------------------------
# Step 3: the hash


def job_group_hash(spec_json: str) -> str:
    """``autoroll.jobGroupHash``: sha256 (64 hex) of the spec JSON string.

    Keep in sync with ``_jobs.tpl`` autoroll.jobGroupHash.
    """
    if not spec_json.startswith("{"):
        raise _fail("autoroll.jobGroupHash: takes the JSON string from autoroll.jobGroupSpec")
    return hashlib.sha256(spec_json.encode("utf-8")).hexdigest()
