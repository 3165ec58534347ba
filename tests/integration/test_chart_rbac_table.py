"""The chart README's RBAC table is what the chart grants (issue 24).

Each row names the values it is about (`--set` form) and the ClusterRole's rules, whole; the
chart is rendered with those values and its ClusterRole must hold exactly those rules, so a
template change that grants more (or less) fails here until the table says so.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import require_tool

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "autoroll"
Rule = tuple[str, str, str]  # (apiGroup, resource, verb)


def table_rows() -> list[tuple[str, str]]:
    text = (CHART / "README.md.gotmpl").read_text(encoding="utf-8")
    section = text[text.index("### RBAC") :]
    section = section[: section.index("\n\n", section.index("|---|"))]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and not set(cells[0]) <= {"-"} and cells[0] != "values (`--set`)":
            rows.append((cells[0], cells[1]))
    return rows


def documented(rules: str) -> set[Rule]:
    out: set[Rule] = set()
    for item in re.findall(r"`([^`]+)`", rules):
        resources, _, verbs = item.partition(": ")
        group, _, names = resources.rpartition("/") if "/" in resources else ("", "", resources)
        if group == "pods":  # a subresource (pods/eviction) is core
            group, names = "", resources
        for name in names.split(","):
            out |= {(group, name, verb) for verb in verbs.split(",")}
    return out


def rendered(setting: str) -> set[Rule]:
    args = [require_tool("helm"), "template", "rel", str(CHART), "-n", "autoroll"]
    args += ["-f", str(CHART / "tests" / "values" / "required.yaml")]
    args += ["-s", "templates/clusterrole.yaml"]
    if setting != "defaults":
        args += ["--set", setting.strip("`")]
    out = subprocess.run(args, capture_output=True, text=True, timeout=60, check=True).stdout
    [role] = [d for d in yaml.safe_load_all(out) if d]
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


ROWS = table_rows()


def test_the_table_has_the_defaults_and_every_value_that_changes_the_rules() -> None:
    assert [r[0] for r in ROWS][:1] == ["defaults"] and len(ROWS) >= 6


@pytest.mark.parametrize(("setting", "rules"), ROWS, ids=[r[0].strip("`") for r in ROWS])
def test_each_row_is_exactly_the_rendered_cluster_role(setting: str, rules: str) -> None:
    assert rendered(setting) == documented(rules)
