"""The import contracts in pyproject.toml hold, and break when the layering is broken.

``make lint`` runs ``lint-imports`` on the tree; these tests run it on a copy of the package
with one import added, to show the contracts would catch it (a contract that can never fail
proves nothing). They live in tests/lint, not tests/unit, because they need the lint tools,
which the lowest-versions tier (``make test-lowest``: tests/unit and tests/integration)
does not install.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_copy(tmp_path: Path, module: str = "", line: str = "") -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on a copy of autoroll/ (and jobhash/) with ``line`` appended to
    ``module``'s file."""
    for package in ("autoroll", "jobhash"):
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    if module:
        path = tmp_path / (module.replace(".", "/") + ".py")
        path.write_text(path.read_text() + f"\n{line}\n")
    return lint(tmp_path)


def lint(tree: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with the copied pyproject.toml, importing from ``tree`` only."""
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(tree / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_contracts_hold_on_the_tree_as_it_is(tmp_path: Path) -> None:
    done = lint_copy(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        # the orchestration must not know the Kubernetes client, nor the adapter
        (
            "autoroll.controller.reconciler",
            "import kubernetes.client",
            "No Kubernetes, HTTP or web library",
        ),
        ("autoroll.controller.reconciler", "import autoroll.kube.cluster", "Controller layers"),
        # the pure core must not reach up, or out to HTTP
        ("autoroll.core.decide", "import autoroll.controller.reconciler", "Controller layers"),
        ("autoroll.core.decide", "import requests", "No Kubernetes, HTTP or web library"),
        # instruments sit below the shell they count for
        ("autoroll.instruments.metrics", "import autoroll.controller.worker", "Controller layers"),
        # the shell and the adapters are siblings: none of them imports another
        ("autoroll.kube.cache", "import autoroll.controller.pacer", "Controller layers"),
        ("autoroll.registry.client", "import autoroll.kube.cluster", "Controller layers"),
        ("autoroll.config.reader", "import autoroll.instruments.logs", "Controller layers"),
    ],
)
def test_a_wrong_import_breaks_a_contract(
    tmp_path: Path, module: str, line: str, broken: str
) -> None:
    done = lint_copy(tmp_path, module, line)
    assert done.returncode != 0, done.stdout
    broken_lines = [row for row in done.stdout.splitlines() if row.endswith("BROKEN")]
    assert any(row.startswith(broken) for row in broken_lines), done.stdout


def test_a_new_module_must_be_placed_in_a_layer(tmp_path: Path) -> None:
    done = lint_copy(tmp_path)
    assert done.returncode == 0
    (tmp_path / "autoroll" / "stray.py").write_text('"""Not in any layer."""\n')
    again = lint(tmp_path)
    assert again.returncode != 0
    assert "autoroll.stray" in again.stdout
