#!/usr/bin/env python3
"""Generate the jobGroups golden vectors by running the real ``helm template``.

Why: the Job-name hash is a public contract shared by the chart (``_jobs.tpl``) and its Python
mirror (``jobhash/``). The expected values must come from Helm itself, never from the mirror,
so this script renders every case with the real chart and records what Helm produced.

How: the chart is copied to a temporary directory and one debug template is added there (the
real chart has no debug switch). That template prints, base64-encoded, the plan items of
``autoroll.jobGroupPlan``: the exact JSON string that was hashed, the sha256 and the name.

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

LONG_RELEASE = "a-very-long-release-name-for-testing-name-budgets-x1"  # 52 characters


def migrator(tag: str = "v1", *, key: str = "migrate", **job: Any) -> dict[str, Any]:
    """The worked example (group db, job ``key`` migrate), with extra job settings."""
    return {
        "jobGroups": {
            "db": {
                "image": {"repository": "my/migrator", "tag": tag},
                "jobs": {key: {"command": "./migrate.sh", **job}},
            }
        }
    }


CASES: list[dict[str, Any]] = [
    {
        "description": "worked example: group db, my/migrator:v1, job migrate, ./migrate.sh",
        "release": "demo",
        "values": migrator(),
    },
    {
        "description": "worked example with tag v2: only the hash changes",
        "release": "demo",
        "values": migrator("v2"),
    },
    {
        "description": "unicode, <>& and escapes in env values and pod annotations",
        "release": "demo",
        "values": migrator(
            env={
                "GREETING": "héllo wörld 日本語 😀",
                "HTML": "<a href='x'>&amp;</a>",
                "SEPARATORS": "line\u2028para\u2029end",
                "CONTROL": 'tab\tnl\nquote"back\\slash\bbell\fform\u0001',
            },
            podAnnotations={"note": "ünïcødé <ok> & fine"},
        ),
    },
    {
        "description": "numbers in env are rendered like Go encoding/json (1e-7, 1e+21, 100000000)",
        "release": "demo",
        "values": migrator(
            env={
                "BIG": 100000000,
                "HUGE": 1e21,
                "JUST_BELOW": 1e20,
                "HALF": 1.5,
                "TINY": 1e-7,
                "SMALL": 0.000001,
                "ZERO": 0,
                "NEG": -42,
                "FRACTION": 123456789.125,
                "TENTH": 0.1,
            },
            backoffLimit=0,
            activeDeadlineSeconds=600,
            ttlSecondsAfterFinished=3600,
        ),
    },
    {
        "description": "bools in env, and false/0 override defaults (hashSuffix false: no hash)",
        "release": "demo",
        "values": {
            "jobDefaults": {
                "backoffLimit": 6,
                "securityContext": {"runAsNonRoot": True, "readOnlyRootFilesystem": True},
                "env": {"DEBUG": True},
            },
            "jobGroups": {
                "app": {
                    "image": {"repository": "my/app", "tag": "1.2.3"},
                    "hashSuffix": False,
                    "jobs": {
                        "seed": {
                            "backoffLimit": 0,
                            "securityContext": {"readOnlyRootFilesystem": False},
                            "env": {"DEBUG": False, "VERBOSE": True},
                            "command": ["./seed", "--once"],
                        }
                    },
                }
            },
        },
    },
    {
        "description": "env precedence across four layers, valueFrom, envFrom union",
        "release": "demo",
        "values": {
            "jobDefaults": {
                "env": {"LAYER": "defaults", "D": "d", "SHARED": "defaults"},
                "envConfigMaps": ["common"],
                "envSecrets": ["base-secret"],
            },
            "jobGroups": {
                "db": {
                    "image": {"repository": "my/migrator", "tag": "v1"},
                    "env": {"LAYER": "group", "G": "g", "SHARED": "group"},
                    "envConfigMaps": ["db-config", "common"],
                    "envSecrets": ["db-secret"],
                    "jobs": {
                        "migrate": {
                            "command": "./migrate.sh",
                            "env": {
                                "LAYER": "job",
                                "PASSWORD": {
                                    "valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}}
                                },
                                "SHARED": {
                                    "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}
                                },
                            },
                            "envSecrets": ["base-secret", "job-secret"],
                            "tasks": [
                                {
                                    "name": "check",
                                    "command": ["./check.sh"],
                                    "env": {"LAYER": "task"},
                                }
                            ],
                        }
                    },
                }
            },
        },
    },
    {
        "description": "tasks: ordered initContainers, image merged over the job's, digest tag",
        "release": "demo",
        "values": migrator(
            args=["--verbose"],
            tasks=[
                {
                    "name": "wait-db",
                    "image": {"repository": "busybox", "tag": "1.36"},
                    "command": ["sh", "-c", "until nc -z db 5432; do sleep 1; done"],
                },
                {
                    "name": "backup",
                    "image": {"tag": "sha256:" + "ab" * 32},
                    "command": "./backup.sh",
                    "args": ["--to", "s3://bucket"],
                },
                {"name": "lint", "image": {"pullPolicy": "Always"}},
            ],
            volumes=[{"name": "scratch", "emptyDir": {}}],
            volumeMounts=[{"name": "scratch", "mountPath": "/scratch"}],
            resources={"limits": {"memory": "256Mi"}, "requests": {"cpu": "100m"}},
        ),
    },
    {
        "description": "CronJob: schedule and CronJob-only fields are not hashed, name fits 52",
        "release": "demo",
        "values": {
            "jobGroups": {
                "maintenance": {
                    "image": {
                        "repository": "my/tools",
                        "tag": "2024.05",
                        "pullPolicy": "IfNotPresent",
                    },
                    "jobs": {
                        "vacuum": {
                            "schedule": "30 3 * * *",
                            "timeZone": "Etc/UTC",
                            "successfulJobsHistoryLimit": 1,
                            "suspend": False,
                            "command": ["./vacuum.sh", "--analyze"],
                        }
                    },
                }
            }
        },
    },
    {
        "description": "long release name: the fullname part is shortened to fit 63",
        "release": LONG_RELEASE,
        "values": migrator(),
    },
    {
        "description": "long release name as a CronJob: the fullname part is shortened to fit 52",
        "release": LONG_RELEASE,
        "values": migrator(schedule="0 * * * *"),
    },
    {
        "description": "hashIncludePodAnnotations false: pod annotations are not in the hash",
        "release": "demo",
        "values": migrator(
            hashIncludePodAnnotations=False,
            podAnnotations={"vault.hashicorp.com/agent-inject": "true"},
            metadataAnnotations={"reloader.stakater.com/auto": "true"},
            hooks={
                "argocd": {"hook": "Sync", "deletePolicy": "BeforeHookCreation", "syncWave": -1}
            },
        ),
    },
    {
        "description": "pod-level fields: podSecurityContext, scheduling, serviceAccountName",
        "release": "demo",
        "values": migrator(
            podSecurityContext={"runAsUser": 1000, "fsGroup": 2000, "runAsNonRoot": True},
            nodeSelector={"kubernetes.io/os": "linux"},
            tolerations=[{"key": "batch", "operator": "Exists", "effect": "NoSchedule"}],
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "pool", "operator": "In", "values": ["batch"]}
                                ]
                            }
                        ]
                    }
                }
            },
            topologySpreadConstraints=[
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}
            ],
            serviceAccountName="migrator",
            restartPolicy="OnFailure",
        ),
    },
    {
        "description": "imagePullSecrets from jobDefaults: in the pod spec, so in the hash",
        "release": "demo",
        "values": {
            "jobDefaults": {"imagePullSecrets": [{"name": "regcred"}]},
            **migrator(),
        },
    },
    {
        "description": "imagePullSecrets on a job replace the defaults' list, order kept",
        "release": "demo",
        "values": {
            "jobDefaults": {"imagePullSecrets": [{"name": "regcred"}]},
            **migrator(imagePullSecrets=[{"name": "other-registry"}, {"name": "regcred"}]),
        },
    },
    {
        "description": "imagePullSecrets [] on a job drops the defaults: the worked example's name",
        "release": "demo",
        "values": {
            "jobDefaults": {"imagePullSecrets": [{"name": "regcred"}]},
            **migrator(imagePullSecrets=[]),
        },
    },
    {
        "description": "imagePullSecrets on a group, for a CronJob's jobTemplate",
        "release": "demo",
        "values": {
            "jobGroups": {
                "db": {
                    "image": {"repository": "registry.example:5000/team/migrator", "tag": "v1"},
                    "imagePullSecrets": [{"name": "team-registry"}],
                    "jobs": {"vacuum": {"command": "./vacuum.sh", "schedule": "@daily"}},
                }
            },
        },
    },
    {
        "description": "fullnameOverride and a group key longer than 8 characters",
        "release": "demo",
        "values": {
            "fullnameOverride": "shop",
            "jobGroups": {
                "reporting-exports": {
                    "image": {"repository": "registry.example:5000/team/exporter", "tag": "v3"},
                    "jobs": {"daily-csv": {"args": "--format=csv"}},
                }
            },
        },
    },
    {
        "description": "a trailing '-' left by shortening the fullname is trimmed",
        "release": "demo",
        "values": {"fullnameOverride": "x" * 42 + "-tail", **migrator()},
    },
    {
        "description": "release name containing the chart name is used as the fullname",
        "release": "autoroll-prod",
        "values": migrator(),
    },
    {
        # 63 - len("-db-<46-character job>-<sha8>") leaves the fullname 4 bytes: "my--",
        # and trimSuffix "-" takes one dash of the two (an rstrip would take both).
        "description": "a cut of the fullname on a double dash loses one dash, not both",
        "release": "my--release",
        "values": migrator(key="a-long-job-key-that-leaves-four-bytes-of-budge"),
    },
]


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
