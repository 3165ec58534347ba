"""The README's way to install `jobhash` gives a working CLI (issue 24).

The README's wheel line is taken from the README, with the wheel this checkout builds in place
of its placeholder, and run in a fresh venv: `jobhash names` then previews the example's Job
names from the installed package alone (its own chart copy, not this source tree). The one
deviation: ``--no-deps``, because the tests reach no package index; the dependencies come
from the dev venv through a path file added after the install, behind the venv's own
site-packages, so what runs is the installed wheel.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def readme_wheel_install() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("or from a\nwheel file, `") + len("or from a\nwheel file, `")
    command = shlex.split(text[start : text.index("`", start)])
    assert command[:2] == ["pip", "install"] and command[2].endswith("-py3-none-any.whl")
    return command


def test_the_readme_wheel_install_gives_a_working_jobhash(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "-w", str(dist), "--no-deps",
         "--no-build-isolation", "-q"],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    (wheel,) = dist.glob("autoroll-*-py3-none-any.whl")
    target = tmp_path / "venv"
    venv.create(target, with_pip=True)
    python = target / "bin" / "python"
    _, _, *args = readme_wheel_install()
    args = [str(wheel) if a.endswith(".whl") else a for a in args]
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", *args],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout.strip()  # fmt: skip
    (Path(site) / "zz-dev-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    names = subprocess.run(
        [str(target / "bin" / "jobhash"), "names", "--release", "demo", "-f",
         str(ROOT / "examples" / "jobs-values.yaml")],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert names.returncode == 0, names.stderr
    assert "demo-autoroll-" in names.stdout
    where = subprocess.run(
        [str(python), "-c", "import jobhash; print(jobhash.__file__)"],
        capture_output=True, text=True, timeout=60, check=True, cwd=tmp_path,
    ).stdout  # fmt: skip
    assert where.startswith(site), where
