"""Values reused from an older release render as the defaults would (issue 24).

`helm upgrade --reuse-values` gives the templates the old release's values: every key added
since then is missing. ``autoroll.compat.backfill`` (templates/_compat.tpl) puts each back
with its default. Here every key that today's values.yaml has and the released 0.2.0's does
not is removed (``--set key=null``, which is what a reused older release looks like), one at
a time and all at once, and the render (with one job group, so that ``jobDefaults`` keys are
rendered too) must equal the default render, byte for byte. A new value not added to
``autoroll.compat.addedSince020``, or added there with another default than values.yaml's,
fails this test, even where its absence happens to render the same (a layered ``jobDefaults``
key, whose absence is the same as its empty default).
"""

from __future__ import annotations

import io
import re
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from jobhash.layers import builtin_defaults
from tests.conftest import require_tool

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "autoroll"
RELEASE_0_2_0 = ROOT / "tests" / "e2e" / "releases" / "autoroll-0.2.0.tgz"
REQUIRED = CHART / "tests" / "values" / "required.yaml"
COMPAT = CHART / "templates" / "_compat.tpl"
# One job group (the worked example), so that what jobDefaults holds reaches the render.
JOB_GROUP = ["jobGroups.db.image.repository=my/migrator", "jobGroups.db.image.tag=v1",
             "jobGroups.db.jobs.migrate.command=./migrate.sh"]  # fmt: skip


def released_values(package: Path) -> dict[str, Any]:
    with tarfile.open(package) as tar:
        member = tar.extractfile("autoroll/values.yaml")
        assert member is not None
        loaded: dict[str, Any] = yaml.safe_load(io.TextIOWrapper(member, encoding="utf-8"))
        return loaded


def added_paths(new: dict[str, Any], old: dict[str, Any], prefix: str = "") -> list[str]:
    """The outermost dotted paths of ``new`` that ``old`` lacks (``jobDefaults`` keys included)."""
    paths: list[str] = []
    for key, value in new.items():
        path = f"{prefix}{key}"
        if key not in old:
            paths.append(path)
        elif isinstance(value, dict) and isinstance(old[key], dict):
            paths += added_paths(value, old[key], f"{path}.")
    return paths


def listed_defaults() -> dict[str, Any]:
    """What ``autoroll.compat.addedSince020`` holds (the define's body is plain YAML)."""
    text = COMPAT.read_text(encoding="utf-8")
    body = re.search(
        r'\{\{- define "autoroll\.compat\.addedSince020" -\}\}\n(.*?)\{\{- end -\}\}', text, re.S
    )
    assert body is not None, f"no autoroll.compat.addedSince020 in {COMPAT}"
    loaded: dict[str, Any] = yaml.safe_load(body.group(1))
    return loaded


def at(values: dict[str, Any], path: str) -> Any:
    """The value at a dotted path; KeyError naming the path when a part is missing."""
    node: Any = values
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(path)
        node = node[part]
    return node


CURRENT = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
ADDED = added_paths(CURRENT, released_values(RELEASE_0_2_0))


def render(*sets: str) -> str:
    helm = require_tool("helm")
    args = [helm, "template", "rel", str(CHART), "-n", "autoroll", "-f", str(REQUIRED)]
    for expression in JOB_GROUP:
        args += ["--set", expression]
    for path in sets:
        args += ["--set", f"{path}=null"]
    result = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, f"with {sets} removed: {result.stderr}"
    return result.stdout


def test_the_0_2_0_release_lacks_the_keys_this_test_is_about() -> None:
    assert {"workloadKinds", "guardrails", "forgejo.scheme", "caBundle"} <= set(ADDED)
    assert "jobDefaults.imagePullSecrets" in ADDED


def test_the_render_holds_the_job_group() -> None:
    assert 'name: "rel-autoroll-db-migrate-946f9a6a"' in render()


@pytest.mark.parametrize("path", ADDED)
def test_every_added_key_is_backfilled_with_its_values_yaml_default(path: str) -> None:
    """In the backfill list, or, for a jobDefaults key, in the job groups' own layer 0
    (``autoroll.jobs.builtinDefaults``, mirrored by jobhash): a reused release lacks neither."""
    sources = {"autoroll.compat.addedSince020": listed_defaults()}
    if path.startswith("jobDefaults."):
        sources["autoroll.jobs.builtinDefaults"] = {"jobDefaults": builtin_defaults()}
    found = {}
    for name, values in sources.items():
        try:
            found[name] = at(values, path)
        except KeyError:
            continue
    if not found:
        pytest.fail(
            f"{path} is new since 0.2.0: add it to autoroll.compat.addedSince020 ({COMPAT})"
        )
    for name, backfilled in found.items():
        assert backfilled == at(CURRENT, path), f"{path}: {name} differs from values.yaml's"


@pytest.mark.parametrize("path", ADDED)
def test_a_reused_release_without_the_key_renders_as_the_default(path: str) -> None:
    assert render(path) == render()


def test_a_reused_release_without_any_added_key_renders_as_the_default() -> None:
    assert render(*ADDED) == render()
