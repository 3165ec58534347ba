"""Parity: for generated jobGroups, every Job/CronJob name jobhash predicts is the one
the real `helm template` renders, the full spec hash matches too, and so does the whole
rendered Job spec (a CronJob's whole jobTemplate), labels and annotations of the pod template
included: that is what `jobhash diff` compares to tell a refused update.

The real Helm is the oracle. Each example is one values file written as YAML text (raw YAML
1.1 scalars such as `y`, `on`, `0o17`, `1e3`, `2001-12-14` included, strings with `<>&`,
U+2028, control characters, emoji and other non-ASCII), plus `--set`, `--set-string`,
`--set-json`, `--set-file` and `--set-literal` overrides (given to helm interleaved; both
apply them in Helm's order) and a release name (long ones included). Many groups and jobs go
into one helm call.

When Helm refuses the input (schema, a chart `fail`, a YAML error), jobhash must refuse it too,
and a chart `fail` message jobhash reports must appear in Helm's error. jobhash may refuse
input it cannot mirror (UnmirrorableError); the generator avoids those, and the test checks
they stay rare. Example count: JOBHASH_PARITY_EXAMPLES (default 300).

The generators live beside it: parity_values.py (the chart values), parity_cases.py (one
example: values files, overrides, release name) and parity_yaml.py (the YAML text).
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, note, settings

from jobhash.errors import RenderError, UnmirrorableError, ValuesError
from jobhash.gojson import marshal
from jobhash.goyaml import unmarshal_document
from jobhash.plan import PlanItem, plan
from jobhash.spec import job_group_template_labels
from jobhash.values import ValueSources, load, load_chart
from tests.conftest import require_tool
from tests.integration.parity_cases import Case, cases
from tests.integration.parity_values import CHART_DIR

pytestmark = pytest.mark.integration

EXAMPLES = int(os.environ.get("JOBHASH_PARITY_EXAMPLES", "300"))
# CI replays the same examples (derandomize); set JOBHASH_PARITY_RANDOM=1 to explore new ones.
RANDOM = os.environ.get("JOBHASH_PARITY_RANDOM", "") == "1"
HASH_ANNOTATION = "autoroll.aethnet.se/spec-hash"


# ---------------------------------------------------------------------------------------------
# The two sides


@dataclass(frozen=True)
class Rendered:
    ok: bool
    names: frozenset[tuple[str, str, str]]  # (kind, name, full spec hash)
    error: str
    unmirrorable: bool = False
    template_fail: bool = False
    # (kind, name) -> the JSON of the Job .spec, or of the CronJob's whole jobTemplate
    specs: dict[tuple[str, str], str] = field(default_factory=dict)


FLAG_FIELDS = (
    ("--set-literal", "set_literals"),
    ("--set-file", "set_files"),
    ("--set-string", "set_strings"),
    ("--set", "sets"),
    ("--set-json", "set_jsons"),
)  # reversed: Helm must sort them itself


def render_helm(helm: str, case: Case, sources: ValueSources) -> Rendered:
    command = [helm, "template", case.release, str(CHART_DIR)]
    for path in sources.files:
        command += ["-f", str(path)]
    for flag, name in FLAG_FIELDS:
        for expression in getattr(sources, name):
            command += [flag, expression]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if result.returncode != 0:
        return Rendered(False, frozenset(), result.stderr)
    return Rendered(
        True, frozenset(manifest_names(result.stdout)), "", specs=manifest_specs(result.stdout)
    )


_KIND = re.compile(r"^kind: (Job|CronJob)$", re.MULTILINE)
_NAME = re.compile(r'^metadata:\n  name: "(.*)"$', re.MULTILINE)  # written with quote
_FULL_HASH = re.compile(
    r"^    autoroll\.aethnet\.se/spec-hash: \"?([0-9a-f]{64})\"?$", re.MULTILINE
)
_SHORT_HASH = re.compile(r"^    autoroll\.aethnet\.se/spec-hash: \"([0-9a-f]{8})\"$", re.MULTILINE)


def manifest_names(stream: str) -> set[tuple[str, str, str]]:
    """(kind, name, hash) of every Job/CronJob in `helm template` output.

    Read with regular expressions, not a YAML parser, so a document the YAML side would read
    differently cannot hide a wrong name; the full hash is taken as its 8-character label when
    the annotations are missing.
    """
    found = set()
    for document in re.split(r"^---$", stream, flags=re.MULTILINE):
        kind = _KIND.search(document)
        if kind is None:
            continue
        name = _NAME.search(document)
        assert name is not None, document
        full = _FULL_HASH.search(document)
        short = _SHORT_HASH.search(document)
        assert short is not None, document
        found.add((kind.group(1), name.group(1), full.group(1) if full else short.group(1)))
    return found


def manifest_specs(stream: str) -> dict[tuple[str, str], str]:
    """(kind, name) -> Go JSON of the Job's spec / the CronJob's jobTemplate, read back the way
    Helm and Kubernetes read YAML (go-yaml, numbers as float64: jobhash.goyaml)."""
    found = {}
    for document in re.split(r"^---$", stream, flags=re.MULTILINE):
        if _KIND.search(document) is None:
            continue
        body = document.split("\n", 1)[1] if document.startswith("\n#") else document
        doc = unmarshal_document(body.encode("utf-8"), "helm output")
        meta = doc["metadata"]
        assert isinstance(meta, dict) and isinstance(doc["spec"], dict), doc
        part = doc["spec"] if doc["kind"] == "Job" else doc["spec"]["jobTemplate"]
        found[(str(doc["kind"]), str(meta["name"]))] = marshal(part)
    return found


def rendered_part(item: PlanItem) -> str:
    """jobhash's Job spec, or the CronJob's jobTemplate (its labels, then the Job spec)."""
    spec = item.job_spec()
    if item.kind == "Job":
        return marshal(spec)
    labels = job_group_template_labels(item.group, item.job, item.hash)
    return marshal({"metadata": {"labels": labels}, "spec": spec})


CHART = load_chart(CHART_DIR)
# pull_secrets: rendered entries whose pod spec has imagePullSecrets (the key is exercised).
STATS = {"examples": 0, "rendered": 0, "refused": 0, "unmirrorable": 0, "entries": 0,
         "pull_secrets": 0}  # fmt: skip


def render_jobhash(case: Case, sources: ValueSources) -> Rendered:
    try:
        items = plan(load(CHART, sources).values, release=case.release, chart_name=CHART.name)
    except UnmirrorableError as err:
        return Rendered(False, frozenset(), str(err), unmirrorable=True)
    except RenderError as err:
        return Rendered(False, frozenset(), err.message, template_fail=True)
    except ValuesError as err:
        return Rendered(False, frozenset(), str(err))
    return Rendered(
        True,
        frozenset((i.kind, i.name, i.hash) for i in items),
        "",
        specs={(i.kind, i.name): rendered_part(i) for i in items},
    )


@pytest.fixture(scope="module")
def helm() -> str:
    return require_tool("helm")


@pytest.mark.timeout(1200)  # hundreds of helm runs; the suite default is 300 s
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not RANDOM,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.function_scoped_fixture],
)  # fmt: skip
@given(case=cases())
def test_jobhash_names_equal_helm_template(helm: str, tmp_path: Path, case: Case) -> None:
    files = case.files(tmp_path)
    for path in files:
        note(f"{path.name}:\n{path.read_text(encoding='utf-8')}")
    sources = case.sources(tmp_path, files)
    note(f"flags: {case.flags}")
    ours = render_jobhash(case, sources)
    STATS["examples"] += 1
    if ours.unmirrorable:
        STATS["unmirrorable"] += 1
        return
    theirs = render_helm(helm, case, sources)
    assert ours.ok == theirs.ok, (
        f"helm {'rendered' if theirs.ok else 'failed'} but jobhash "
        f"{'rendered' if ours.ok else 'failed'}:\njobhash: {ours.error}\nhelm: {theirs.error}"
    )
    if ours.ok:
        STATS["rendered"] += 1
        STATS["entries"] += len(ours.names)
        STATS["pull_secrets"] += sum('"imagePullSecrets":' in spec for spec in ours.specs.values())
        helm_short = {entry for entry in theirs.names if len(entry[2]) == 8}
        ours_comparable = {
            (kind, name, digest[:8]) if (kind, name, digest[:8]) in helm_short else entry
            for entry in ours.names
            for kind, name, digest in [entry]
        }
        assert ours_comparable == theirs.names
        assert ours.specs == theirs.specs
    else:
        STATS["refused"] += 1
        if ours.template_fail:
            # The chart's own fail message, verbatim (Helm may wrap it in template context).
            assert ours.error in theirs.error.replace("\n", " ")


def test_parity_stats_are_meaningful() -> None:
    """Runs after the property test (file order): most examples must really render."""
    if STATS["examples"] == 0:
        pytest.skip("the parity property test did not run in this session")
    assert STATS["examples"] >= EXAMPLES
    # Measured 30-46% rendered across sessions (the rest are refusals both sides agree on).
    assert STATS["rendered"] >= STATS["examples"] // 4, STATS
    assert STATS["unmirrorable"] <= STATS["examples"] // 20, STATS
    if EXAMPLES >= 300:  # the locked tier's count; the lowest tier's 100 drew none (measured)
        assert STATS["pull_secrets"] > 0, STATS
    print(f"parity stats: {STATS}")
