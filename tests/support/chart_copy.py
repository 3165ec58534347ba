"""The working-tree chart copied under another version and appVersion: what a chart release
looks like to ``helm``, for the upgrade and hash-invariance tests alike."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

CHART = Path(__file__).resolve().parents[2] / "charts" / "autoroll"


def released_as(target: Path, version: str, app_version: str) -> Path:
    """``target`` made a copy of the chart (its helm-unittest suites left out) whose
    ``Chart.yaml`` says ``version`` and ``appVersion``."""
    shutil.copytree(CHART, target, ignore=shutil.ignore_patterns("tests"))
    meta_file = target / "Chart.yaml"
    meta = meta_file.read_text(encoding="utf-8")
    meta = re.sub(r"(?m)^version: .*$", f"version: {version}", meta)
    meta = re.sub(r"(?m)^appVersion: .*$", f"appVersion: {json.dumps(app_version)}", meta)
    meta_file.write_text(meta, encoding="utf-8")
    return target
