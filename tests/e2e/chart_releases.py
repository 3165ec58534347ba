"""The chart as users get it, release by release, for the upgrade tests
(``test_chart_upgrade.py``): the working tree's chart, a copy of it bumped to another
version, the committed release packages unpacked, the values every upgrade installs with,
and the README's own `helm upgrade` command pointed at a test's release.

Kept apart from the tests so they read as the upgrade steps they take.
"""

from __future__ import annotations

import shlex
import tarfile
from pathlib import Path
from typing import Any

import yaml

from tests.support.chart_copy import CHART, released_as

REPO = Path(__file__).resolve().parents[2]
# Released charts as users got them (``helm package``; see releases/README.md): 0.1.0, the
# release before the pod-template fix (issue 12), and 0.2.0, the first one with it.
RELEASES_DIR = Path(__file__).parent / "releases"
CURRENT_VERSION = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))["version"]
# The digest the simulated kubelet "pulls" for every job image in ``values``.
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
    return released_as(directory / f"autoroll-{version}", version, app_version)


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
