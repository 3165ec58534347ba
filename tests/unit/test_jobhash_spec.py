"""jobhash.spec mirrors _jobs.tpl step by step (values -> spec -> hash); the guards are in
``test_jobhash_guards.py``."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import pytest

from jobhash.container import image_ref, scalar_string
from jobhash.errors import RenderError
from jobhash.gojson import GoValue, marshal
from jobhash.gotemplate import go_default, go_empty, go_get, go_trim_space, json_round_trip
from jobhash.layers import apply_layer, job_group_values, merge_into
from jobhash.spec import (
    check_pull_secrets,
    job_group_hash,
    job_group_job_spec,
    job_group_pod_labels,
    job_group_spec,
)

WORKED: dict[str, Any] = {
    "jobGroups": {
        "db": {
            "image": {"repository": "my/migrator", "tag": "v1"},
            "jobs": {"migrate": {"command": "./migrate.sh"}},
        }
    }
}
WORKED_JSON = (
    '{"template":{"metadata":{"labels":{"autoroll.aethnet.se/job":"migrate",'
    '"autoroll.aethnet.se/job-group":"db"}},"spec":{"containers":[{"command":["./migrate.sh"],'
    '"image":"my/migrator:v1","name":"main","securityContext":{"allowPrivilegeEscalation":false,'
    '"capabilities":{"drop":["ALL"]}}}],"restartPolicy":"Never","securityContext":'
    '{"runAsNonRoot":true,"seccompProfile":{"type":"RuntimeDefault"}}}}}'
)


#: The container half of the default ``restricted`` securityContext, as every container has it.
RESTRICTED = '"securityContext":{"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]}}'


def spec_of(values: dict[str, Any], group: str = "db", job: str = "migrate") -> str:
    return job_group_spec(job_group_values(values, group, job), group, job)


@pytest.mark.parametrize("value", [None, False, 0, 0.0, -0.0, "", [], {}])
def test_sprig_empty_values(value: GoValue) -> None:
    assert go_empty(value)
    assert go_default(value, "d") == "d"


@pytest.mark.parametrize("value", [True, 1, 0.5, "0", [0], {"a": None}])
def test_sprig_non_empty_values(value: GoValue) -> None:
    assert not go_empty(value)
    assert go_default(value, "d") == value


def test_sprig_get_returns_empty_string_for_a_missing_key() -> None:
    assert go_get({"a": None}, "a") is None
    assert go_get({}, "a") == ""


def test_trim_space_uses_go_whitespace() -> None:
    assert go_trim_space("\u00a0 x\u3000\n") == "x"
    assert go_trim_space("\x1cx\x1f") == "\x1cx\x1f"  # Python's strip() would remove these


def test_merge_into_lets_a_present_key_win_and_merges_maps() -> None:
    dst: dict[str, GoValue] = {"a": True, "b": 5.0, "m": {"x": 1.0, "y": 2.0}, "l": [1.0, 2.0]}
    merge_into(dst, {"a": False, "b": 0.0, "m": {"y": 3.0}, "l": [9.0], "s": ""}, "p")
    assert dst == {"a": False, "b": 0.0, "m": {"x": 1.0, "y": 3.0}, "l": [9.0], "s": ""}


def test_merge_into_rejects_null_with_the_path() -> None:
    with pytest.raises(RenderError, match=r"p\.m\.y: null is not allowed"):
        merge_into({}, {"m": {"y": None}}, "p")


def test_apply_layer_merges_env_by_name_and_unions_env_from() -> None:
    dst: dict[str, GoValue] = {"env": {"A": "1", "B": {"valueFrom": {"x": "y"}}}}
    dst["envSecrets"] = ["s1"]
    apply_layer(dst, {"env": {"B": "plain", "C": 3.0}, "envSecrets": ["s2", "s1", "s3"]}, "p")
    assert dst["env"] == {"A": "1", "B": "plain", "C": 3.0}
    assert dst["envSecrets"] == ["s1", "s2", "s3"]


def test_job_group_values_layers_and_turns_ints_into_floats() -> None:
    values: dict[str, Any] = {
        "jobDefaults": {"backoffLimit": 1, "env": {"A": "d", "B": "d"}, "hashSuffix": True},
        "jobGroups": {
            "g": {
                "env": {"B": "g"},
                "backoffLimit": 7,
                "jobs": {"j": {"env": {"C": 9}, "hashSuffix": False}},
            }
        },
    }
    effective = job_group_values(values, "g", "j")
    assert effective["env"] == {"A": "d", "B": "g", "C": 9.0}
    assert effective["backoffLimit"] == 7.0
    assert isinstance(effective["backoffLimit"], float)
    assert effective["hashSuffix"] is False
    assert effective["restartPolicy"] == "Never"  # built-in layer 0


def test_json_round_trip_matches_go_for_int64() -> None:
    assert json_round_trip({"a": [2**63 - 1, True, "x", -0.0]}) == {
        "a": [9.223372036854776e18, True, "x", -0.0]
    }


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("text", "text"),
        (True, "true"),
        (8080.0, "8080"),
        (100000000.0, "100000000"),
        (1e-7, "1e-7"),
        (1e21, "1e+21"),
        (1.5, "1.5"),
        (3, "3"),
    ],
)
def test_scalar_string_uses_go_json(value: GoValue, expected: str) -> None:
    assert scalar_string(value) == expected


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ({"repository": "r", "tag": "v1"}, "r:v1"),
        ({"repository": "r", "tag": ""}, "r"),
        ({"repository": "r"}, "r"),
        ({"repository": "r", "tag": "sha256:abc"}, "r@sha256:abc"),
        ({"repository": "r", "tag": "v1@sha256:abc"}, "r:v1@sha256:abc"),
    ],
)
def test_image_ref_forms(image: GoValue, expected: str) -> None:
    assert image_ref(image, "p") == expected


def test_image_ref_requires_a_repository() -> None:
    with pytest.raises(RenderError, match=r"p\.image\.repository: is required"):
        image_ref({"tag": "v1"}, "p")


def test_worked_example_spec_is_the_golden_json() -> None:
    assert spec_of(WORKED) == WORKED_JSON


def test_excluded_fields_do_not_change_the_spec() -> None:
    job = WORKED["jobGroups"]["db"]["jobs"]["migrate"]
    changed: dict[str, Any] = {
        "jobGroups": {
            "db": {
                "image": {"repository": "my/migrator", "tag": "v1"},
                "jobs": {
                    "migrate": {
                        **job,
                        "metadataAnnotations": {"a": "b"},
                        "hooks": {"argocd": {"hook": "Sync", "syncWave": 3}},
                        "schedule": "@daily",
                        "suspend": True,
                    }
                },
            }
        }
    }
    assert spec_of(changed) == WORKED_JSON


def test_pod_labels_are_the_group_and_job_keys_only() -> None:
    assert job_group_pod_labels("db", "migrate") == {
        "autoroll.aethnet.se/job-group": "db",
        "autoroll.aethnet.se/job": "migrate",
    }


def test_the_whole_group_key_enters_the_hash_though_only_8_characters_enter_the_name() -> None:
    job = {"image": {"repository": "r"}}
    values: dict[str, Any] = {
        "jobGroups": {"database1": {"jobs": {"m": job}}, "database2": {"jobs": {"m": job}}}
    }
    first, second = spec_of(values, "database1", "m"), spec_of(values, "database2", "m")
    assert first.replace("database1", "database2") == second
    assert job_group_hash(first) != job_group_hash(second)


def test_the_rendered_job_spec_is_the_hashed_spec_plus_the_spec_hash_label() -> None:
    values = job_group_values(WORKED, "db", "migrate")
    spec = job_group_spec(values, "db", "migrate")
    rendered = job_group_job_spec(
        spec_json=spec, hash_hex="f" * 64, values=values, group="db", job="migrate"
    )
    assert rendered["template"]["metadata"] == {
        "labels": {
            "autoroll.aethnet.se/job-group": "db",
            "autoroll.aethnet.se/job": "migrate",
            "autoroll.aethnet.se/spec-hash": "ffffffff",
        }
    }
    del rendered["template"]["metadata"]["labels"]["autoroll.aethnet.se/spec-hash"]
    assert marshal(rendered) == spec


def test_the_rendered_job_spec_carries_opted_out_pod_annotations() -> None:
    values = job_group_values(WORKED, "db", "migrate")
    values["podAnnotations"] = {"a": "1"}
    for included, hashed in ((True, True), (False, False)):
        values["hashIncludePodAnnotations"] = included
        spec = job_group_spec(values, "db", "migrate")
        assert ('"annotations"' in spec) is hashed
        rendered = job_group_job_spec(
            spec_json=spec, hash_hex="0" * 64, values=values, group="db", job="migrate"
        )
        assert rendered["template"]["metadata"]["annotations"] == {"a": "1"}


def test_pod_annotations_enter_the_hash_unless_opted_out() -> None:
    values: dict[str, Any] = {
        "jobGroups": {"db": {"image": {"repository": "r"}, "jobs": {"m": {}}}},
    }
    values["jobGroups"]["db"]["podAnnotations"] = {"a": "<b>"}
    assert '"metadata":{"annotations":{"a":"\\u003cb\\u003e"},"labels":' in spec_of(values, job="m")
    values["jobGroups"]["db"]["hashIncludePodAnnotations"] = False
    assert "annotations" not in spec_of(values, job="m")


def test_tasks_become_init_containers_with_merged_image_and_env() -> None:
    values: dict[str, Any] = {
        "jobGroups": {
            "db": {
                "image": {"repository": "r", "tag": "v1", "pullPolicy": "Always"},
                "env": {"A": "1", "B": "2"},
                "jobs": {
                    "m": {
                        "tasks": [
                            {"name": "first", "image": {"tag": "v9"}, "env": {"B": "t"}},
                            {"name": "second", "command": ["x", "y"]},
                        ]
                    }
                },
            }
        }
    }
    spec = spec_of(values, job="m")
    assert (
        '"initContainers":[{"env":[{"name":"A","value":"1"},{"name":"B","value":"t"}],'
        '"image":"r:v9","imagePullPolicy":"Always","name":"first",' + RESTRICTED + "},"
        '{"command":["x","y"],"env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],'
        '"image":"r:v1","imagePullPolicy":"Always","name":"second",' + RESTRICTED + "}]"
    ) in spec


def with_pull_secrets(**layers: Any) -> dict[str, Any]:
    """The worked example with imagePullSecrets on the layers named (defaults, group, job)."""
    values: dict[str, Any] = {
        "jobGroups": {
            "db": {
                "image": {"repository": "my/migrator", "tag": "v1"},
                "jobs": {"migrate": {"command": "./migrate.sh"}},
            }
        }
    }
    if "defaults" in layers:
        values["jobDefaults"] = {"imagePullSecrets": layers["defaults"]}
    if "group" in layers:
        values["jobGroups"]["db"]["imagePullSecrets"] = layers["group"]
    if "job" in layers:
        values["jobGroups"]["db"]["jobs"]["migrate"]["imagePullSecrets"] = layers["job"]
    return values


def test_empty_image_pull_secrets_leave_the_worked_example_unchanged() -> None:
    assert spec_of(with_pull_secrets(defaults=[])) == WORKED_JSON
    assert spec_of(with_pull_secrets(defaults=[{"name": "r"}], job=[])) == WORKED_JSON


def test_image_pull_secrets_are_in_the_pod_spec_and_the_most_specific_list_wins() -> None:
    spec = spec_of(with_pull_secrets(defaults=[{"name": "regcred"}]))
    assert '"imagePullSecrets":[{"name":"regcred"}],"restartPolicy"' in spec
    spec = spec_of(
        with_pull_secrets(
            defaults=[{"name": "regcred"}],
            group=[{"name": "g"}],
            job=[{"name": "b"}, {"name": "a"}],
        )
    )
    assert '"imagePullSecrets":[{"name":"b"},{"name":"a"}],' in spec


#: The values path the chart's message starts with, as a regular expression.
PULL_PATH = r"jobGroups\.db\.jobs\.m\.imagePullSecrets"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("regcred", r": must be a list of \{name: <Secret name>\}, e\.g\. .*, got string"),
        (True, r": must be a list of .*, got bool"),
        (["regcred"], r"\[0\]: must be a map holding only name, .*, got string"),
        ([{"name": "a"}, {"secret": "b"}], r"\[1\]: .*, got map"),
        ([{"name": "a", "namespace": "b"}], r"\[0\]: .*, got map"),
        ([{"name": ""}], r"\[0\]: .*, got map"),
        ([{"name": 3.0}], r"\[0\]: .*, got map"),
        ([None], r"\[0\]: .*, got invalid"),
    ],
)
def test_image_pull_secrets_of_another_shape_fail_naming_the_entry(
    value: GoValue, message: str
) -> None:
    with pytest.raises(RenderError) as caught:
        check_pull_secrets(value, "jobGroups.db.jobs.m.imagePullSecrets")
    assert re.fullmatch(PULL_PATH + message, caught.value.message)
    assert caught.value.fix.startswith("write each entry as {name: <Secret name>}")


@pytest.mark.parametrize("value", ["", [], {}, [{"name": "regcred"}, {"name": "a.b"}]])
def test_image_pull_secrets_unset_or_well_formed_pass(value: GoValue) -> None:
    check_pull_secrets(value, "p")


def test_duplicate_task_names_fail_like_the_chart() -> None:
    values: dict[str, Any] = {
        "jobGroups": {
            "db": {
                "image": {"repository": "r"},
                "jobs": {"m": {"tasks": [{"name": "a"}, {"name": "a"}]}},
            }
        }
    }
    with pytest.raises(RenderError, match=r'tasks\[1\]\.name: "a" is already used'):
        spec_of(values, job="m")


def test_hash_is_sha256_of_the_spec_and_refuses_non_json() -> None:
    assert job_group_hash(WORKED_JSON) == hashlib.sha256(WORKED_JSON.encode()).hexdigest()
    with pytest.raises(RenderError):
        job_group_hash("")
