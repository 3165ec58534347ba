"""The hash input of one jobGroups entry: a step-by-step mirror of ``templates/_jobs.tpl``.

One function per ``define``, named after it (``job_group_values`` mirrors
``autoroll.jobGroupValues``, ``job_group_spec`` mirrors ``autoroll.jobGroupSpec`` …); each
docstring names its template. Keep them in sync with ``charts/autoroll/templates/_jobs.tpl``:
the golden vectors (tests/golden/) and the parity test (tests/integration/test_parity.py)
fail when they drift.

Values use the Go types Helm hands the template (:mod:`jobhash.gojson`). Template semantics
that matter and are reproduced here: Sprig ``get`` returns ``""`` for a missing key, ``default``
treats every empty value (``0``, ``false``, ``""``, ``[]``, ``{}``) as missing, and every
``mustToJson | mustFromJson`` round trip turns each number into a float64.

Every ``fail`` in the template raises :class:`~jobhash.errors.RenderError` with the template's
message, verbatim.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from jobhash.errors import RenderError
from jobhash.gojson import GoValue, clone, marshal

KEY_PATTERN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
"""``autoroll.jobs.keyPattern`` (``^…$`` in the template; matched whole here)."""

GoMap = dict[str, GoValue]

# unicode.IsSpace: Latin-1 spaces plus the White_Space property (not U+001C..U+001F).
GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
GO_SPACE += "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


# ---------------------------------------------------------------------------------------------
# Go template / Sprig primitives


def go_get(mapping: Mapping[str, GoValue], key: str) -> GoValue:
    """Sprig ``get``: the value, or ``""`` when the key is missing."""
    return mapping.get(key, "")


def go_empty(value: object) -> bool:
    """Sprig ``empty`` (also Go template falsiness): nil, false, 0, "" and empty collections."""
    if value is None or value is False:
        return True
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value == 0
    if isinstance(value, str | list | dict):
        return len(value) == 0
    return False


def go_default(value: GoValue, fallback: GoValue) -> GoValue:
    """Sprig ``default``: ``fallback`` when ``value`` is empty."""
    return fallback if go_empty(value) else value


def go_kind(value: object) -> str:
    """Sprig ``kindOf`` for the types values can hold."""
    if value is None:
        return "invalid"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "slice"
    return "map"


def go_trim_space(text: str) -> str:
    """Sprig ``trim`` (``strings.TrimSpace``)."""
    return text.strip(GO_SPACE)


def json_round_trip(value: GoValue) -> Any:
    """``mustToJson | mustFromJson``: a deep copy in which every int64 became a float64.

    Computed without the text detour (this runs several times per job): Go writes an int64
    in decimal and reads it back with ParseFloat, which rounds like Python's ``float(int)``;
    floats, strings and bools come back unchanged (shortest round-trip formatting).
    """
    kind = type(value)  # exact-type dispatch first: this is the hottest function of a plan
    if kind is dict:
        return {key: json_round_trip(item) for key, item in value.items()}  # type: ignore[union-attr]
    if kind is str or kind is float or kind is bool or value is None:
        return value
    if kind is list:
        return [json_round_trip(item) for item in value]  # type: ignore[union-attr]
    if isinstance(value, dict):
        return {key: json_round_trip(item) for key, item in value.items()}
    if isinstance(value, list):
        return [json_round_trip(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _fail(message: str) -> RenderError:
    return RenderError(message, fix=_fix_for(message))


def _fix_for(message: str) -> str:
    if "Helm cannot write" in message:
        return "delete the character, or spell it differently (it is never valid in a manifest)"
    if "image.repository" in message:
        return "set image.repository on jobDefaults, the group, the job or the task"
    if "name suffix" in message:
        return "use a shorter job key (or group key); the release name part is what shrinks"
    if "hashSuffix is true" in message:
        return "remove the hook, or set hashSuffix: false on the group"
    if "null is not allowed" in message:
        return "remove the key or give it a value"
    if "is already used by an earlier task" in message:
        return 'give every task of the job its own name, other than "main"'
    if "DNS-1123 label" in message:
        return "use lowercase letters, digits and '-', starting and ending with a letter or digit"
    if ".imagePullSecrets" in message:
        return "write each entry as {name: <Secret name>}, e.g. imagePullSecrets: [{name: regcred}]"
    return "see docs/jobhash-algorithm.md and values.yaml for the allowed form"


# ---------------------------------------------------------------------------------------------
# Step 1: effective values


def builtin_defaults() -> GoMap:
    """``autoroll.jobs.builtinDefaults``: layer 0 of every entry.

    Keep in sync with ``_jobs.tpl`` autoroll.jobs.builtinDefaults.
    """
    return {
        "enabled": True,
        "hashSuffix": True,
        "hashIncludePodAnnotations": True,
        "restartPolicy": "Never",
        "concurrencyPolicy": "Forbid",
        # The Pod Security "restricted" profile, overridable key by key (ADR 023).
        "podSecurityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    }


def merge_into(dst: GoValue, src: GoValue, path: str) -> None:
    """``autoroll.jobs.mergeInto``: deep-merge map ``src`` into map ``dst`` in place.

    A present key always wins; map over map recurses; anything else is replaced by a copy.
    Keep in sync with ``_jobs.tpl`` autoroll.jobs.mergeInto.
    """
    if not (isinstance(dst, dict) and isinstance(src, dict)):
        raise _fail(
            f"{path}: must be a map (autoroll.jobs.mergeInto got {go_kind(src)} over "
            f"{go_kind(dst)})"
        )
    for key in sorted(src, key=lambda k: k.encode()):
        value = src[key]
        child = f"{path}.{key}"
        if value is None:
            raise _fail(f"{child}: null is not allowed; remove the key or give it a value")
        if isinstance(value, dict):
            current = go_get(dst, key)
            if not isinstance(current, dict):
                current = {}
                dst[key] = current
            merge_into(current, value, child)
        else:
            dst[key] = clone(value)


def merge_env(dst: GoMap, env: GoValue, path: str) -> None:
    """``autoroll.jobs.mergeEnv``: merge an env map into ``dst["env"]`` by name.

    Keep in sync with ``_jobs.tpl`` autoroll.jobs.mergeEnv.
    """
    if not isinstance(env, dict):
        raise _fail(f"{path}: must be a map of NAME: value, got {go_kind(env)}")
    out = go_get(dst, "env")
    if not isinstance(out, dict):
        out = {}
        dst["env"] = out
    for name in sorted(env, key=lambda k: k.encode()):
        value = env[name]
        if value is None:
            raise _fail(
                f"{path}.{name}: null is not allowed; remove the variable or give it a value"
            )
        out[name] = clone(value)


_LAYER_SPECIAL = ("jobs", "env", "envSecrets", "envConfigMaps")


def apply_layer(dst: GoMap, src: GoValue, path: str) -> None:
    """``autoroll.jobs.applyLayer``: one layer (jobDefaults, group or job) onto ``dst``.

    Keep in sync with ``_jobs.tpl`` autoroll.jobs.applyLayer.
    """
    if not isinstance(src, dict):
        raise _fail(f"{path}: must be a map of job settings, got {go_kind(src)}")
    merge_into(dst, {k: v for k, v in src.items() if k not in _LAYER_SPECIAL}, path)
    if "env" in src:
        merge_env(dst, src["env"], f"{path}.env")
    for field in ("envSecrets", "envConfigMaps"):
        if field not in src:
            continue
        add = src[field]
        if not isinstance(add, list):
            raise _fail(f"{path}.{field}: must be a list of names, got {go_kind(add)}")
        current = go_default(go_get(dst, field), [])
        names: list[GoValue] = list(current) if isinstance(current, list) else [current]
        for name in add:
            if not isinstance(name, str):
                raise _fail(
                    f"{path}.{field}: every entry must be a string name, got {go_kind(name)}"
                )
            if name not in names:
                names.append(name)
        dst[field] = names


def job_group_values(values: Mapping[str, GoValue], group: str, job: str) -> GoMap:
    """``autoroll.jobGroupValues``: the effective values of one entry (after the JSON trip).

    Layers, lowest first: builtin defaults, ``.Values.jobDefaults``, ``jobGroups.<group>``
    without ``jobs``, ``jobGroups.<group>.jobs.<job>``. Keep in sync with ``_jobs.tpl``.
    """
    groups = go_default(go_get(values, "jobGroups"), {})
    group_path = f"jobGroups.{group}"
    job_path = f"jobGroups.{group}.jobs.{job}"
    group_values = go_get(groups, group) if isinstance(groups, dict) else ""
    if not isinstance(group_values, dict):
        raise _fail(
            f"{group_path}: must be a map of group settings and jobs, got {go_kind(group_values)}"
        )
    jobs = go_default(go_get(group_values, "jobs"), {})
    job_values = go_get(jobs, job) if isinstance(jobs, dict) else ""
    if not isinstance(job_values, dict):
        raise _fail(
            f"{job_path}: must be a map of job settings ({{}} for none), got {go_kind(job_values)}"
        )
    effective = builtin_defaults()
    apply_layer(effective, go_default(go_get(values, "jobDefaults"), {}), "jobDefaults")
    apply_layer(effective, group_values, group_path)
    apply_layer(effective, job_values, job_path)
    result = json_round_trip(effective)
    assert isinstance(result, dict)
    return result


# ---------------------------------------------------------------------------------------------
# Step 2: the spec


def is_set(value: GoValue) -> bool:
    """``autoroll.jobs.isSet``: numbers and bools always; strings/lists/maps when non-empty.

    Keep in sync with ``_jobs.tpl`` autoroll.jobs.isSet.
    """
    if isinstance(value, bool) or _is_number(value):
        return True
    return value is not None and not go_empty(value)


def set_if_set(dst: GoMap, key: str, value: GoValue) -> None:
    """``autoroll.jobs.setIfSet``. Keep in sync with ``_jobs.tpl``."""
    if is_set(value):
        dst[key] = clone(value)


def scalar_string(value: GoValue) -> str:
    """``autoroll.jobs.scalarString``: a string as is, a number or bool as ``mustToJson``.

    Keep in sync with ``_jobs.tpl`` autoroll.jobs.scalarString.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or _is_number(value):
        return marshal(value)
    raise _fail(
        "autoroll.jobs.scalarString: expected a string, number or bool, got " + go_kind(value)
    )


def argv(value: GoValue, path: str) -> list[GoValue]:
    """``autoroll.jobs.argv``: a string is one element (none when empty); a list as is.

    Keep in sync with ``_jobs.tpl`` autoroll.jobs.argv.
    """
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, list):
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise _fail(f"{path}[{index}]: must be a string, got {go_kind(item)}; quote it")
        return json_round_trip(value)  # type: ignore[no-any-return]
    if value is not None:
        raise _fail(f"{path}: must be a string or a list of strings, got {go_kind(value)}")
    return []


def env_list(env: GoValue, path: str) -> list[GoValue]:
    """``autoroll.jobs.envList``: sorted ``{name, value}`` / ``{name, valueFrom}`` entries.

    Keep in sync with ``_jobs.tpl`` autoroll.jobs.envList.
    """
    env_map = go_default(env, {})
    out: list[GoValue] = []
    if not isinstance(env_map, dict):
        return out
    for name in sorted(env_map, key=lambda k: k.encode()):
        value = env_map[name]
        if isinstance(value, dict):
            value_from = value.get("valueFrom")
            if not ("valueFrom" in value and len(value) == 1 and isinstance(value_from, dict)):
                raise _fail(
                    f"{path}.{name}: a map value must hold only valueFrom (a map), e.g. "
                    "{valueFrom: {secretKeyRef: {name: s, key: k}}}"
                )
            out.append({"name": name, "valueFrom": clone(value_from)})
        else:
            out.append({"name": name, "value": scalar_string(value)})
    return json_round_trip(out)  # type: ignore[no-any-return]


def image_ref(image: GoValue, path: str) -> str:
    """``autoroll.jobs.imageRef``: ``repo:tag``, ``repo@sha256:…`` or ``repo``.

    Keep in sync with ``_jobs.tpl`` autoroll.jobs.imageRef.
    """
    img = go_default(image, {})
    repo = go_get(img, "repository") if isinstance(img, dict) else ""
    if not (isinstance(repo, str) and repo):
        raise _fail(
            f"{path}.image.repository: is required (a non-empty string); set it on "
            "jobDefaults, the group, the job or the task"
        )
    tag = go_get(img, "tag") if isinstance(img, dict) else ""
    if not isinstance(tag, str):
        raise _unmirrorable_tag(path, tag)
    if not tag:
        return repo
    if tag.startswith("sha256:"):
        return f"{repo}@{tag}"
    return f"{repo}:{tag}"


def _unmirrorable_tag(path: str, tag: GoValue) -> RenderError:
    # Sprig toString of a non-string tag uses fmt %v; the schema forbids it anyway.
    return RenderError(
        f"{path}.image.tag: must be a string, got {go_kind(tag)}",
        fix='quote the tag, e.g. tag: "1.0"',
    )


def container(
    *,
    name: str,
    image: GoValue,
    command: GoValue,
    args: GoValue,
    env: GoValue,
    shared: GoMap,
    path: str,
) -> GoMap:
    """``autoroll.jobs.container``: one container (main or a task) of the pod.

    Keep in sync with ``_jobs.tpl`` autoroll.jobs.container.
    """
    out: GoMap = {"name": name, "image": image_ref(image, path)}
    image_map = image if isinstance(image, dict) else {}
    set_if_set(out, "imagePullPolicy", go_get(image_map, "pullPolicy"))
    set_if_set(out, "command", argv(command, f"{path}.command"))
    set_if_set(out, "args", argv(args, f"{path}.args"))
    set_if_set(out, "env", env_list(env, f"{path}.env"))
    env_from: list[GoValue] = []
    config_maps = go_default(go_get(shared, "envConfigMaps"), [])
    secrets = go_default(go_get(shared, "envSecrets"), [])
    for config_map in config_maps if isinstance(config_maps, list) else []:
        env_from.append({"configMapRef": {"name": config_map}})
    for secret in secrets if isinstance(secrets, list) else []:
        env_from.append({"secretRef": {"name": secret}})
    set_if_set(out, "envFrom", env_from)
    for key in ("volumeMounts", "resources", "securityContext"):
        set_if_set(out, key, go_get(shared, key))
    return json_round_trip(out)  # type: ignore[no-any-return]


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


# ---------------------------------------------------------------------------------------------
# The guard


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


# ---------------------------------------------------------------------------------------------
# Characters Helm cannot write

UNWRITABLE = re.compile("[\x7f-\x9f\ufffe\uffff]|(?s:[\u2028\u2029].*\n|\n.*[\u2028\u2029])")
"""``autoroll.jobs.unwritablePattern``: DEL, the C1 controls, U+FFFE and U+FFFF, and
U+2028/U+2029 in a string that also holds a line break.

Helm's ``toYaml`` renders ``""`` for a value holding one of the first but U+0085 (its YAML
parser refuses them), folds U+0085 (a YAML 1.1 line break, left raw by Go's JSON) into a
space, and may write a multi-line string as a block, in which U+2028/U+2029 read back as line
breaks; so the chart fails instead of rendering an empty Job spec, one that is not the hashed
spec, or YAML that does not parse.
"""


def find_unwritable(value: GoValue, path: str) -> str:
    """``autoroll.jobs.findUnwritable``: path of the first key or string holding an
    :data:`UNWRITABLE` character (maps in sorted key order, lists in order), or ``""``.

    Keep in sync with ``_jobs.tpl`` autoroll.jobs.findUnwritable.
    """
    if isinstance(value, dict):
        for key in sorted(value, key=lambda k: k.encode()):
            child = f"{path}.{key}"
            if UNWRITABLE.search(key):
                return child
            found = find_unwritable(value[key], child)
            if found:
                return found
        return ""
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = find_unwritable(item, f"{path}[{index}]")
            if found:
                return found
        return ""
    if isinstance(value, str) and UNWRITABLE.search(value):
        return path
    return ""


def check_writable(values: Mapping[str, GoValue]) -> None:
    """``autoroll.jobs.checkWritable``: fail naming the path of a key or string under
    jobDefaults or jobGroups that Helm's ``toYaml`` cannot write.

    Keep the message in sync with ``_jobs.tpl`` autoroll.jobs.checkWritable.
    """
    path = find_unwritable(values.get("jobDefaults"), "jobDefaults") or find_unwritable(
        values.get("jobGroups"), "jobGroups"
    )
    if path:
        raise _fail(
            f"{path}: contains DEL (U+007F), a C1 control character (U+0080-U+009F), "
            "U+FFFE/U+FFFF, or U+2028/U+2029 together with a line break, which Helm cannot "
            "write into the rendered YAML as given (toYaml drops the value, folds U+0085 into "
            "a space or line break, or writes a multi-line string as a block where "
            "U+2028/U+2029 read as line breaks); remove that character (an escape such as "
            "\\x7f in a values file is the same character)"
        )
