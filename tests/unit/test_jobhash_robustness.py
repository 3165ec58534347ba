"""jobhash refuses what the chart refuses: characters Helm cannot write, duplicate names, and
names that are not DNS-1123 labels (mirrors of _jobs.tpl checkWritable and jobGroupPlan)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import yaml

from jobhash.cli import main
from jobhash.errors import RenderError
from jobhash.names import name_problem
from jobhash.plan import plan
from jobhash.writable import check_writable, find_unwritable

UNWRITABLE = "contains DEL (U+007F), a C1 control character"


def groups(**jobs: Any) -> dict[str, Any]:
    return {
        "jobGroups": {
            "db": {"image": {"repository": "my/migrator", "tag": "v1"}, "jobs": jobs},
        }
    }


@pytest.mark.parametrize(
    "char", ["\x7f", "\x80", "\x84", "\x85", "\x86", "\x9f", "\ufffe", "\uffff"]
)
def test_every_unwritable_character_is_found(char: str) -> None:
    assert find_unwritable({"a": ["ok", f"x{char}"]}, "root") == "root.a[1]"


@pytest.mark.parametrize("char", ["\x01", "\t", "\xa0", "\u2028", "\ufeff", "😀"])
def test_characters_toyaml_can_write_pass(char: str) -> None:
    assert find_unwritable({"a": [f"x{char}"], f"k{char}": "v"}, "root") == ""


@pytest.mark.parametrize("text", ["\u2028<\n", "a\nb\u2028c", "\u2029\n", "\n\u2028"])
def test_a_line_separator_beside_a_line_break_is_unwritable(text: str) -> None:
    # toYaml may write a multi-line string as a block, where U+2028/U+2029 are line breaks:
    # "\u2028<\n" made helm template fail with a YAML parse error (found by the parity property).
    assert find_unwritable({"a": ["x\u2028y", text]}, "root") == "root.a[1]"


def test_the_first_path_in_sorted_key_order_is_named_keys_included() -> None:
    value: dict[str, Any] = {"b": "\x7f", "a": {"z\x80": "ok", "y": 1}}
    assert find_unwritable(value, "jobGroups") == "jobGroups.a.z\x80"


def test_jobdefaults_is_searched_before_jobgroups() -> None:
    values = {"jobDefaults": {"env": {"A": "\x7f"}}, **groups(m={"args": ["\x7f"]})}
    with pytest.raises(RenderError) as caught:
        check_writable(values)
    assert caught.value.message.startswith(f"jobDefaults.env.A: {UNWRITABLE}")
    assert caught.value.fix


def test_plan_refuses_a_disabled_entry_holding_del_too() -> None:
    values = groups(m={"enabled": False, "podAnnotations": {"a": "\x7f"}})
    with pytest.raises(RenderError, match=r"jobGroups\.db\.jobs\.m\.podAnnotations\.a: "):
        plan(values, release="rel", chart_name="autoroll")


def test_cli_names_exits_1_naming_file_path_and_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values = {"controller": {"enabled": False}, **groups(m={"podAnnotations": {"a": "x\x7f"}})}
    path = tmp_path / "v.yaml"
    path.write_text(yaml.safe_dump(values), encoding="utf-8")
    code = main(["names", "--release", "rel", "-f", str(path)], io.StringIO())
    err = capsys.readouterr().err
    assert code == 1
    assert f"{path}: jobGroups.db.jobs.m.podAnnotations.a: {UNWRITABLE}" in err
    assert "fix: " in err
    assert "Traceback" not in err


def test_two_unhashed_groups_with_the_same_first_8_characters_fail_naming_both() -> None:
    job = {"image": {"repository": "r"}, "hashSuffix": False}
    values: dict[str, Any] = {
        "jobGroups": {"database1": {"jobs": {"m": job}}, "database2": {"jobs": {"m": job}}}
    }
    with pytest.raises(RenderError) as caught:
        plan(values, release="rel", chart_name="autoroll")
    assert caught.value.message.startswith(
        'jobGroups.database2.jobs.m: its Job name "rel-autoroll-database-m" is also'
    )
    assert "is also the name of jobGroups.database1.jobs.m" in caught.value.message
    assert "rename one of the two groups" in caught.value.fix


def test_hashed_groups_with_the_same_first_8_characters_get_different_names() -> None:
    """The whole group key is a pod label, so it is in the hash input."""
    job = {"image": {"repository": "r"}}
    values: dict[str, Any] = {
        "jobGroups": {"database1": {"jobs": {"m": job}}, "database2": {"jobs": {"m": job}}}
    }
    first, second = plan(values, release="rel", chart_name="autoroll")
    assert first.name.startswith("rel-autoroll-database-m-")
    assert second.name.startswith("rel-autoroll-database-m-")
    assert first.name != second.name


def test_group_and_job_keys_that_join_to_the_same_name_fail() -> None:
    job = {"image": {"repository": "r"}, "hashSuffix": False}
    values: dict[str, Any] = {
        "jobGroups": {"ab": {"jobs": {"c-d": job}}, "ab-c": {"jobs": {"d": job}}}
    }
    with pytest.raises(RenderError, match=r"is also the name of jobGroups\.ab\.jobs\.c-d"):
        plan(values, release="rel", chart_name="autoroll")


def test_same_prefix_with_different_hashes_or_kinds_is_fine() -> None:
    image = {"repository": "r"}
    values: dict[str, Any] = {
        "jobGroups": {
            "database1": {"hashSuffix": False, "jobs": {"m": {"image": image, "args": "1"}}},
            "database2": {"jobs": {"m": {"image": image, "args": "2"}}},
            "database3": {
                "hashSuffix": False,
                "jobs": {"m": {"image": image, "args": "1", "schedule": "@daily"}},
            },
        }
    }
    names = [item.name for item in plan(values, release="rel", chart_name="autoroll")]
    assert len(set(names)) == 2 and len(names) == 3  # a Job and a CronJob may share a name


@pytest.mark.parametrize(
    ("release", "kind", "expected"),
    [
        ("my.app", "Job", "my-app-autoroll-db-m-"),
        ("a.b.c", "CronJob", "a-b-c-autoroll-db-m-"),
        ("my.autoroll", "Job", "my-autoroll-db-m-"),  # contains the chart name: release alone
    ],
)
def test_dots_of_a_release_name_become_dashes_in_job_names(
    release: str, kind: str, expected: str
) -> None:
    job: dict[str, Any] = {"image": {"repository": "r"}}
    if kind == "CronJob":
        job["schedule"] = "@daily"
    (item,) = plan(groups(m=job), release=release, chart_name="autoroll")
    assert item.kind == kind
    assert item.name.startswith(expected)
    assert name_problem(item.name, kind) is None


def test_a_dot_cut_at_the_budget_edge_is_trimmed_like_a_dash() -> None:
    # 52-character release; the budget for "-db-m-<sha8>" is 63 - 14 = 49 bytes of fullname.
    release = "a" * 48 + ".bcd"
    (item,) = plan(groups(m={"image": {"repository": "r"}}), release=release, chart_name="x")
    assert item.name == "a" * 48 + "-db-m-" + item.sha8
