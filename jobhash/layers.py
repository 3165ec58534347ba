"""Step 1, the effective values of an entry: ``autoroll.jobGroupValues`` and the layer helpers.

Layer 0 (``autoroll.jobs.builtinDefaults``), then ``jobDefaults``, the group and the job, each
applied by ``autoroll.jobs.applyLayer`` (``mergeInto``, ``mergeEnv``, the name lists). One
function per ``define`` in ``charts/autoroll/templates/_jobs.tpl``, named after it.
"""

from __future__ import annotations

from collections.abc import Mapping

from jobhash.gojson import GoValue, clone
from jobhash.gotemplate import GoMap, _fail, go_default, go_get, go_kind, json_round_trip


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
