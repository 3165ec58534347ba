"""Generated chart values for the Job-spec invariant (``test_job_spec_invariant.py``): a few
job groups and jobs, each with some hashed and some unhashed settings, with or without the
controller's required values."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

CONTROLLER_REQUIRED = {
    "forgejo": {"host": "forgejo.example", "user": "bot"},
    "image": {"repository": "forgejo.example/ops/autoroll"},
    "secret": {"forgejoToken": "token-not-secret", "webhookSecret": "w" * 20},
    # The NetworkPolicy is on by default and needs these addresses.
    "networkPolicy": {
        "registry": {"cidrs": ["192.0.2.10/32"]},
        "apiServer": {"cidrs": ["198.51.100.0/28"]},
    },
}

# --- base values: a few groups and jobs, hashed and unhashed settings -------------------------

word = st.from_regex(r"\A[a-z][a-z0-9]{0,6}\Z")
label_text = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?\Z")
hashed_fields: dict[str, st.SearchStrategy[Any]] = {
    "image": st.fixed_dictionaries(
        {"repository": st.sampled_from(["my/migrator", "reg.example:5000/t/tool"])},
        optional={"tag": st.sampled_from(["v1", "v2", "sha256:" + "a" * 64])},
    ),
    "command": st.one_of(st.just("./run.sh"), st.lists(word, min_size=1, max_size=2)),
    "args": st.lists(word, max_size=2),
    "env": st.dictionaries(
        st.from_regex(r"\A[A-Z][A-Z0-9_]{0,5}\Z"),
        st.one_of(word, st.integers(0, 10**6), st.booleans()),
        max_size=2,
    ),
    "envSecrets": st.lists(st.sampled_from(["s1", "s2"]), max_size=2, unique=True),
    "tasks": st.lists(
        st.fixed_dictionaries(
            {"name": st.sampled_from(["wait", "seed"])},
            optional={"command": st.lists(word, min_size=1, max_size=2)},
        ),
        max_size=1,
    ),
    "resources": st.just({"limits": {"memory": "64Mi"}}),
    "backoffLimit": st.integers(0, 3),
    "podAnnotations": st.dictionaries(st.sampled_from(["a.example/x", "b"]), word, max_size=2),
    "serviceAccountName": st.sampled_from(["", "migrator"]),
    "imagePullSecrets": st.lists(
        st.fixed_dictionaries({"name": st.sampled_from(["regcred", "other"])}), max_size=2
    ),
}
unhashed_fields: dict[str, st.SearchStrategy[Any]] = {
    "metadataAnnotations": st.dictionaries(st.sampled_from(["note", "owner"]), word, max_size=2),
    "hooks": st.just({"argocd": {"syncWave": -1}}),
}


@st.composite
def job_settings(draw: st.DrawFn, *, cron: bool) -> dict[str, Any]:
    chosen = draw(st.lists(st.sampled_from(sorted(hashed_fields)), max_size=3, unique=True))
    out = {name: draw(hashed_fields[name]) for name in chosen}
    for name in draw(st.lists(st.sampled_from(sorted(unhashed_fields)), max_size=1)):
        out[name] = draw(unhashed_fields[name])
    if cron:
        out["schedule"] = draw(st.sampled_from(["30 3 * * *", "@daily"]))
    return out


@st.composite
def base_values(draw: st.DrawFn) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if draw(st.booleans()):
        values.update(copy.deepcopy(CONTROLLER_REQUIRED))
    else:
        values["controller"] = {"enabled": False}
    if draw(st.integers(0, 2)) == 0:
        values["fullnameOverride"] = draw(label_text)
    groups: dict[str, Any] = {}
    for group in draw(st.lists(st.sampled_from(["db", "reporting", "reports", "ops"]),
                               min_size=1, max_size=3, unique=True)):  # fmt: skip
        settings_ = draw(job_settings(cron=False))
        settings_["image"] = {
            "repository": "my/migrator",
            "tag": draw(st.sampled_from(["v1", "v2"])),
        }
        jobs = draw(st.lists(st.sampled_from(["migrate", "seed", "vacuum"]), min_size=1,
                             max_size=3, unique=True))  # fmt: skip
        settings_["jobs"] = {job: draw(job_settings(cron=job == "vacuum")) for job in jobs}
        groups[group] = settings_
    values["jobGroups"] = groups
    return values
