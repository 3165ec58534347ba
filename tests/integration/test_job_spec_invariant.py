"""Property (ADR 012; ARCHITECTURE safety rule 7): two renders that give a Job the same name give
it the same spec, and a CronJob the same jobTemplate, byte for byte.

A Job's pod template is immutable once the Job exists, so a render that keeps a Job's name but
changes its spec makes `helm upgrade` fail ("spec.template: field is immutable") and an Argo CD
sync stay OutOfSync. The real `helm template` renders generated values twice: before and after
a change that leaves every hashed field alone — a chart version and appVersion bump (two copies
of the chart in a tmp dir), controller values, nameOverride, the release name (with
fullnameOverride), metadataAnnotations, hook annotations, CronJob-only fields, other entries
switched off or added, a hashed value moved to another layer with the same effective value.
Every Job and CronJob that has the same name in both renders must have the identical `spec:`
text (Job) or `jobTemplate:` text (CronJob), and `jobhash diff` over the same values must not
call any of them refused.

The one documented exception, pod annotations under hashIncludePodAnnotations: false, is shown
separately: there the spec does change under the same name, and `jobhash diff` says so.
Example count: JOBHASH_INVARIANT_EXAMPLES (default 30; two helm renders each).
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from jobhash.diff import Outcome, compare
from jobhash.plan import plan
from jobhash.values import ValueSources, load, load_chart
from tests.conftest import require_tool
from tests.integration.job_spec_values import (
    base_values,
    word,
)
from tests.support.chart_copy import CHART, released_as

pytestmark = pytest.mark.integration

EXAMPLES = int(os.environ.get("JOBHASH_INVARIANT_EXAMPLES", "30"))
RANDOM = os.environ.get("JOBHASH_PARITY_RANDOM", "") == "1"
NAMESPACE = "inv"

# --- changes that leave every hashed field alone ---------------------------------------------

VERSIONS = ["0.2.0", "0.2.1", "0.3.0-rc.1", "1.0.0+build.7", "10.20.30"]
APP_VERSIONS = ["0.2.0", "0.2.1", "v2026.01.02", "1.0.0-dev+abc", ""]


@dataclass
class Render:
    release: str
    values: dict[str, Any]
    version: str = "0.2.0"
    app_version: str = "0.2.0"


@dataclass
class Change:
    before: Render
    after: Render
    what: list[str] = field(default_factory=list)


def entries(values: dict[str, Any]) -> list[tuple[str, str]]:
    return [(g, j) for g, body in values["jobGroups"].items() for j in body["jobs"]]


@st.composite
def changes(draw: st.DrawFn) -> Change:
    values = draw(base_values())
    before = Render(draw(st.sampled_from(["demo", "autoroll", "r"])), values)
    after = Render(before.release, copy.deepcopy(values))
    change = Change(before, after)
    new = after.values
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=3, unique=True))
    for kind in kinds:
        KINDS_APPLY[kind](draw, change, new)
        change.what.append(kind)
    return change


def _version(draw: st.DrawFn, change: Change, new: dict[str, Any]) -> None:
    change.before.version = draw(st.sampled_from(VERSIONS))
    change.after.version = draw(st.sampled_from(VERSIONS))


def _app_version(draw: st.DrawFn, change: Change, new: dict[str, Any]) -> None:
    change.before.app_version = draw(st.sampled_from(APP_VERSIONS))
    change.after.app_version = draw(st.sampled_from(APP_VERSIONS))


def _controller(draw: st.DrawFn, change: Change, new: dict[str, Any]) -> None:
    """Controller values, some with the same names as job settings (nodeSelector, resources,
    imagePullSecrets)."""
    options: dict[str, Any] = {
        "replicaCount": 2,
        "logLevel": "debug",
        "pollIntervalSeconds": 300,
        "podLabels": {"team": "platform"},
        "podAnnotations": {"example.com/scrape": "true"},
        "deploymentLabels": {"tier": "ops"},
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "resources": {"limits": {"memory": "512Mi"}},
        "tolerations": [{"key": "x", "operator": "Exists"}],
        "imagePullSecrets": [{"name": "controller-registry"}],
        "networkPolicy": {"enabled": False},
        "emitEvents": True,
    }
    if "forgejo" in new:
        options["image"] = {"repository": "forgejo.example/ops/autoroll", "tag": "v9"}
    for key in draw(st.lists(st.sampled_from(sorted(options)), min_size=1, max_size=4)):
        new[key] = options[key]


def _name_override(draw: st.DrawFn, change: Change, new: dict[str, Any]) -> None:
    new["nameOverride"] = draw(st.sampled_from(["roll", "autoroll", "jobs"]))


def _release(draw: st.DrawFn, change: Change, new: dict[str, Any]) -> None:
    # Without fullnameOverride every name changes (nothing to compare), so set one on both sides.
    override = change.before.values.get("fullnameOverride") or "shop"
    change.before.values["fullnameOverride"] = override
    new["fullnameOverride"] = override
    change.after.release = draw(st.sampled_from(["other", "prod-2", "x"]))


def _metadata_annotations(draw: st.DrawFn, change: Change, new: dict[str, Any]) -> None:
    group, job = draw(st.sampled_from(entries(new)))
    layer = draw(st.sampled_from(["defaults", "group", "job"]))
    target = (
        new.setdefault("jobDefaults", {})
        if layer == "defaults"
        else new["jobGroups"][group]
        if layer == "group"
        else new["jobGroups"][group]["jobs"][job]
    )
    target["metadataAnnotations"] = {"changed": draw(word), "reloader.stakater.com/auto": "true"}


def _hooks(draw: st.DrawFn, change: Change, new: dict[str, Any]) -> None:
    group, job = draw(st.sampled_from(entries(new)))
    new["jobGroups"][group]["jobs"][job]["hooks"] = {
        "argocd": {"syncWave": draw(st.integers(-5, 5))},
        "helm": {"weight": draw(st.integers(-5, 5))},
    }


def _cron_fields(draw: st.DrawFn, change: Change, new: dict[str, Any]) -> None:
    for group, job in entries(new):
        settings_ = new["jobGroups"][group]["jobs"][job]
        if settings_.get("schedule"):
            settings_["schedule"] = draw(st.sampled_from(["0 * * * *", "@weekly"]))
            settings_["timeZone"] = "Etc/UTC"
            settings_["concurrencyPolicy"] = draw(st.sampled_from(["Allow", "Replace"]))
            settings_["suspend"] = draw(st.booleans())
            settings_["successfulJobsHistoryLimit"] = draw(st.integers(0, 5))
            settings_["startingDeadlineSeconds"] = 60


def _other_entries(draw: st.DrawFn, change: Change, new: dict[str, Any]) -> None:
    listed = entries(new)
    if len(listed) > 1 and draw(st.booleans()):
        group, job = draw(st.sampled_from(listed))
        new["jobGroups"][group]["jobs"][job]["enabled"] = False
    else:
        new["jobGroups"]["added"] = {
            "image": {"repository": "my/other", "tag": "v1"},
            "jobs": {"extra": {"command": "./extra.sh"}},
        }


def _move_layer(draw: st.DrawFn, change: Change, new: dict[str, Any]) -> None:
    """A group-level hashed setting copied into every job of the group: same effective values."""
    group = draw(st.sampled_from(sorted(new["jobGroups"])))
    body = new["jobGroups"][group]
    movable = [k for k in body if k not in ("jobs", "image", "env", "envSecrets")]
    if not movable:
        return
    key = draw(st.sampled_from(sorted(movable)))
    value = body.pop(key)
    for settings_ in body["jobs"].values():
        settings_.setdefault(key, copy.deepcopy(value))


KINDS_APPLY = {
    "chart version": _version,
    "appVersion": _app_version,
    "controller values": _controller,
    "nameOverride": _name_override,
    "release name": _release,
    "metadataAnnotations": _metadata_annotations,
    "hook annotations": _hooks,
    "CronJob-only fields": _cron_fields,
    "other entries": _other_entries,
    "same value on another layer": _move_layer,
}
KINDS = sorted(KINDS_APPLY)


# --- rendering --------------------------------------------------------------------------------

_DOC_KIND = re.compile(r"^kind: (Job|CronJob)$", re.MULTILINE)
_DOC_NAME = re.compile(r'^metadata:\n  name: "(.*)"$', re.MULTILINE)


def chart_copy(directory: Path, version: str, app_version: str) -> Path:
    """The working-tree chart with another version and appVersion (a chart release)."""
    target = directory / f"chart-{version}-{app_version or 'none'}"
    return target if target.exists() else released_as(target, version, app_version)


def render(
    helm: str, directory: Path, side: str, r: Render
) -> tuple[dict[tuple[str, str], str], Path]:
    """(kind, name) -> the `spec:` block of a Job / the `jobTemplate:` block of a CronJob."""
    chart = chart_copy(directory, r.version, r.app_version)
    values_file = directory / f"{side}.json"
    values_file.write_text(json.dumps(r.values), encoding="utf-8")
    command = [helm, "template", r.release, str(chart), "-n", NAMESPACE, "-f", str(values_file)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"{side}: helm template failed:\n{done.stderr}"
    found = {}
    for document in re.split(r"^---$", done.stdout, flags=re.MULTILINE):
        kind = _DOC_KIND.search(document)
        if kind is None:
            continue
        name = _DOC_NAME.search(document)
        assert name is not None, document
        marker = "\nspec:\n" if kind.group(1) == "Job" else "\n  jobTemplate:\n"
        assert marker in document, document
        # The blank line before the next "---" is the stream's, not the spec's.
        found[(kind.group(1), name.group(1))] = document.split(marker, 1)[1].rstrip("\n") + "\n"
    return found, values_file


STATS = {"examples": 0, "compared": 0, "Job": 0, "CronJob": 0, "renamed_only": 0}


@pytest.fixture(scope="module")
def helm() -> str:
    return require_tool("helm")


@pytest.mark.timeout(900)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not RANDOM,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(change=changes())
def test_a_job_that_keeps_its_name_keeps_its_spec_byte_for_byte(
    helm: str, tmp_path: Path, change: Change
) -> None:
    note(f"changes: {change.what}")
    note(f"before: {change.before}")
    note(f"after: {change.after}")
    before, before_file = render(helm, tmp_path, "before", change.before)
    after, after_file = render(helm, tmp_path, "after", change.after)
    STATS["examples"] += 1
    same = sorted(set(before) & set(after))
    for key in same:
        assert before[key] == after[key], (
            f"{key[0]} {key[1]} keeps its name across {change.what} but its "
            f"{'spec' if key[0] == 'Job' else 'jobTemplate'} changes"
        )
        STATS["compared"] += 1
        STATS[key[0]] += 1
    if not same:
        STATS["renamed_only"] += 1
    # jobhash agrees: nothing that keeps its name is refused (same chart on both sides: the
    # chart version is not an input of jobhash, which is the point).
    chart = load_chart(CHART)
    plans = [
        plan(
            load(chart, ValueSources(files=[path])).values, release=r.release, chart_name=chart.name
        )
        for r, path in ((change.before, before_file), (change.after, after_file))
    ]
    refused = [c.key for c in compare(*plans) if c.outcome is Outcome.REFUSED]
    assert refused == [], f"jobhash diff calls {refused} refused after {change.what}"


def test_invariant_stats_are_meaningful() -> None:
    """Runs after the property test: most examples must compare Jobs and CronJobs by name."""
    if STATS["examples"] == 0:
        pytest.skip("the invariant property test did not run in this session")
    assert STATS["examples"] >= EXAMPLES
    assert STATS["compared"] >= STATS["examples"], STATS
    assert STATS["Job"] > 0 and STATS["CronJob"] > 0, STATS
    assert STATS["renamed_only"] <= STATS["examples"] // 4, STATS
    print(f"invariant stats: {STATS}")


# --- the documented exception: pod annotations under hashIncludePodAnnotations: false --------


def test_opted_out_pod_annotations_change_the_spec_under_the_same_name_and_diff_says_so(
    helm: str, tmp_path: Path
) -> None:
    def values(role: str) -> dict[str, Any]:
        return {
            "controller": {"enabled": False},
            "jobGroups": {
                "db": {
                    "image": {"repository": "my/migrator", "tag": "v1"},
                    "hashIncludePodAnnotations": False,
                    "podAnnotations": {"vault.hashicorp.com/role": role},
                    "jobs": {"migrate": {"command": "./migrate.sh"}},
                }
            },
        }

    before, before_file = render(helm, tmp_path, "before", Render("demo", values("app")))
    after, after_file = render(helm, tmp_path, "after", Render("demo", values("db")))
    (key,) = before
    assert set(after) == {key}, "the annotations are not hashed: the name stays"
    assert before[key] != after[key], "the pod template does change"
    chart = load_chart(CHART)
    plans = [
        plan(load(chart, ValueSources(files=[p])).values, release="demo", chart_name=chart.name)
        for p in (before_file, after_file)
    ]
    (change,) = compare(*plans)
    assert change.outcome is Outcome.REFUSED
