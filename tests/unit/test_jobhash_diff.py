"""jobhash.diff says which entries re-run, are renamed, updated, new or gone, which fields
changed, and which Jobs keep their name while their pod template changes (refused by
Kubernetes); jobhash.cli exits 0/1/2/3 as documented (run in-process against the source chart)."""

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


SPEC = '{"template":{"metadata":{"labels":{}},"spec":{"containers":[]}}}'


def item(
    job: str = "migrate",
    *,
    name: str = "",
    hash_hex: str = "a" * 64,
    kind: str = "Job",
    spec: str = SPEC,
    **values: GoValue,
) -> PlanItem:
    base: dict[str, GoValue] = {"hashSuffix": True, "hashIncludePodAnnotations": True}
    base.update(values)
    return PlanItem("db", job, kind, name or f"demo-db-{job}-{hash_hex[:8]}", hash_hex, spec, base)


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
    assert change.fields[0].hashed is False


def test_same_name_same_rendered_spec_is_unchanged_whatever_is_not_rendered() -> None:
    (change,) = compare([item(metadataAnnotations={"a": "1"})], [item(metadataAnnotations={})])
    assert change.outcome is Outcome.UNCHANGED
    assert change.template == ()


def test_opted_out_pod_annotations_changed_under_the_same_name_are_refused() -> None:
    old = item(podAnnotations={"a": "1"}, hashIncludePodAnnotations=False)
    new = item(podAnnotations={"a": "2"}, hashIncludePodAnnotations=False)
    (change,) = compare([old], [new])
    assert change.outcome is Outcome.REFUSED
    assert [f.render() for f in change.template] == ["spec.template.metadata.annotations.a 1 → 2"]
    text = describe(change)
    assert text.startswith(
        "db/migrate: REFUSED — keeps the name demo-db-migrate-aaaaaaaa but its pod template "
        "changes: spec.template.metadata.annotations.a 1 → 2"
    )
    assert "Kubernetes will refuse this update" in text
    assert '"spec.template: field is immutable"' in text
    assert "delete the old Job first (kubectl delete job demo-db-migrate-aaaaaaaa" in text
    assert "hash the pod annotations (hashIncludePodAnnotations: true)" in text
    assert "hashSuffix: true" not in text


def test_an_unhashed_job_whose_spec_changes_is_refused_with_the_hashing_fixes() -> None:
    other = '{"template":{"metadata":{"labels":{}},"spec":{"containers":[{"name":"main"}]}}}'
    old = item(name="demo-db-migrate", hashSuffix=False)
    new = item(name="demo-db-migrate", hash_hex="b" * 64, spec=other, hashSuffix=False)
    (change,) = compare([old], [new])
    assert change.outcome is Outcome.REFUSED
    text = describe(change)
    assert "hash the spec (hashSuffix: true)" in text
    assert "BeforeHookCreation" in text and "before-hook-creation" in text
    assert "hashIncludePodAnnotations" not in text


@pytest.mark.parametrize(
    ("hooks", "outcome"),
    [
        ({"argocd": {"hook": "PreSync"}}, Outcome.RERUN),  # default policy: BeforeHookCreation
        ({"argocd": {"hook": "Sync", "deletePolicy": "BeforeHookCreation"}}, Outcome.RERUN),
        ({"argocd": {"hook": "Sync", "deletePolicy": "HookFailed"}}, Outcome.REFUSED),
        ({"argocd": {"deletePolicy": "BeforeHookCreation"}}, Outcome.REFUSED),  # no hook
        ({"helm": {"hook": "pre-upgrade"}}, Outcome.RERUN),
        ({"helm": {"hook": "pre-upgrade", "deletePolicy": "hook-failed"}}, Outcome.REFUSED),
        (
            {"helm": {"hook": "pre-upgrade", "deletePolicy": ["before-hook-creation"]}},
            Outcome.RERUN,
        ),
    ],
)
def test_a_hook_deleted_before_creation_reruns_under_its_name(
    hooks: GoValue, outcome: Outcome
) -> None:
    old = item(podAnnotations={"a": "1"}, hashIncludePodAnnotations=False, hooks=hooks)
    new = item(podAnnotations={"a": "2"}, hashIncludePodAnnotations=False, hooks=hooks)
    (change,) = compare([old], [new])
    assert change.outcome is outcome
    if outcome is Outcome.RERUN:
        assert "is deleted and created again" in describe(change)


def test_a_cronjob_whose_job_template_changes_under_its_name_is_updated() -> None:
    old = item(kind="CronJob", podAnnotations={"a": "1"}, hashIncludePodAnnotations=False)
    new = item(kind="CronJob", podAnnotations={"a": "2"}, hashIncludePodAnnotations=False)
    (change,) = compare([old], [new])
    assert change.outcome is Outcome.UPDATED
    assert "its job template changes in place" in describe(change)


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
        "demo-autoroll-db-migrate-946f9a6a",
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


def test_cli_diff_strict_exits_3_on_a_refused_job_and_says_why(
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ("diff", "--release", "demo", "-f", EXAMPLE)
    opt_out = ("--set", "jobGroups.db.hashIncludePodAnnotations=false")
    sides = ("--from-set-string", "jobGroups.db.podAnnotations.x=1",
             "--to-set-string", "jobGroups.db.podAnnotations.x=2")  # fmt: skip
    code, out = run(*base, *opt_out, *sides)
    assert code == 0  # without --strict the diff only reports it
    assert "db/migrate: REFUSED — keeps the name demo-autoroll-db-migrate-" in out
    assert "db/vacuum: CronJob" in out and "changes in place" in out
    capsys.readouterr()
    code, out = run(*base, *opt_out, *sides, "--strict")
    assert code == 3
    err = capsys.readouterr().err
    assert "--strict: 1 Job(s) keep their name but change their pod template (db/migrate)" in err
    code, out = run(*base, *opt_out, *sides, "--strict", "-o", "json")
    assert code == 3
    rows = {row["job"]: row for row in json.loads(out)}
    assert rows["migrate"]["outcome"] == "refused"
    assert rows["migrate"]["template"] == [
        {"path": "spec.template.metadata.annotations.x", "before": "1", "after": "2"}
    ]
    assert rows["vacuum"]["outcome"] == "updated"
    # Hashing the annotations: a new name, no refusal.
    assert run(*base, *sides, "--strict")[0] == 0


def test_cli_takes_every_value_flag_helm_takes(tmp_path: Path) -> None:
    tag = tmp_path / "tag.txt"
    tag.write_text("v7", encoding="utf-8")
    code, out = run(
        "names", "--release", "demo", "-f", EXAMPLE, "-o", "json",
        "--set-json", 'jobGroups.db.jobs.migrate.args=["--dry-run"]',
        "--set-file", f"jobGroups.db.image.tag={tag}",
        "--set-literal", "jobGroups.db.jobs.migrate.env.LIST=a,b",
    )  # fmt: skip
    assert code == 0
    names = [row["name"] for row in json.loads(out)]
    assert names[0] != "demo-autoroll-db-migrate-946f9a6a"
    code, spec = run(
        "spec", "--release", "demo", "-f", EXAMPLE, "db/migrate",
        "--set-json", 'jobGroups.db.jobs.migrate.args=["--dry-run"]',
        "--set-file", f"jobGroups.db.image.tag={tag}",
        "--set-literal", "jobGroups.db.jobs.migrate.env.LIST=a,b",
    )  # fmt: skip
    assert code == 0
    assert '"args":["--dry-run"]' in spec
    assert '"image":"my/migrator:v7"' in spec
    assert '{"name":"LIST","value":"a,b"}' in spec


@pytest.mark.parametrize(
    ("flag", "expression", "code", "message"),
    [
        ("--set-json", "jobGroups.db.image.tag=v2", 1,
         "--set-json jobGroups.db.image.tag=v2: failed parsing --set-json data: "),
        ("--set-json", "{not json}", 1, "--set-json {not json}: failed parsing --set-json data"),
        ("--set-literal", "jobGroups", 1,
         'failed parsing --set-literal data: key "jobGroups" has no value'),
        ("--set-file", "jobGroups.db.image.tag=/no/such/file", 2,
         "--set-file: cannot read '/no/such/file' (No such file or directory)"),
        ("--set-file", "jobGroups.db.image.tag=https://example.org/tag", 2,
         "jobhash reads only local files"),
    ],
)  # fmt: skip
def test_cli_value_flag_errors_name_the_flag(
    capsys: pytest.CaptureFixture[str], flag: str, expression: str, code: int, message: str
) -> None:
    assert run("names", "--release", "demo", "-f", EXAMPLE, flag, expression)[0] == code
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


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
