"""Values reused from an older release render as the defaults would (issue 24).

`helm upgrade --reuse-values` gives the templates the old release's values: every key added
since then is missing. ``autoroll.compat.backfill`` (templates/_compat.tpl) puts each back
with its default. Here every key that today's values.yaml has and the released 0.2.0's does
not is removed (``--set key=null``, which is what a reused older release looks like), one at
a time and all at once, and the render must equal the default render, byte for byte. A new
value not added to ``autoroll.compat.addedSince020`` fails this test.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import require_tool

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "autoroll"
RELEASE_0_2_0 = ROOT / "tests" / "e2e" / "releases" / "autoroll-0.2.0.tgz"
REQUIRED = CHART / "tests" / "values" / "required.yaml"


def released_values(package: Path) -> dict[str, Any]:
    with tarfile.open(package) as tar:
        member = tar.extractfile("autoroll/values.yaml")
        assert member is not None
        loaded: dict[str, Any] = yaml.safe_load(io.TextIOWrapper(member, encoding="utf-8"))
        return loaded


def added_paths(new: dict[str, Any], old: dict[str, Any], prefix: str = "") -> list[str]:
    """The outermost dotted paths of ``new`` that ``old`` lacks (job groups excepted: their
    settings are layered, never read bare)."""
    paths: list[str] = []
    for key, value in new.items():
        path = f"{prefix}{key}"
        if key not in old:
            paths.append(path)
        elif isinstance(value, dict) and isinstance(old[key], dict) and key != "jobDefaults":
            paths += added_paths(value, old[key], f"{path}.")
    return paths


CURRENT = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
ADDED = added_paths(CURRENT, released_values(RELEASE_0_2_0))


def render(*sets: str) -> str:
    helm = require_tool("helm")
    args = [helm, "template", "rel", str(CHART), "-n", "autoroll", "-f", str(REQUIRED)]
    for path in sets:
        args += ["--set", f"{path}=null"]
    result = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, f"with {sets} removed: {result.stderr}"
    return result.stdout


def test_the_0_2_0_release_lacks_the_keys_this_test_is_about() -> None:
    assert {"workloadKinds", "guardrails", "forgejo.scheme", "caBundle"} <= set(ADDED)


@pytest.mark.parametrize("path", ADDED)
def test_a_reused_release_without_the_key_renders_as_the_default(path: str) -> None:
    assert render(path) == render()


def test_a_reused_release_without_any_added_key_renders_as_the_default() -> None:
    assert render(*ADDED) == render()
