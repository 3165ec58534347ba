"""The jobhash command line against the real helm, and the wheel that ships the chart."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import require_tool

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "autoroll"
EXAMPLE = ROOT / "examples" / "jobs-values.yaml"
GOLDEN = json.loads((ROOT / "tests" / "golden" / "jobhash_vectors.json").read_text("utf-8"))


def jobhash(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jobhash", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
        check=False,
    )


def helm_names(*args: str) -> dict[str, str]:
    """kind/name of every Job and CronJob `helm template` renders, keyed by group/job."""
    helm = require_tool("helm")
    result = subprocess.run(
        [helm, "template", *args], capture_output=True, text=True, timeout=60, check=True
    )
    names = {}
    for document in result.stdout.split("\n---"):
        kind = re.search(r"^kind: (Job|CronJob)$", document, re.MULTILINE)
        if kind is None:
            continue
        name = re.search(r'^metadata:\n  name: "(\S+)"$', document, re.MULTILINE)  # quoted
        group = re.search(r'autoroll\.aethnet\.se/job-group: "(\S+)"', document)
        job = re.search(r'autoroll\.aethnet\.se/job: "(\S+)"', document)
        assert name and group and job
        names[f"{group.group(1)}/{job.group(1)}"] = f"{kind.group(1)} {name.group(1)}"
    return names


def test_names_on_the_worked_example_equal_helm_template() -> None:
    result = jobhash("names", "--release", "demo", "-f", str(EXAMPLE), "-o", "json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert {"group", "job", "kind", "name", "hash"} <= set(rows[0])
    ours = {f"{r['group']}/{r['job']}": f"{r['kind']} {r['name']}" for r in rows}
    assert ours == helm_names("demo", str(CHART), "-f", str(EXAMPLE))
    assert re.fullmatch(r"Job demo-autoroll-db-migrate-[0-9a-f]{8}", ours["db/migrate"])


def test_names_table_lists_every_entry() -> None:
    result = jobhash("names", "--release", "demo", "-f", str(EXAMPLE))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].split() == ["GROUP/JOB", "KIND", "NAME", "HASH"]
    assert "db/migrate" in result.stdout
    assert "db/vacuum" in result.stdout


def test_diff_on_a_tag_bump_names_the_field_and_both_names() -> None:
    bump = "jobGroups.db.image.tag=v2"
    before = helm_names("demo", str(CHART), "-f", str(EXAMPLE))["db/migrate"].split()[1]
    after = helm_names("demo", str(CHART), "-f", str(EXAMPLE), "--set", bump)["db/migrate"]
    result = jobhash("diff", "--release", "demo", "-f", str(EXAMPLE), "--to-set", bump)
    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if x.startswith("db/migrate:"))
    assert f"image.tag v1 → v2, new name {after.split()[1]} (was {before})" in line
    assert "runs again" in line


def test_diff_of_a_hook_change_reports_no_rerun(tmp_path: Path) -> None:
    other = tmp_path / "hook.yaml"
    other.write_text(
        "jobGroups:\n  db:\n    jobs:\n      migrate:\n        hooks:\n          argocd:\n"
        "            syncWave: 5\n        metadataAnnotations: {team: db}\n",
        encoding="utf-8",
    )
    result = jobhash("diff", "--release", "demo", "-f", str(EXAMPLE), "-b", str(other))
    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if x.startswith("db/migrate:"))
    assert "unchanged" in line
    assert "hooks.argocd.syncWave" in line
    assert "metadataAnnotations.team (unset) → db" in line


def test_spec_prints_the_hashed_json() -> None:
    vector = GOLDEN["vectors"][0]
    result = jobhash("spec", "--release", "demo", "-f", str(EXAMPLE), "db/migrate")
    assert result.returncode == 0, result.stderr
    assert result.stdout == vector["expected_json"] + "\n"


def test_check_passes_on_the_worked_example() -> None:
    result = jobhash("check", "--release", "demo", "-f", str(EXAMPLE))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok:")


def test_check_fails_on_a_schema_error_naming_source_key_and_fix() -> None:
    bad = "jobGroups.db.jobs.migrate.backoffLimit=x"
    result = jobhash("check", "--release", "demo", "-f", str(EXAMPLE), "--set-string", bad)
    assert result.returncode == 1
    assert f"--set-string {bad}: jobGroups.db.jobs.migrate.backoffLimit:" in result.stderr
    assert "fix:" in result.stderr
    assert "Traceback" not in result.stderr


def test_check_fails_on_the_guard_with_the_charts_message() -> None:
    policy = "jobGroups.db.jobs.migrate.hooks.argocd.deletePolicy=HookSucceeded"
    result = jobhash("check", "--release", "demo", "-f", str(EXAMPLE), "--set", policy)
    assert result.returncode == 1
    helm = require_tool("helm")
    rendered = subprocess.run(
        [helm, "template", "demo", str(CHART), "-f", str(EXAMPLE), "--set", policy],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert rendered.returncode != 0
    message = result.stderr.split("helm template would fail: ", 1)[1].split("\n  fix:")[0]
    source = f"--set {policy}: "
    assert message.startswith(source)  # the flag that set the offending entry
    message = message.removeprefix(source)
    assert message.startswith("jobGroups.db.jobs.migrate: hashSuffix is true")
    assert message in rendered.stderr


def test_a_dotted_release_name_gives_valid_names_equal_to_helm_template() -> None:
    # Helm allows dots in release names; the chart turns them into "-" in job names.
    result = jobhash("check", "--release", "my.rel", "-f", str(EXAMPLE))
    assert result.returncode == 0, result.stderr
    assert "every name valid" in result.stdout
    names = jobhash("names", "--release", "my.rel", "-f", str(EXAMPLE), "-o", "json")
    assert names.returncode == 0
    ours = {
        f"{r['group']}/{r['job']}": f"{r['kind']} {r['name']}" for r in json.loads(names.stdout)
    }
    assert ours == helm_names("my.rel", str(CHART), "-f", str(EXAMPLE))
    assert all(name.split()[1].startswith("my-rel-autoroll-db-") for name in ours.values())


def test_a_suffix_that_leaves_no_room_fails_like_the_chart(tmp_path: Path) -> None:
    long_job = "j" * 50
    values = tmp_path / "v.yaml"
    values.write_text(
        "controller: {enabled: false}\njobGroups:\n  db:\n    image: {repository: r}\n"
        f"    jobs:\n      {long_job}: {{}}\n",
        encoding="utf-8",
    )
    result = jobhash("names", "--release", "demo", "-f", str(values))
    assert result.returncode == 1
    assert "leaves no room for the release name within the 63-character Job" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["names", "--release", "demo", "-f", "/nonexistent.yaml"], "cannot read values file"),
        (["names", "--release", "Bad_Name"], "invalid release name"),
        (["names", "--release", "demo", "--chart", "/tmp"], "no Chart.yaml"),
        (["spec", "--release", "demo", "nogroup"], "GROUP/JOB"),
        (["names"], "--release"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_usage_errors_exit_2_without_a_traceback(args: list[str], message: str) -> None:
    result = jobhash(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_invalid_yaml_exits_1_naming_file_and_line(tmp_path: Path) -> None:
    values = tmp_path / "broken.yaml"
    values.write_text("jobGroups:\n  db: {a: b: c}\n", encoding="utf-8")
    result = jobhash("names", "--release", "demo", "-f", str(values))
    assert result.returncode == 1
    assert f"{values}: line 2:" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_wheel_ships_the_chart_from_charts_autoroll_and_every_module(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for package in ("autoroll", "jobhash"):
        shutil.copytree(
            ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copytree(CHART, source / "charts" / "autoroll")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "-w", str(tmp_path / "dist"),
         "--no-deps", "--no-build-isolation", "-q"],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for relative in ("Chart.yaml", "values.yaml", "values.schema.json", "templates/_jobs.tpl"):
            packaged = archive.read(f"jobhash/_chart/{relative}")
            assert packaged == (CHART / relative).read_bytes(), relative
    assert not any(name.startswith("jobhash/_chart/tests/") for name in names)
    # Every module of both packages ships: a subpackage left out of pyproject's list would
    # import here (the source tree is on sys.path) and fail only in the installed image.
    sources = {
        path.relative_to(ROOT).as_posix()
        for package in ("autoroll", "jobhash")
        for path in (ROOT / package).rglob("*.py")
        if "__pycache__" not in path.parts
    }
    assert sources - names == set(), "modules missing from the wheel (pyproject packages)"
