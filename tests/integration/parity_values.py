"""Generated chart values for the parity examples (``test_parity.py``): tricky text, numbers
and raw YAML 1.1 scalars, job settings, job groups with their jobs, later ``-f`` files that
delete or deep-merge, and anchors shared between groups. Kept apart from the test so it reads as
the comparison of the two sides alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from tests.integration.parity_yaml import MERGE, Alias, Anchored, Raw

ROOT = Path(__file__).resolve().parents[2]
CHART_DIR = ROOT / "charts" / "autoroll"


# ---------------------------------------------------------------------------------------------
# Strategies

TRICKY = "<>&\u2028\u2029\x01\x1f\b\f\t\n\r\x7f\x85éß日本😀🙂\"\\'#:,{}[]-. $"
text = st.text(
    alphabet=st.one_of(
        st.sampled_from(TRICKY),
        st.characters(min_codepoint=0x20, max_codepoint=0x7E),
        st.characters(min_codepoint=0xA0, max_codepoint=0x2FFFF, exclude_categories=["Cs"]),
    ),
    max_size=12,
)
RAW_SCALARS = [
    "y", "Y", "yes", "n", "NO", "on", "Off", "true", "False", "~", "null",
    "0o17", "0x1F", "017", "08", "0b101", "1e3", "1E3", ".5", "-.5", "1.", "1_000",
    "2001-12-14", "2001-12-14 21:59:43.10", "12:30", "1e400", "-0", "-0.0", "+5",
    "1e21", "1e-7", "9223372036854775807", "123456789012345678901234", "tRue", "abc",
]  # fmt: skip
numbers = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.sampled_from([1e21, 1e-7, -0.0, 0.1, 1.5, 1e20, 100000000.0, 1e300, 5e-324, 1e-6]),
    st.floats(allow_nan=False, allow_infinity=False),
)
env_scalar = st.one_of(text, numbers, st.booleans(), st.sampled_from(RAW_SCALARS).map(Raw))
any_scalar = st.one_of(text, numbers, st.booleans(), st.sampled_from(RAW_SCALARS).map(Raw))
dns_label = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,14}[a-z0-9])?\Z")
long_label = st.from_regex(r"\A[a-z]([-a-z0-9]{20,40}[a-z0-9])\Z")
key_name = st.one_of(dns_label, long_label)
env_name = st.from_regex(r"\A[-._a-zA-Z][-._a-zA-Z0-9]{0,10}\Z")
string_map = st.dictionaries(st.from_regex(r"\A[a-z][-a-z0-9./]{0,12}\Z"), text, max_size=3)
nested: st.SearchStrategy[Any] = st.recursive(
    any_scalar,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.from_regex(r"\A[a-zA-Z][a-zA-Z0-9]{0,8}\Z"), children, max_size=3),
    ),
    max_leaves=6,
)
object_map = st.dictionaries(st.from_regex(r"\A[a-zA-Z][a-zA-Z0-9]{0,8}\Z"), nested, max_size=3)
object_list = st.lists(object_map, max_size=2)
argv = st.one_of(text, st.lists(text, max_size=3))
image = st.fixed_dictionaries(
    {},
    optional={
        "repository": st.one_of(st.just("my/migrator"), text.filter(bool)),
        "tag": st.one_of(
            st.sampled_from(["v1", "v2", "sha256:" + "a" * 64, "dev@sha256:" + "b" * 64, ""]),
            text,
            st.sampled_from(["2001-12-14", "1e3", "y"]).map(Raw),
        ),
        "pullPolicy": st.sampled_from(["", "Always", "IfNotPresent", "Never"]),
    },
)
# Unquoted keys that YAML 1.1 resolves to bools, numbers or null before Helm stringifies them.
RAW_KEYS = ["y", "on", "No", ".inf", "-.inf", "1e3", "0x1F", "12", "~", "2001-12-14"]
env = st.dictionaries(
    st.one_of(env_name, st.sampled_from(RAW_KEYS).map(Raw)),
    st.one_of(
        env_scalar,
        st.fixed_dictionaries({"valueFrom": st.just({"secretKeyRef": {"name": "s", "key": "k"}})}),
    ),
    max_size=4,
)
delete_policy = st.one_of(
    st.sampled_from(["BeforeHookCreation", "HookSucceeded", "HookFailed, HookSucceeded", ""]),
    st.lists(st.sampled_from(["BeforeHookCreation", "HookSucceeded", " HookFailed "]), max_size=2),
)
hooks = st.fixed_dictionaries(
    {},
    optional={
        "argocd": st.fixed_dictionaries(
            {},
            optional={
                "hook": st.sampled_from(["PreSync", "Sync"]),
                "deletePolicy": delete_policy,
                "syncWave": st.one_of(st.integers(-5, 5), st.sampled_from(["1", "-2"])),
            },
        ),
        "helm": st.fixed_dictionaries(
            {},
            optional={
                "hook": st.sampled_from(["pre-install,pre-upgrade"]),
                "deletePolicy": st.sampled_from(
                    ["before-hook-creation", "hook-succeeded", "hook-failed,hook-succeeded"]
                ),
                "weight": st.integers(-5, 5),
            },
        ),
    },
)
# The schema's message-only alternative for an imagePullSecrets entry: the schema accepts it, so
# the chart's own check (autoroll.jobs.checkPullSecrets) refuses it, and jobhash must too.
PULL_SECRETS_MESSAGE = json.loads((CHART_DIR / "values.schema.json").read_text(encoding="utf-8"))[
    "definitions"
]["imagePullSecrets"]["items"]["anyOf"][1]["const"]
secret_name = st.sampled_from(["regcred", "other-registry", "a.b", "r1"])


@st.composite
def pull_secret(draw: st.DrawFn) -> Any:
    """Mostly a well-formed ``{name: ...}``; now and then a shape the schema or chart refuses."""
    roll = draw(st.integers(0, 19))
    if roll == 0:
        return draw(st.sampled_from(["regcred", PULL_SECRETS_MESSAGE]))
    if roll == 1:
        return {"name": draw(text)}
    if roll == 2:
        return {"name": draw(secret_name), "namespace": "x"}
    return {"name": draw(secret_name)}


task = st.fixed_dictionaries(
    {"name": dns_label},
    optional={"image": image, "command": argv, "args": argv, "env": env},
)
settings_fields: dict[str, st.SearchStrategy[Any]] = {
    "enabled": st.booleans(),
    "image": image,
    "command": argv,
    "args": argv,
    "tasks": st.lists(task, max_size=2),
    "env": env,
    "envSecrets": st.lists(st.sampled_from(["s1", "s2", "db"]), max_size=2),
    "envConfigMaps": st.lists(st.sampled_from(["c1", "c2"]), max_size=2),
    "volumes": object_list,
    "volumeMounts": object_list,
    "resources": object_map,
    "securityContext": object_map,
    "podSecurityContext": object_map,
    "nodeSelector": string_map,
    "affinity": object_map,
    "tolerations": object_list,
    "topologySpreadConstraints": object_list,
    "serviceAccountName": text,
    "imagePullSecrets": st.lists(pull_secret(), max_size=2),
    "restartPolicy": st.sampled_from(["Never", "OnFailure"]),
    "backoffLimit": st.integers(0, 10),
    "activeDeadlineSeconds": st.sampled_from([1, 600, 10**15]),
    "ttlSecondsAfterFinished": st.integers(0, 3600),
    "podAnnotations": string_map,
    "metadataAnnotations": string_map,
    "hashSuffix": st.booleans(),
    "hashIncludePodAnnotations": st.booleans(),
    "hooks": hooks,
    "schedule": st.sampled_from(["", "30 3 * * *", "@daily"]),
    "timeZone": st.just("Etc/UTC"),
    "concurrencyPolicy": st.sampled_from(["Allow", "Forbid", "Replace"]),
    "suspend": st.booleans(),
}


@st.composite
def job_settings(draw: st.DrawFn, fields: int) -> dict[str, Any]:
    chosen = draw(st.lists(st.sampled_from(sorted(settings_fields)), max_size=fields))
    return {name: draw(settings_fields[name]) for name in chosen}


@st.composite
def groups(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for group in draw(st.lists(key_name, min_size=1, max_size=4, unique=True)):
        settings_ = draw(job_settings(3))
        # Most groups get an image so that most entries render.
        if draw(st.integers(0, 9)) < 8:
            settings_["image"] = {"repository": "my/migrator", "tag": draw(st.sampled_from(
                ["v1", "v2", "sha256:" + "c" * 64]))}  # fmt: skip
        jobs = draw(st.lists(key_name, min_size=1, max_size=4, unique=True))
        settings_["jobs"] = {job: draw(job_settings(4)) for job in jobs}
        out[group] = settings_
    return out


def share_anchors(draw: st.DrawFn, jobgroups: dict[str, Any]) -> None:
    """Anchor the first group's image and reuse it: as an alias and through a merge key."""
    names = list(jobgroups)
    first = jobgroups[names[0]]
    if "image" not in first:
        return
    first["image"] = Anchored("img", first["image"])
    for other in names[1:]:
        if draw(st.booleans()):
            jobgroups[other]["image"] = Alias("img")
        else:
            jobgroups[other]["image"] = {MERGE: Alias("img"), "tag": "merged"}


# What a later -f file may do: delete chart defaults with null, deep-merge into groups.
DEFAULT_KEYS = ["image", "env", "restartPolicy", "hashSuffix", "command", "hooks", "tasks",
                "imagePullSecrets"]  # fmt: skip


@st.composite
def extra_file(draw: st.DrawFn, jobgroups: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    choice = draw(st.integers(0, 4))
    if choice == 4:
        # top-level nulls delete the chart's defaults entirely
        out = {key: None for key in draw(st.lists(st.sampled_from(["jobDefaults", "jobGroups"])))}
    elif choice == 0:
        out["jobDefaults"] = {key: None for key in draw(st.lists(st.sampled_from(DEFAULT_KEYS)))}
    elif choice == 1:
        out["jobDefaults"] = draw(job_settings(2))
    else:
        group = draw(st.sampled_from(sorted(jobgroups)))
        job = draw(st.sampled_from(sorted(jobgroups[group]["jobs"])))
        out["jobGroups"] = {group: {"jobs": {job: draw(job_settings(2))}}}
        if choice == 3:
            out["jobGroups"][group]["image"] = draw(image)
    return out
