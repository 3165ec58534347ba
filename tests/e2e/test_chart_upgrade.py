"""Issue 12: chart upgrades keep every Job, on the real API server, with the real helm.

A Job's pod template is immutable, so a chart release that changes it under the same Job name
fails `helm upgrade` ("spec.template: field is immutable") and leaves Argo CD OutOfSync. The
chart keeps release-dependent labels out of the pod template (ADR 012); these tests show it
where it matters, on kube-apiserver + kube-controller-manager + the simulated kubelet:

- `helm install` with job groups, then `helm upgrade` to a copy of the chart with a bumped
  `version` and `appVersion` and the same values: it succeeds, every Job and CronJob keeps its
  name and UID, no Job runs again, and only object metadata (helm.sh/chart) moved on. Once with
  Helm v4's server-side apply (its default) and once with its client-side three-way merge
  (`--server-side=false`: the strategic-merge patch `kubectl apply` computes too, which is also
  how Argo CD applies without ServerSideApply=true).
- The same two renders applied as Argo CD with ServerSideApply=true does (`helm template`,
  then a server-side apply with field manager argocd-controller and force, plus a prune of
  what left the manifest): no error, a server-side dry run of the second render over the first
  changes no Job spec (no OutOfSync), no Job is replaced; a changed job gets exactly one new Job.
- `helm upgrade` from the released 0.1.0 and 0.2.0 charts (tests/e2e/releases) to this one
  succeeds: every hashed Job is renamed once and runs once more, as documented (0.1.0 had its
  version labels in the pod templates; this chart adds the `restricted` security contexts to
  them by default, ADR 023), and jobhash predicts the new names. Between two releases of this
  chart (the bumped copy above) nothing runs again.
- The README's upgrade command, parsed from the README (not a copy), from every committed
  release package to this chart with the controller enabled: it succeeds, keeps what the user
  set and renders every value added since with today's default. So does the plain
  `--reuse-values` users have in their history (the chart backfills what it lacks).
- The documented exception is real: an edit of podAnnotations under
  hashIncludePodAnnotations: false is refused by the API server, and `jobhash diff --strict`
  says so beforehand.

Set AUTOROLL_E2E_UPGRADE_REPORT to a file to keep helm's output and the Job name/UID tables.

The charts and values are in ``chart_releases.py``, the reporting helm runner and the Job
tables in ``helm_runner.py``, Argo CD's sync in ``argo_cd.py``.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import require_tool
from tests.e2e.argo_cd import ArgoCD, run_argo_syncs
from tests.e2e.chart_releases import (
    CURRENT_VERSION,
    DIGEST,
    RELEASES_DIR,
    as_run_here,
    chart_release,
    readme_upgrade_command,
    released_chart,
    values,
)
from tests.e2e.helm_runner import (
    Helm,
    Report,
    deployment_env,
    job_names,
    live_jobs,
    once_completed,
    uids,
)
from tests.e2e.helpers import batch_api
from tests.e2e.kubelet import SimulatedKubelet
from tests.e2e.kubelet_images import StaticResolver
from tests.support.chart_copy import CHART
from tests.support.wait import eventually

pytestmark = pytest.mark.e2e

# A release per test (the chart's ClusterRole is named after it), readable in the report.
RELEASES = {
    "server-side": "ssa",
    "client-side": "csa",
    "test_argo_cd_server_side_apply_of_the_next_release_keeps_every_job": "unused",
    "test_helm_upgrade_from_a_released_chart_renames_every_hashed_job_once": "prev",
    "test_an_edit_of_opted_out_pod_annotations_is_refused_by_the_api_and_by_jobhash_diff": "exc",
}
# The README's upgrade from every committed package (and the plain --reuse-values from the
# newest), a release name each: "rd" or "ru" and the version's digits.
PACKAGED = sorted(
    (p.name.removeprefix("autoroll-").removesuffix(".tgz") for p in RELEASES_DIR.glob("*.tgz")),
    key=lambda v: tuple(int(n) for n in v.split(".")),
)
UPGRADE_CASES = [f"{v}-readme" for v in PACKAGED if v != CURRENT_VERSION]
UPGRADE_CASES += [f"{v}-reuse-values" for v in PACKAGED[-1:] if v != CURRENT_VERSION]
RELEASES |= {
    c: ("rd" if c.endswith("-readme") else "ru") + c.partition("-")[0].replace(".", "")
    for c in UPGRADE_CASES
}


@pytest.fixture
def helm(
    kubeconfig: Path, namespace: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Helm]:
    name = request.node.name
    release = RELEASES.get(name.split("[")[-1].rstrip("]")) or RELEASES[name.split("[")[0]]
    runner = Helm(require_tool("helm"), kubeconfig, namespace, tmp_path / "values", release)
    yield runner
    uninstall = [runner.binary, "uninstall", release, "--wait=false", "-n", namespace]
    subprocess.run(
        [*uninstall, "--kubeconfig", str(kubeconfig)],
        capture_output=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def job_images(kubelet: SimulatedKubelet, registry: StaticResolver) -> SimulatedKubelet:
    """The simulated kubelet "pulls" every job image, so the Jobs' pods run and succeed."""
    for tag in ("v1", "v2"):
        registry.set(f"forgejo.e2e.example/ops/migrator:{tag}", DIGEST)
    registry.set("forgejo.e2e.example/ops/indexer:2.4", DIGEST)
    return kubelet


# --- helm upgrade to the next chart release ----------------------------------------------------


@pytest.mark.usefixtures("job_images")
@pytest.mark.parametrize("apply", ["server-side", "client-side"])
def test_helm_upgrade_to_the_next_chart_release_keeps_every_job_and_its_uid(
    helm: Helm, kube: Any, namespace: str, tmp_path: Path, apply: str
) -> None:
    report = Report()
    current = chart_release(tmp_path, "0.2.0", "0.2.0")
    bumped = chart_release(tmp_path, "0.2.1", "0.2.1")
    install = ["install", helm.release, str(current)]
    if apply == "client-side":
        install.append("--server-side=false")  # upgrades then keep the release's method
    helm.ok(report, *install, vals=values())
    before = live_jobs(kube, namespace)
    assert len(job_names(before)) == 2 and len(before) == 3, before
    before = once_completed(kube, namespace, before, what="the installed Jobs to succeed")
    report.table(f"Jobs and CronJobs after install of chart 0.2.0 ({apply} apply)", before)

    helm.ok(report, "upgrade", helm.release, str(bumped), vals=values())
    after = live_jobs(kube, namespace)
    report.table("after helm upgrade to chart 0.2.1 / appVersion 0.2.1, same values", after)
    report.flush(f"upgrade to the next chart release, {apply} apply")

    assert uids(after) == uids(before), "a Job or CronJob was replaced or renamed"
    assert {o["chart"] for o in after.values()} == {"autoroll-0.2.1"}, "metadata moved on"
    assert [o["pods"] for o in after.values()] == [o["pods"] for o in before.values()]
    assert all(o["pods"] == "1" for o in after.values() if o["kind"] == "Job"), after

    # Once more with the same chart: still nothing replaced.
    helm.ok(Report(), "upgrade", helm.release, str(bumped), vals=values())
    assert uids(live_jobs(kube, namespace)) == uids(before)


# --- the same renders applied as Argo CD does --------------------------------------------------


@pytest.mark.usefixtures("job_images")
def test_argo_cd_server_side_apply_of_the_next_release_keeps_every_job(
    helm: Helm, kube: Any, namespace: str, tmp_path: Path
) -> None:
    report = Report()
    argo = ArgoCD(kube, helm, namespace)
    current = chart_release(tmp_path, "0.2.0", "0.2.0")
    bumped = chart_release(tmp_path, "0.2.1", "0.2.1")

    first = argo.render(current, values())
    try:
        run_argo_syncs(argo, kube, namespace, first=first, bumped=bumped, report=report)
    finally:
        argo.delete_cluster_scoped(first)


# --- helm upgrade from the released charts (0.1.0, 0.2.0) ------------------------------------


@pytest.mark.usefixtures("job_images")
@pytest.mark.parametrize("released", ["0.1.0", "0.2.0"])
def test_helm_upgrade_from_a_released_chart_renames_every_hashed_job_once(
    helm: Helm, kube: Any, namespace: str, tmp_path: Path, released: str
) -> None:
    """The upgrade a user of a released chart makes next: same values, this chart. Each hashed
    Job is renamed once and runs once more: 0.1.0 put its version labels into the pod
    templates (ADR 012), and this chart adds the Pod Security ``restricted`` security contexts
    to every Job's pod template by default (ADR 023); 0.2.0's names hashed neither."""
    report = Report()
    previous = released_chart(tmp_path, released)
    helm.ok(report, "install", helm.release, str(previous), vals=values())
    before = live_jobs(kube, namespace)
    assert len(before) == 3, before
    before = once_completed(kube, namespace, before, what=f"the {released} Jobs to succeed")
    report.table(f"after install of chart {released} (a released chart)", before)

    helm.ok(report, "upgrade", helm.release, str(CHART), vals=values())

    def renamed() -> dict[str, dict[str, str]]:
        now = live_jobs(kube, namespace)
        assert not set(now) & set(before), f"old names still live: {sorted(set(now) & set(before))}"
        assert len(now) == 3, now
        return now

    after = eventually(renamed, timeout=60, what=f"Helm to delete the {released} Jobs")
    after = once_completed(kube, namespace, after, what="the renamed Jobs to run once more")
    report.table(f"after helm upgrade to the working-tree chart ({CURRENT_VERSION})", after)
    report.flush(f"upgrade from the released {released}")
    assert {o["chart"] for o in after.values()} == {f"autoroll-{CURRENT_VERSION}"}
    assert all(o["pods"] == "1" for o in after.values() if o["kind"] == "Job"), after
    # The names jobhash predicts are the ones in the cluster.
    names = ["names", "--release", helm.release, "-o", "json", "--chart", str(CHART)]
    predicted = subprocess.run(
        [
            sys.executable,
            "-m",
            "jobhash",
            *names,
            "-f",
            str(helm.workdir / f"values-{helm.count}.yaml"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert predicted.returncode == 0, predicted.stderr
    assert sorted(e["name"] for e in json.loads(predicted.stdout)) == sorted(after)

    # From now on a chart release changes nothing.
    helm.ok(Report(), "upgrade", helm.release, str(chart_release(tmp_path, "9.9.1", "9.9.1")),
            vals=values())  # fmt: skip
    assert uids(live_jobs(kube, namespace)) == uids(after)


# --- the README's upgrade command ----------------------------------------------------------------


def test_the_readme_upgrade_command_resets_then_reuses_values() -> None:
    assert "--reset-then-reuse-values" in readme_upgrade_command()


@pytest.mark.parametrize("case", UPGRADE_CASES)
def test_the_documented_upgrade_from_each_release_works_on_the_real_api(
    helm: Helm, kube: Any, namespace: str, tmp_path: Path, case: str
) -> None:
    """A user of each release upgrades as the README says (or with the plain --reuse-values
    of their shell history); the controller is enabled, as it is for every user."""
    version, _, how = case.partition("-")
    report = Report()
    old = released_chart(tmp_path, version)
    helm.ok(report, "install", helm.release, str(old), vals=values())
    command = as_run_here(
        readme_upgrade_command(), release=helm.release, namespace=namespace, chart=CHART
    )
    if how == "reuse-values":
        command = [c for c in command if c != "--reset-then-reuse-values"] + ["--reuse-values"]
    done = subprocess.run(
        [helm.binary, "upgrade", *command, "--kubeconfig", str(helm.kubeconfig)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    report.add(f"$ helm upgrade {shlex.join(command)}  (exit {done.returncode})", done.stdout)
    report.flush(f"the README's upgrade from {version} ({how})")
    assert done.returncode == 0, done.stderr

    env = deployment_env(kube, namespace, helm.release)
    # What the user set is kept ...
    assert env["FORGEJO_HOST"] == "forgejo.e2e.example"
    assert env["FORGEJO_USER"] == "autoroll-bot"
    # ... and what the old chart did not have is today's default.
    assert env["WORKLOAD_KINDS"] == "deployment,statefulset,daemonset"
    assert env["REGISTRY_SCHEME"] == "https"
    assert env["ROLL_BUDGET_DELETIONS"] == "30"
    status = subprocess.run(
        [
            helm.binary,
            "status",
            helm.release,
            "-n",
            namespace,
            "-o",
            "json",
            "--kubeconfig",
            str(helm.kubeconfig),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    info = json.loads(status.stdout)
    assert info["info"]["status"] == "deployed"
    from kubernetes import client as k8s

    deployed: Any = k8s.AppsV1Api(kube).read_namespaced_deployment(
        f"{helm.release}-autoroll", namespace
    )
    assert deployed.metadata.labels["helm.sh/chart"] == f"autoroll-{CURRENT_VERSION}"


# --- the documented exception -----------------------------------------------------------------


def test_an_edit_of_opted_out_pod_annotations_is_refused_by_the_api_and_by_jobhash_diff(
    helm: Helm, kube: Any, namespace: str, tmp_path: Path
) -> None:
    report = Report()
    helm.ok(report, "install", helm.release, str(CHART), vals=values(role="app"))
    before = live_jobs(kube, namespace)
    done = helm.run("upgrade", helm.release, str(CHART), vals=values(role="db"))
    report.add(f"$ helm upgrade (podAnnotations edited)  (exit {done.returncode})", done.stderr)
    assert done.returncode != 0
    assert "field is immutable" in done.stderr, done.stderr
    assert uids(live_jobs(kube, namespace)) == uids(before)

    files = []
    for role in ("app", "db"):
        path = tmp_path / f"{role}.yaml"
        path.write_text(yaml.safe_dump(values(role=role)), encoding="utf-8")
        files.append(str(path))
    sides = ["--from-values", files[0], "--to-values", files[1], "--chart", str(CHART)]
    diff = subprocess.run(
        [sys.executable, "-m", "jobhash", "diff", "--strict", "--release", helm.release, *sides],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    report.add(f"$ jobhash diff --strict ...  (exit {diff.returncode})", diff.stdout + diff.stderr)
    assert diff.returncode == 3, diff.stderr
    assert "db/migrate: REFUSED" in diff.stdout
    assert "Kubernetes will refuse this update" in diff.stdout

    # The first way out it names: delete the old Job, then sync; it is created again.
    (refused,) = [n for n in before if n.startswith(f"{helm.release}-autoroll-db-migrate-")]
    batch_api(kube).delete_namespaced_job(
        refused, namespace, body={"propagationPolicy": "Background"}
    )
    eventually(
        lambda: _assert_gone(kube, namespace, refused), timeout=30, what=f"Job {refused} deleted"
    )
    helm.ok(report, "upgrade", helm.release, str(CHART), vals=values(role="db"))
    after = live_jobs(kube, namespace)
    report.table("after deleting the Job and upgrading again", after)
    report.flush("the documented exception")
    assert refused in after and after[refused]["uid"] != before[refused]["uid"]
    assert {n: o["uid"] for n, o in after.items() if n != refused} == {
        n: o["uid"] for n, o in before.items() if n != refused
    }


def _assert_gone(kube: Any, namespace: str, name: str) -> None:
    names = [j.metadata.name for j in batch_api(kube).list_namespaced_job(namespace).items]
    assert name not in names, names
