"""Step 2, one container of the pod: ``autoroll.jobs.container`` and the helpers it calls.

``isSet``/``setIfSet`` (which keys the spec holds), ``scalarString``, ``argv``, ``envList`` and
``imageRef``: one function per ``define`` in ``charts/autoroll/templates/_jobs.tpl``, named
after it. The main container and every task's init container are built here;
:mod:`jobhash.spec` assembles the pod and the Job spec around them.
"""

from __future__ import annotations

from jobhash.errors import RenderError
from jobhash.gojson import GoValue, clone, marshal
from jobhash.gotemplate import (
    GoMap,
    _fail,
    _is_number,
    go_default,
    go_empty,
    go_get,
    go_kind,
    json_round_trip,
)


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
