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
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import require_tool
from tests.e2e.helpers import batch_api, core_api
from tests.e2e.kubelet import SimulatedKubelet, StaticResolver
from tests.support.wait import eventually

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "autoroll"
# Released charts as users got them (``helm package``; see releases/README.md): 0.1.0, the
# release before the pod-template fix (issue 12), and 0.2.0, the first one with it.
RELEASES_DIR = Path(__file__).parent / "releases"
CURRENT_VERSION = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))["version"]
ARGO_MANAGER = "argocd-controller"
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
DIGEST = "sha256:" + "5" * 64


def values(*, migrator_tag: str = "v1", role: str | None = None) -> dict[str, Any]:
    """The controller plus two job groups: a Job with a task, a CronJob, a second group."""
    out: dict[str, Any] = {
        "forgejo": {"host": "forgejo.e2e.example", "user": "autoroll-bot"},
        "image": {"repository": "forgejo.e2e.example/ops/autoroll"},
        "secret": {"forgejoToken": "e2e-token-not-secret", "webhookSecret": "w" * 32},
        # Required by the NetworkPolicy (on by default); the released charts accept them too.
        "networkPolicy": {
            "registry": {"cidrs": ["192.0.2.10/32"]},
            "apiServer": {"cidrs": ["198.51.100.0/28"]},
        },
        "jobGroups": {
            "db": {
                "image": {"repository": "forgejo.e2e.example/ops/migrator", "tag": migrator_tag},
                "env": {"DB_HOST": "db", "RETRIES": 3},
                "jobs": {
                    "migrate": {
                        "command": "./migrate.sh",
                        "podAnnotations": {"example.com/owner": "data"},
                        "tasks": [{"name": "wait-db", "command": ["./wait.sh"]}],
                        "hooks": {"argocd": {"syncWave": -1}},
                    },
                    "vacuum": {"schedule": "30 3 * * *", "command": ["./vacuum.sh"]},
                },
            },
            "search": {
                "image": {"repository": "forgejo.e2e.example/ops/indexer", "tag": "2.4"},
                "jobs": {"reindex": {"args": ["--full"]}},
            },
        },
    }
    if role is not None:  # the documented exception: pod annotations kept out of the hash
        db = out["jobGroups"]["db"]
        db["hashIncludePodAnnotations"] = False
        db["jobs"]["migrate"]["podAnnotations"] = {"vault.hashicorp.com/role": role}
    return out


def chart_release(directory: Path, version: str, app_version: str) -> Path:
    """A copy of the working-tree chart released as another version (what a bump publishes)."""
    target = directory / f"autoroll-{version}"
    shutil.copytree(CHART, target, ignore=shutil.ignore_patterns("tests"))
    meta = (target / "Chart.yaml").read_text(encoding="utf-8")
    meta = re.sub(r"(?m)^version: .*$", f"version: {version}", meta)
    meta = re.sub(r"(?m)^appVersion: .*$", f'appVersion: "{app_version}"', meta)
    (target / "Chart.yaml").write_text(meta, encoding="utf-8")
    return target


def released_chart(directory: Path, version: str) -> Path:
    """A released chart as users got it: its ``helm package``, committed under
    tests/e2e/releases (so a shallow clone has it too), unpacked into ``directory``."""
    package = RELEASES_DIR / f"autoroll-{version}.tgz"
    assert package.is_file(), f"{package} is missing (tests/e2e/releases)"
    with tarfile.open(package) as tar:
        # Checked by hand, not with ``filter="data"``: extraction filters came in Python
        # 3.11.4, and the project supports 3.11.0 on (Debian 12 has 3.11.2).
        members = tar.getmembers()
        odd = [
            m.name
            for m in members
            if not (m.isfile() or m.isdir()) or Path(m.name).is_absolute() or ".." in m.name
        ]
        assert not odd, f"{package}: entries a chart package does not have: {odd}"
        tar.extractall(directory / version, members=members)
    chart = directory / version / "autoroll"
    assert f"version: {version}" in (chart / "Chart.yaml").read_text(encoding="utf-8")
    return chart


@dataclass
class Report:
    """What the closing note quotes: helm's output and the Job tables, step by step."""

    lines: list[str] = field(default_factory=list)

    def add(self, title: str, text: str) -> None:
        self.lines += [f"### {title}", text.rstrip(), ""]

    def table(self, title: str, objects: dict[str, dict[str, str]]) -> None:
        rows = [("KIND", "NAME", "UID", "helm.sh/chart", "pods")]
        rows += [
            (o["kind"], name, o["uid"], o["chart"], o["pods"])
            for name, o in sorted(objects.items())
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        text = "\n".join(
            "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows
        )
        self.add(title, text)

    def flush(self, name: str) -> None:
        print("\n".join([f"===== {name}", *self.lines]))
        target = os.environ.get("AUTOROLL_E2E_UPGRADE_REPORT")
        if target:
            with open(target, "a", encoding="utf-8") as out:
                out.write("\n".join([f"===== {name}", *self.lines, ""]))


class Helm:
    """``helm`` against the e2e control plane in one namespace; every call is reported."""

    def __init__(
        self, binary: str, kubeconfig: Path, namespace: str, workdir: Path, release: str
    ) -> None:
        self.binary = binary
        self.kubeconfig = kubeconfig
        self.namespace = namespace
        self.workdir = workdir
        self.release = release  # one per test: the chart's ClusterRole is named after it
        self.count = 0
        workdir.mkdir(parents=True, exist_ok=True)

    def run(self, *args: str, vals: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        self.count += 1
        path = self.workdir / f"values-{self.count}.yaml"
        path.write_text(yaml.safe_dump(vals), encoding="utf-8")
        command = [self.binary, *args, "--kubeconfig", str(self.kubeconfig), "-n", self.namespace]
        command += ["-f", str(path)]
        return subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)

    def ok(self, report: Report, *args: str, vals: dict[str, Any]) -> str:
        done = self.run(*args, vals=vals)
        shown = " ".join(a if "/" not in a else Path(a).name for a in args)
        report.add(f"$ helm {shown} -f values.yaml  (exit {done.returncode})", done.stdout)
        assert done.returncode == 0, f"helm {' '.join(args)}: {done.stderr}"
        return done.stdout


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


def live_jobs(kube: Any, namespace: str) -> dict[str, dict[str, str]]:
    """name -> {kind, uid, chart label, pods created} of every Job and CronJob in the namespace
    (the ones the chart renders carry autoroll.aethnet.se/job-group)."""
    batch = batch_api(kube)
    selector = "autoroll.aethnet.se/job-group"
    pods: dict[str, int] = {}
    for pod in core_api(kube).list_namespaced_pod(namespace).items:
        owner = (pod.metadata.labels or {}).get("batch.kubernetes.io/job-name")
        if owner:
            pods[owner] = pods.get(owner, 0) + 1
    found = {}
    for kind, items in (
        ("Job", batch.list_namespaced_job(namespace, label_selector=selector).items),
        ("CronJob", batch.list_namespaced_cron_job(namespace, label_selector=selector).items),
    ):
        for item in items:
            found[item.metadata.name] = {
                "kind": kind,
                "uid": item.metadata.uid,
                "chart": (item.metadata.labels or {}).get("helm.sh/chart", ""),
                "pods": str(pods.get(item.metadata.name, 0)) if kind == "Job" else "-",
            }
    return found


def uids(objects: dict[str, dict[str, str]]) -> dict[str, str]:
    return {name: o["uid"] for name, o in objects.items()}


def jobs_completed(kube: Any, namespace: str, names: list[str]) -> None:
    batch = batch_api(kube)
    for name in names:
        job = batch.read_namespaced_job(name, namespace)
        assert (job.status.succeeded or 0) >= 1, f"Job {name} has not succeeded yet"


def job_names(objects: dict[str, dict[str, str]]) -> list[str]:
    return sorted(name for name, o in objects.items() if o["kind"] == "Job")


def documents(manifest: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(manifest) if d]


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
    eventually(
        lambda: jobs_completed(kube, namespace, job_names(before)),
        timeout=90,
        what="the installed Jobs to succeed",
    )
    before = live_jobs(kube, namespace)
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


class ArgoCD:
    """Argo CD's sync with ServerSideApply=true and Prune=true, for one Application.

    Desired state is `helm template <app> <chart> -n <ns> -f values`; each object gets the
    tracking annotation, is server-side applied with field manager argocd-controller and
    force (`kubectl apply --server-side --force-conflicts`), and what the app tracks but the
    manifest no longer has is deleted (prune).
    """

    def __init__(self, kube: Any, helm: Helm, namespace: str) -> None:
        from kubernetes import dynamic

        new_client: Any = dynamic.DynamicClient
        self.dyn = new_client(kube)
        self.helm = helm
        self.namespace = namespace
        self.app = "argo-app"

    def render(self, chart: Path, vals: dict[str, Any]) -> list[dict[str, Any]]:
        done = self.helm.run("template", self.app, str(chart), vals=vals)
        assert done.returncode == 0, done.stderr
        out = []
        for doc in documents(done.stdout):
            meta = doc["metadata"]
            group = doc["apiVersion"].rpartition("/")[0]
            where = f"{meta['namespace']}/" if "namespace" in meta else ""
            tracking = f"{self.app}:{group}/{doc['kind']}:{where}{meta['name']}"
            meta.setdefault("annotations", {})["argocd.argoproj.io/tracking-id"] = tracking
            out.append(doc)
        return out

    def delete_cluster_scoped(self, docs: list[dict[str, Any]]) -> None:
        """The namespace's deletion takes the rest; a ClusterRole would outlive the test."""
        for doc in docs:
            resource = self.resource(doc)
            if not resource.namespaced:
                resource.delete(name=doc["metadata"]["name"])

    def resource(self, doc: dict[str, Any]) -> Any:
        return self.dyn.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])

    def apply(self, docs: list[dict[str, Any]], *, dry_run: bool = False) -> list[Any]:
        applied = []
        for doc in docs:
            resource = self.resource(doc)
            kwargs: dict[str, Any] = {"field_manager": ARGO_MANAGER, "force_conflicts": True}
            if dry_run:
                kwargs["dry_run"] = "All"
            if resource.namespaced:
                kwargs["namespace"] = self.namespace
            applied.append(self.dyn.server_side_apply(resource, body=doc, **kwargs))
        return applied

    def prune(self, docs: list[dict[str, Any]]) -> list[str]:
        """Delete the tracked Jobs/CronJobs that are not in ``docs``; return their names."""
        wanted = {(d["kind"], d["metadata"]["name"]) for d in docs}
        pruned = []
        for api_version, kind in (("batch/v1", "Job"), ("batch/v1", "CronJob")):
            resource = self.dyn.resources.get(api_version=api_version, kind=kind)
            for item in resource.get(namespace=self.namespace).items:
                annotations = dict(item.metadata.annotations or {})
                tracked = annotations.get("argocd.argoproj.io/tracking-id", "")
                if tracked.startswith(f"{self.app}:") and (kind, item.metadata.name) not in wanted:
                    resource.delete(
                        name=item.metadata.name,
                        namespace=self.namespace,
                        body={"propagationPolicy": "Background"},
                    )
                    pruned.append(item.metadata.name)
        return sorted(pruned)


def job_templates(docs: list[Any]) -> dict[str, str]:
    """name -> JSON of spec.template of every Job among applied (live or dry-run) objects."""
    out = {}
    for obj in docs:
        body = obj.to_dict() if hasattr(obj, "to_dict") else obj
        if body["kind"] == "Job":
            out[body["metadata"]["name"]] = json.dumps(body["spec"]["template"], sort_keys=True)
    return out


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


def run_argo_syncs(
    argo: ArgoCD,
    kube: Any,
    namespace: str,
    *,
    first: list[dict[str, Any]],
    bumped: Path,
    report: Report,
) -> None:
    live_first = argo.apply(first)
    before = live_jobs(kube, namespace)
    assert len(job_names(before)) == 2, before
    eventually(
        lambda: jobs_completed(kube, namespace, job_names(before)),
        timeout=90,
        what="the synced Jobs to succeed",
    )
    before = live_jobs(kube, namespace)
    report.table("after an Argo CD sync of chart 0.2.0 (server-side apply)", before)

    second = argo.render(bumped, values())
    # Argo CD's diff with ServerSideApply: a server-side dry run of the desired state. The
    # Job pod templates come back exactly as they are live: nothing is OutOfSync there.
    dry = argo.apply(second, dry_run=True)
    assert job_templates(dry) == job_templates(live_first)
    argo.apply(second)  # no "field is immutable"
    assert argo.prune(second) == []
    after = live_jobs(kube, namespace)
    report.table("after an Argo CD sync of chart 0.2.1 / appVersion 0.2.1, same values", after)
    assert uids(after) == uids(before), "a Job was replaced"
    assert {o["chart"] for o in after.values()} == {"autoroll-0.2.1"}

    # A changed job: exactly one new Job; the old one is pruned, the others keep their UID.
    third = argo.render(bumped, values(migrator_tag="v2"))
    argo.apply(third)
    pruned = argo.prune(third)
    changed = live_jobs(kube, namespace)
    report.table("after a sync with jobGroups.db.image.tag v1 -> v2", changed)
    report.add("pruned", "\n".join(pruned))
    report.flush("Argo CD server-side apply across chart releases")
    new_jobs = set(job_names(changed)) - set(job_names(after))
    gone = set(after) - set(changed)
    assert len(new_jobs) == 1 and next(iter(new_jobs)).startswith("argo-app-autoroll-db-migrate-")
    # The CronJob of group db changes too (its job template is hashed the same way): renamed.
    assert gone == set(pruned), (gone, pruned)
    assert {n for n in gone if after[n]["kind"] == "Job"} == {
        n for n in job_names(after) if n.startswith("argo-app-autoroll-db-migrate-")
    }
    kept = [n for n in after if n.startswith("argo-app-autoroll-search-reindex-")]
    assert kept and all(changed[n]["uid"] == after[n]["uid"] for n in kept)


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
    eventually(
        lambda: jobs_completed(kube, namespace, job_names(before)),
        timeout=90,
        what=f"the {released} Jobs to succeed",
    )
    before = live_jobs(kube, namespace)
    report.table(f"after install of chart {released} (a released chart)", before)

    helm.ok(report, "upgrade", helm.release, str(CHART), vals=values())

    def renamed() -> dict[str, dict[str, str]]:
        now = live_jobs(kube, namespace)
        assert not set(now) & set(before), f"old names still live: {sorted(set(now) & set(before))}"
        assert len(now) == 3, now
        return now

    after = eventually(renamed, timeout=60, what=f"Helm to delete the {released} Jobs")
    eventually(
        lambda: jobs_completed(kube, namespace, job_names(after)),
        timeout=90,
        what="the renamed Jobs to run once more",
    )
    after = live_jobs(kube, namespace)
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

README = REPO / "README.md"


def readme_upgrade_command() -> list[str]:
    """The one `helm upgrade` line of the README, split as a shell would."""
    lines = [
        line.strip()
        for line in README.read_text(encoding="utf-8").splitlines()
        if line.strip().startswith("helm upgrade ")
    ]
    assert len(lines) == 1, f"README.md: expected one `helm upgrade` line, found {lines}"
    return shlex.split(lines[0])


def as_run_here(command: list[str], *, release: str, namespace: str, chart: Path) -> list[str]:
    """The README's command against this test's release, namespace and chart: only the
    placeholders change (release name, chart reference, namespace, `--version <X.Y.Z>`)."""
    assert command[:2] == ["helm", "upgrade"], command
    _, _, documented_release, reference, *flags = command
    assert documented_release == "autoroll" and reference.startswith("oci://"), command
    out = [release, str(chart)]
    rest = iter(flags)
    for flag in rest:
        if flag in {"-n", "--namespace"}:
            out += [flag, namespace]
            next(rest)
        elif flag == "--version":
            assert next(rest) == "<X.Y.Z>", "README: --version should show the <X.Y.Z> placeholder"
            out += ["--version", CURRENT_VERSION]
        else:
            out.append(flag)
    return out


def test_the_readme_upgrade_command_resets_then_reuses_values() -> None:
    assert "--reset-then-reuse-values" in readme_upgrade_command()


def deployment_env(kube: Any, namespace: str, release: str) -> dict[str, str]:
    from kubernetes import client as k8s

    apps = k8s.AppsV1Api(kube)
    deployment: Any = apps.read_namespaced_deployment(f"{release}-autoroll", namespace)
    [container] = deployment.spec.template.spec.containers
    return {e.name: e.value for e in container.env or [] if e.value is not None}


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
