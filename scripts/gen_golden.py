#!/usr/bin/env python3
"""Generate the jobGroups golden vectors by running the real ``helm template``.

Why: the Job-name hash is a public contract shared by the chart (``_jobs.tpl``) and its Python
mirror (``jobhash/``). The expected values must come from Helm itself, never from the mirror,
so this script renders every case with the real chart and records what Helm produced.

How: the chart is copied to a temporary directory and one debug template is added there (the
real chart has no debug switch). That template prints, base64-encoded, the plan items of
``autoroll.jobGroupPlan``: the exact JSON string that was hashed, the sha256 and the name.
The cases rendered are ``CASES`` in ``scripts/golden_cases.py``.

Outputs (both committed):
  tests/golden/jobhash_vectors.json                   {description, release, values,
                                                       expected_json, expected_sha256,
                                                       expected_name} per case
  charts/autoroll/tests/golden_vectors_test.yaml      the helm-unittest suite derived from it

Usage:  source .tools/env && python3 scripts/gen_golden.py [--check]
``--check`` regenerates in memory and exits 1 if either file differs (the vectors are
re-rendered with helm, so a changed algorithm shows up as a diff).
"""

from __future__ import annotations

import argparse
import base64
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "charts" / "autoroll"
VECTORS = ROOT / "tests" / "golden" / "jobhash_vectors.json"
SUITE = CHART / "tests" / "golden_vectors_test.yaml"
NAMESPACE = "golden"
HASH_ANNOTATION = "autoroll.aethnet.se/spec-hash"

DEBUG_TEMPLATE = """\
{{- /* golden-vector debug output; exists only in the generator's temporary chart copy */ -}}
# golden: {{ include "autoroll.jobGroupPlan" . | b64enc }}
"""

# The cases live beside this script; it is also loaded by path (tests/unit), so say where.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from golden_cases import CASES  # noqa: E402


def yaml_safe_json(value: Any) -> str:
    """JSON text that YAML 1.1 parsers (Helm, helm-unittest) read back as the same value.

    JSON is YAML, except that YAML rejects some raw characters and surrogate escapes, and
    YAML 1.1 folds U+2028/U+2029 as line breaks. So: raw UTF-8, but escape those characters.
    """
    out = []
    for ch in json.dumps(value, ensure_ascii=False):
        code = ord(ch)
        printable = (
            ch in "\t\n\r"
            or 0x20 <= code <= 0x7E
            or code == 0x85
            or 0xA0 <= code <= 0xD7FF
            or 0xE000 <= code <= 0xFFFD
            or code >= 0x10000
        )
        out.append(ch if printable and code not in (0x2028, 0x2029) else f"\\u{code:04x}")
    return "".join(out)


def render_plan(chart_copy: Path, release: str, values: dict[str, Any], workdir: Path) -> Any:
    """Run ``helm template`` on the chart copy and return the decoded plan items."""
    values_file = workdir / "values.json"
    values_file.write_text(yaml_safe_json(values), encoding="utf-8")
    result = subprocess.run(
        [
            "helm",
            "template",
            release,
            str(chart_copy),
            "--namespace",
            NAMESPACE,
            "-f",
            str(values_file),
            "--set",
            "controller.enabled=false",
            "--show-only",
            "templates/zz_golden_debug.yaml",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if result.returncode != 0:
        raise SystemExit(f"helm template failed for release {release!r}:\n{result.stderr}")
    for line in result.stdout.splitlines():
        if line.startswith("# golden: "):
            return json.loads(base64.b64decode(line.removeprefix("# golden: ")))["items"]
    raise SystemExit(f"no golden line in helm output for release {release!r}:\n{result.stdout}")


def build_vectors() -> list[dict[str, Any]]:
    """Render every case with real helm and return the vectors, in CASES order."""
    if shutil.which("helm") is None:
        raise SystemExit("helm is not on PATH; run `source .tools/env` first")
    vectors = []
    with tempfile.TemporaryDirectory(prefix="autoroll-golden-") as tmp:
        work = Path(tmp)
        chart_copy = work / "autoroll"
        shutil.copytree(CHART, chart_copy, ignore=shutil.ignore_patterns("tests"))
        (chart_copy / "templates" / "zz_golden_debug.yaml").write_text(DEBUG_TEMPLATE)
        for case in CASES:
            items = render_plan(chart_copy, case["release"], case["values"], work)
            if len(items) != 1:
                raise SystemExit(f"case {case['description']!r}: want 1 entry, got {len(items)}")
            item = items[0]
            vectors.append(
                {
                    "description": case["description"],
                    "release": case["release"],
                    "values": case["values"],
                    "expected_json": item["spec"],
                    "expected_sha256": item["hash"],
                    "expected_name": item["name"],
                    "kind": item["kind"],
                }
            )
    return vectors


def vectors_text(vectors: list[dict[str, Any]]) -> str:
    """The vectors file: the contract, plus a note on how it was made."""
    doc = {
        "comment": (
            "Golden vectors for the jobGroups spec hash (docs/jobhash-algorithm.md). "
            "Generated by scripts/gen_golden.py with the real helm; do not edit by hand. "
            "values are a values file (numbers load as float64); release is the release name; "
            f"namespace is {NAMESPACE!r}."
        ),
        "vectors": vectors,
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def suite_text(vectors: list[dict[str, Any]]) -> str:
    """The helm-unittest suite checking every vector's name and full-hash annotation."""
    lines = [
        "# Generated by scripts/gen_golden.py from tests/golden/jobhash_vectors.json;",
        "# do not edit (tests/unit/test_golden_suite_in_sync.py fails when it is stale).",
        "suite: golden vectors (jobGroups names and spec hashes)",
        "templates:",
        "  - templates/job-groups.yaml",
        "  - templates/cronjob-groups.yaml",
        "set:",
        "  # jobGroups only: without the controller no controller values are required.",
        "  controller.enabled: false",
        "tests:",
    ]
    for v in vectors:
        template = (
            "templates/cronjob-groups.yaml"
            if v["kind"] == "CronJob"
            else "templates/job-groups.yaml"
        )
        test = {
            "it": v["description"],
            "template": template,
            "release": {"name": v["release"], "namespace": NAMESPACE},
            "set": v["values"],
            "asserts": [
                {"hasDocuments": {"count": 1}},
                {"equal": {"path": "metadata.name", "value": v["expected_name"]}},
                {
                    "equal": {
                        "path": f'metadata.annotations["{HASH_ANNOTATION}"]',
                        "value": v["expected_sha256"],
                    }
                },
            ],
        }
        # JSON is valid YAML; one flow-style document per test keeps the file diffable.
        lines.append("  - " + yaml_safe_json(test))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="fail if the committed files differ")
    args = parser.parse_args(argv)
    vectors = build_vectors()
    outputs = {VECTORS: vectors_text(vectors), SUITE: suite_text(vectors)}
    if args.check:
        stale = [
            str(p.relative_to(ROOT))
            for p, text in outputs.items()
            if not p.exists() or p.read_text(encoding="utf-8") != text
        ]
        if stale:
            print(f"stale (run scripts/gen_golden.py): {', '.join(stale)}", file=sys.stderr)
            return 1
        return 0
    for path, text in outputs.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
