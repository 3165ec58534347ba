"""The chart's alert rules and Grafana dashboard, checked with the real promtool and against
the real controller's /metrics.

The rules are rendered by helm from the chart as a user enables them, checked with
``promtool check rules`` and unit-tested with ``promtool test rules``
(``data/autoroll_alerts_test.yaml``: each alert fires on its condition and stays quiet on its
control). Every dashboard query is parsed by promtool (as a recording rule), and every
``autoroll_*`` series that a rule or a panel names is served by ``autoroll serve``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from tests.conftest import require_tool
from tests.integration.test_server import start_server
from tests.support.serve import Serve

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "autoroll"
ALERT_TESTS = Path(__file__).parent / "data" / "autoroll_alerts_test.yaml"
SERIES = re.compile(r"\bautoroll_[a-z_]+\b")


def render(*values: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [
            require_tool("helm"),
            "template",
            "a",
            str(CHART),
            "--namespace",
            "autoroll",
            "-f",
            str(ROOT / "examples" / "values-minimal.yaml"),
            *(arg for value in values for arg in ("--set", value)),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [d for d in docs if d["kind"] == kind]
    return found


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [require_tool("promtool"), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=cwd,
    )


@pytest.fixture(scope="module")
def rules() -> dict[str, Any]:
    spec: dict[str, Any] = one(render("prometheusRule.enabled=true"), "PrometheusRule")["spec"]
    return spec


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    configmap = one(render("grafanaDashboard.enabled=true"), "ConfigMap")
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    parsed: dict[str, Any] = json.loads(configmap["data"]["autoroll.json"])
    return parsed


def panel_queries(dashboard: dict[str, Any]) -> list[str]:
    return [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]


def test_the_rules_pass_promtool_check_and_their_unit_tests(
    rules: dict[str, Any], tmp_path: Path
) -> None:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules))
    checked = promtool("check", "rules", "rules.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 6 rules found" in checked.stdout
    shutil.copy(ALERT_TESTS, tmp_path / "alerts_test.yaml")
    tested = promtool("test", "rules", "alerts_test.yaml", cwd=tmp_path)
    assert tested.returncode == 0, tested.stdout + tested.stderr


@pytest.mark.parametrize(
    ("index", "alert"), [(0, "AutorollRolloutHalted"), (5, "AutorollDigestQuarantined")]
)
def test_a_broken_expectation_fails_the_unit_tests(
    rules: dict[str, Any], tmp_path: Path, index: int, alert: str
) -> None:
    """The control: the unit tests can fail (a rule quieter than its test expects)."""
    quiet = json.loads(json.dumps(rules))
    assert quiet["groups"][0]["rules"][index]["alert"] == alert
    quiet["groups"][0]["rules"][index]["expr"] = "vector(0) > 1"
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(quiet))
    shutil.copy(ALERT_TESTS, tmp_path / "alerts_test.yaml")
    tested = promtool("test", "rules", "alerts_test.yaml", cwd=tmp_path)
    assert tested.returncode != 0
    assert alert in tested.stdout + tested.stderr


def test_every_dashboard_query_parses(dashboard: dict[str, Any], tmp_path: Path) -> None:
    queries = panel_queries(dashboard)
    assert len(queries) >= 10
    recording = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {"record": f"autoroll_dashboard:panel_{n}", "expr": query}
                    for n, query in enumerate(queries)
                ],
            }
        ]
    }
    (tmp_path / "panels.yaml").write_text(yaml.safe_dump(recording))
    checked = promtool("check", "rules", "panels.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def served_series(text: str) -> set[str]:
    """Every series name a scrape of this exposition can return (from its TYPE lines, so a
    labelled metric with no sample yet counts too)."""
    names: set[str] = set()
    for line in text.splitlines():
        if not line.startswith("# TYPE "):
            continue
        _, _, family, kind = line.split(maxsplit=3)
        base = family.removesuffix("_total")
        if kind == "counter":
            names |= {f"{base}_total", f"{base}_created"}
        elif kind == "histogram":
            names |= {f"{family}_bucket", f"{family}_sum", f"{family}_count", f"{family}_created"}
        else:
            names.add(family)
    return names


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    with start_server(tmp_path_factory.mktemp("monitoring")) as srv:
        yield srv


def test_every_series_the_rules_and_panels_name_is_served(
    server: Serve, rules: dict[str, Any], dashboard: dict[str, Any]
) -> None:
    served = served_series(requests.get(f"{server.url}/metrics", timeout=5).text)
    assert "autoroll_ticks_total" in served and "autoroll_leader" in served
    named = {
        name
        for text in [
            *(rule["expr"] for rule in rules["groups"][0]["rules"]),
            *(rule["annotations"]["description"] for rule in rules["groups"][0]["rules"]),
            *panel_queries(dashboard),
            *(v.get("query", "") for v in dashboard["templating"]["list"]),
        ]
        for name in SERIES.findall(str(text))
        if not name.startswith("autoroll_dashboard")
    }
    assert named, "no series named: the pattern is broken"
    assert sorted(named - served) == []
    assert "autoroll_not_a_metric_total" not in served  # the control: unknown names are caught
