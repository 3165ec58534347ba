"""jobhash.diff says which entries re-run, are renamed, new or gone, and which fields changed;
jobhash.cli exits 0/1/2 as documented (run in-process against the source chart)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from jobhash.cli import main
from jobhash.diff import Outcome, compare, describe, value_changes
from jobhash.gojson import GoValue
from jobhash.plan import PlanItem

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "jobs-values.yaml")


def item(
    job: str = "migrate", *, name: str = "", hash_hex: str = "a" * 64, **values: GoValue
) -> PlanItem:
    base: dict[str, GoValue] = {"hashSuffix": True, "hashIncludePodAnnotations": True}
    base.update(values)
    return PlanItem("db", job, "Job", name or f"demo-db-{job}-{hash_hex[:8]}", hash_hex, "{}", base)


def test_value_changes_lists_leaf_paths() -> None:
    before: GoValue = {"image": {"tag": "v1"}, "args": ["a"], "env": {"X": 1.0}}
    after: GoValue = {"image": {"tag": "v2"}, "args": ["a", "b"], "env": {}}
    assert value_changes(before, after) == [
        ("args", '["a"]', '["a","b"]'),
        ("env.X", "1", "(unset)"),
        ("image.tag", "v1", "v2"),
    ]


def test_a_hash_change_is_a_rerun_with_hashed_and_unhashed_fields() -> None:
    old = item(image={"tag": "v1"}, metadataAnnotations={"a": "1"})
    new = item(hash_hex="b" * 64, image={"tag": "v2"}, metadataAnnotations={"a": "2"})
    (change,) = compare([old], [new])
    assert change.outcome is Outcome.RERUN
    assert [(f.path, f.hashed) for f in change.fields] == [
        ("image.tag", True),
        ("metadataAnnotations.a", False),
    ]
    text = describe(change)
    assert text.startswith(
        "db/migrate: image.tag v1 → v2, new name demo-db-migrate-bbbbbbbb "
        "(was demo-db-migrate-aaaaaaaa) — runs again"
    )
    assert "not hashed: metadataAnnotations.a 1 → 2" in text


def test_pod_annotations_count_as_hashed_only_when_included() -> None:
    old = item(podAnnotations={"a": "1"}, hashIncludePodAnnotations=False)
    new = item(podAnnotations={"a": "2"}, hashIncludePodAnnotations=False)
    (change,) = compare([old], [new])
    assert change.outcome is Outcome.UNCHANGED
    assert change.fields[0].hashed is False


def test_renamed_added_removed() -> None:
    renamed = compare([item(hashSuffix=True)], [item(name="demo-db-migrate", hashSuffix=False)])
    assert renamed[0].outcome is Outcome.RENAMED
    assert "hashSuffix true → false" in describe(renamed[0])
    changes = compare([item("old")], [item("new")])
    assert [(c.job, c.outcome) for c in changes] == [
        ("new", Outcome.ADDED),
        ("old", Outcome.REMOVED),
    ]
    assert describe(changes[0]) == "db/new: new Job, runs as demo-db-new-aaaaaaaa"


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(argv), out), out.getvalue()


def test_cli_names_json_has_the_stable_keys() -> None:
    code, out = run("names", "--release", "demo", "-f", EXAMPLE, "-o", "json")
    assert code == 0
    rows = json.loads(out)
    assert [r["name"] for r in rows] == [
        "demo-autoroll-db-migrate-b2147093",
        rows[1]["name"],
    ]
    assert set(rows[0]) == {"group", "job", "kind", "name", "hash", "sha8"}


def test_cli_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("names", "--release", "demo", "-f", EXAMPLE)[0] == 0
    assert run("check", "--release", "demo", "-f", EXAMPLE, "--set", "jobGroups.X.a=1")[0] == 1
    assert run("names", "--release", "BAD", "-f", EXAMPLE)[0] == 2
    assert run("names")[0] == 2
    assert run()[0] == 2
    assert "Traceback" not in capsys.readouterr().err


def test_cli_diff_json_reports_outcomes() -> None:
    code, out = run(
        "diff", "--release", "demo", "-f", EXAMPLE, "--to-set", "jobGroups.db.image.tag=v2",
        "-o", "json",
    )  # fmt: skip
    assert code == 0
    rows = {row["job"]: row for row in json.loads(out)}
    assert rows["migrate"]["outcome"] == "re-runs"
    assert rows["migrate"]["fields"] == [
        {"path": "image.tag", "before": "v1", "after": "v2", "hashed": True}
    ]


def test_cli_names_and_check_fail_on_two_entries_with_the_same_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values = tmp_path / "dup.yaml"
    values.write_text(
        "controller: {enabled: false}\njobGroups:\n"
        "  database-a: {image: {repository: r}, hashSuffix: false, jobs: {migrate: {}}}\n"
        "  database-b: {image: {repository: r}, hashSuffix: false, jobs: {migrate: {}}}\n",
        encoding="utf-8",
    )
    for command in ("names", "check"):  # the chart's plan fails, so both commands do
        assert run(command, "--release", "demo", "-f", str(values))[0] == 1
        err = capsys.readouterr().err
        assert (
            f"{values}: jobGroups.database-b.jobs.migrate: its Job name "
            '"demo-autoroll-database-migrate" is also'
        ) in err
        assert "is also the name of jobGroups.database-a.jobs.migrate" in err
        assert "first 8 characters differ" in err


def test_cli_names_the_file_behind_a_chart_fail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values = tmp_path / "tasks.yaml"
    values.write_text(
        "controller: {enabled: false}\njobGroups:\n  db:\n    image: {repository: r}\n"
        "    jobs:\n      m: {tasks: [{name: a}, {name: a}]}\n",
        encoding="utf-8",
    )
    assert run("names", "--release", "demo", "-f", str(values))[0] == 1
    err = capsys.readouterr().err
    assert f'{values}: jobGroups.db.jobs.m.tasks[1].name: "a" is already used' in err
    assert "fix: give every task of the job its own name" in err
