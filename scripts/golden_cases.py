"""The cases ``scripts/gen_golden.py`` renders with the real ``helm template``: one values file
and release name each, in the order of ``tests/golden/jobhash_vectors.json`` (a case's
description, release and values are copied into its vector as they are here).
"""

from __future__ import annotations

from typing import Any

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
