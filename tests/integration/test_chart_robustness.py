"""Bad jobGroups input fails the render with a clear message, in the chart and in jobhash.

Each case runs the real `helm template` and jobhash's plan on the same values file: either both
render the same names, or both fail and jobhash's message appears in Helm's error. Covered:
characters Helm's toYaml cannot write (which it used to render as an empty string), names and
labels that must be quoted, duplicate Job names, and release names with dots. helm-unittest
cannot carry DEL or C1 characters in values at all, so these cases live here.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from jobhash.errors import RenderError, ValuesError
from jobhash.plan import plan
from jobhash.values import ValueSources, load, load_chart
from tests.conftest import require_tool

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CHART_DIR = ROOT / "charts" / "autoroll"
CHART = load_chart(CHART_DIR)
UNWRITABLE = "contains DEL (U+007F), a C1 control character"
#: The addresses the NetworkPolicy (on by default) requires while the controller is rendered.
NETWORK = {"registry": {"cidrs": ["192.0.2.10/32"]}, "apiServer": {"cidrs": ["198.51.100.0/28"]}}


@dataclass(frozen=True)
class Outcome:
    ok: bool
    names: frozenset[tuple[str, str]]  # (kind, name)
    error: str
    stdout: str = ""


def base_values(**job: Any) -> dict[str, Any]:
    return {
        "controller": {"enabled": False},
        "jobGroups": {
            "db": {
                "image": {"repository": "my/migrator", "tag": "v1"},
                "jobs": {"migrate": {"command": "./migrate.sh", **job}},
            }
        },
    }


def write(tmp_path: Path, values: dict[str, Any]) -> Path:
    """A values file; yaml escapes DEL and C1 characters (\\x7f), which Helm reads back."""
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values, allow_unicode=False), encoding="utf-8")
    return path


def run_helm(path: Path, release: str, *extra: str) -> Outcome:
    helm = require_tool("helm")
    result = subprocess.run(
        [helm, "template", release, str(CHART_DIR), "-f", str(path), *extra],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    if result.returncode != 0:
        return Outcome(False, frozenset(), result.stderr.replace("\n", " "))
    names = set()
    for doc in yaml.safe_load_all(result.stdout):
        if doc and doc["kind"] in ("Job", "CronJob"):
            names.add((doc["kind"], doc["metadata"]["name"]))
    return Outcome(True, frozenset(names), "", result.stdout)


def run_jobhash(path: Path, release: str) -> Outcome:
    try:
        items = plan(
            load(CHART, ValueSources(files=[path], sets=[], set_strings=[])).values,
            release=release,
            chart_name=CHART.name,
        )
    except RenderError as err:
        return Outcome(False, frozenset(), err.message)
    except ValuesError as err:
        return Outcome(False, frozenset(), str(err))
    return Outcome(True, frozenset((i.kind, i.name) for i in items), "")


def both(tmp_path: Path, values: dict[str, Any], release: str = "rel") -> tuple[Outcome, Outcome]:
    path = write(tmp_path, values)
    return run_helm(path, release), run_jobhash(path, release)


# --- 1. characters toYaml cannot write --------------------------------------------------------


JOB = "jobGroups.db.jobs.migrate"


@pytest.mark.parametrize(
    ("values", "path"),
    [
        (base_values(podAnnotations={"a": "x\x7f"}), f"{JOB}.podAnnotations.a"),
        (base_values(metadataAnnotations={"note": "a\x80"}), f"{JOB}.metadataAnnotations.note"),
        (
            base_values(tasks=[{"name": "a"}, {"name": "b", "args": ["ok", "\x9f"]}]),
            f"{JOB}.tasks[1].args[1]",
        ),
        (base_values(nodeSelector={"k\ufffe": "v"}), f"{JOB}.nodeSelector.k\ufffe"),
        (base_values(schedule="0 3 * * *", timeZone="UTC\uffff"), f"{JOB}.timeZone"),
        (
            {**base_values(), "jobDefaults": {"podAnnotations": {"d": "\x84"}}},
            "jobDefaults.podAnnotations.d",
        ),
    ],
)
def test_unwritable_characters_fail_in_helm_and_jobhash_naming_the_path(
    tmp_path: Path, values: dict[str, Any], path: str
) -> None:
    helm, ours = both(tmp_path, values)
    assert not helm.ok and not ours.ok
    assert ours.error.startswith(f"{path}: {UNWRITABLE}")
    assert ours.error in helm.error


def test_c0_controls_still_render(tmp_path: Path) -> None:
    helm, ours = both(tmp_path, base_values(podAnnotations={"a": "x\x01\ty\u2028"}))
    assert helm.ok and ours.ok, (helm.error, ours.error)
    assert helm.names == ours.names


def test_nel_fails_because_toyaml_would_fold_it_into_a_space(tmp_path: Path) -> None:
    """U+0085 is left raw by Go's JSON and read back by toYaml as a YAML 1.1 line break."""
    helm, ours = both(tmp_path, base_values(env={"A": "x\x85y"}))
    assert not helm.ok and not ours.ok
    assert ours.error.startswith(f"jobGroups.db.jobs.migrate.env.A: {UNWRITABLE}")
    assert "folds U+0085 into a space" in ours.error
    assert ours.error in helm.error


def test_controller_values_with_del_fail_instead_of_vanishing(tmp_path: Path) -> None:
    values = {
        "forgejo": {"host": "git.example", "user": "bot"},
        "image": {"repository": "git.example/bot/autoroll"},
        "secret": {"forgejoToken": "t", "webhookSecret": "0123456789abcdefg"},
        "networkPolicy": NETWORK,
        "podAnnotations": {"a": "x\x7f"},
    }
    helm = run_helm(write(tmp_path, values), "rel")
    assert not helm.ok
    assert f"podAnnotations.a: {UNWRITABLE}" in helm.error


# --- 2. nameOverride / fullnameOverride: DNS-1123 labels, checked by the schema ----------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("nameOverride", "a: b"),
        ("nameOverride", "x #y"),
        ("fullnameOverride", "ünïcode-" * 8),
        ("fullnameOverride", "x-"),
        ("fullnameOverride", "a" * 64),
    ],
)
def test_odd_overrides_are_refused_by_both_naming_the_key(
    tmp_path: Path, key: str, value: str
) -> None:
    helm, ours = both(tmp_path, {**base_values(), key: value})
    assert not helm.ok and not ours.ok
    assert f"at '/{key}'" in helm.error
    assert f": {key}: " in ours.error


def test_name_label_that_yaml_would_retype_stays_a_string(tmp_path: Path) -> None:
    helm, ours = both(tmp_path, {**base_values(), "nameOverride": "on", "fullnameOverride": "0"})
    assert helm.ok and ours.ok, (helm.error, ours.error)
    assert helm.names == ours.names == {("Job", "0-db-migrate-946f9a6a")}
    (job,) = [d for d in yaml.safe_load_all(helm.stdout) if d]
    assert job["metadata"]["labels"]["app.kubernetes.io/name"] == "on"


# --- 3. two entries with the same name ---------------------------------------------------------


def test_duplicate_names_fail_in_both_naming_both_entries(tmp_path: Path) -> None:
    group = {
        "image": {"repository": "my/migrator", "tag": "v1"},
        "hashSuffix": False,
        "jobs": {"migrate": {}},
    }
    values = {
        "controller": {"enabled": False},
        "jobGroups": {"database1": group, "database2": group},
    }
    helm, ours = both(tmp_path, values)
    assert not helm.ok and not ours.ok
    assert ours.error.startswith("jobGroups.database2.jobs.migrate: its Job name ")
    assert "is also the name of jobGroups.database1.jobs.migrate" in ours.error
    assert ours.error in helm.error


def test_hashed_groups_sharing_8_characters_render_in_both(tmp_path: Path) -> None:
    """The whole group key is a pod label, so it is hashed: the names differ."""
    group = {"image": {"repository": "my/migrator", "tag": "v1"}, "jobs": {"migrate": {}}}
    values = {
        "controller": {"enabled": False},
        "jobGroups": {"database1": group, "database2": group},
    }
    helm, ours = both(tmp_path, values)
    assert helm.ok and ours.ok, (helm.error, ours.error)
    assert helm.names == ours.names
    assert len(helm.names) == 2


# --- 4. release names with dots ----------------------------------------------------------------


@pytest.mark.parametrize("release", ["my.app", "a.b.c", "x" * 40 + ".y" * 6])
def test_dotted_release_names_give_dns1123_job_names_in_both(tmp_path: Path, release: str) -> None:
    values = base_values()
    values["jobGroups"]["db"]["jobs"]["nightly"] = {"schedule": "@daily"}
    helm, ours = both(tmp_path, values, release)
    assert helm.ok and ours.ok, (helm.error, ours.error)
    assert helm.names == ours.names
    for kind, name in helm.names:
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name), name
        assert len(name) <= (52 if kind == "CronJob" else 63)


# --- the controller's own ServiceAccount ---------------------------------------------------


def with_controller(values: dict[str, Any], **account: Any) -> dict[str, Any]:
    """``values`` with the controller rendered (its required values) and ``serviceAccount``."""
    return {
        **values,
        "controller": {"enabled": True},
        "forgejo": {"host": "forgejo.example.org", "user": "bot"},
        "image": {"repository": "forgejo.example.org/ops/autoroll"},
        "secret": {"forgejoToken": "t", "webhookSecret": "0123456789abcdefg"},
        "networkPolicy": NETWORK,
        "serviceAccount": account,
    }


@pytest.mark.parametrize(
    ("values", "given"),
    [
        (with_controller(base_values(serviceAccountName="rel-autoroll")), "rel-autoroll"),
        (with_controller(base_values(serviceAccountName="ops"), name="ops"), "ops"),
        (with_controller(base_values(), create=False), ""),
        (with_controller(base_values(serviceAccountName="default"), create=False), "default"),
    ],
)
def test_a_job_as_the_controllers_service_account_fails_in_helm_and_jobhash(
    tmp_path: Path, values: dict[str, Any], given: str
) -> None:
    helm, ours = both(tmp_path, values)
    assert not helm.ok and not ours.ok
    assert ours.error.startswith(
        f'{JOB}: serviceAccountName "{given}" (empty: the namespace\'s "default") is the'
        " controller's own ServiceAccount"
    )
    assert ours.error in helm.error


@pytest.mark.parametrize(
    "values",
    [
        with_controller(base_values(serviceAccountName="migrator")),
        with_controller(base_values()),  # the namespace's default, the controller its own
        base_values(serviceAccountName="rel-autoroll"),  # no controller rendered
    ],
)
def test_a_job_with_another_service_account_renders_the_same_name_in_both(
    tmp_path: Path, values: dict[str, Any]
) -> None:
    helm, ours = both(tmp_path, values)
    assert helm.ok and ours.ok, (helm.error, ours.error)
    assert helm.names == ours.names
