"""Every action and image the workflows use is pinned by commit SHA or digest (issue 30).

A tag (`actions/checkout@v4`, `alpine/helm:3.16.4`) can be moved by whoever controls that
repository, and the publish job hands its runner the registry token and the signing key.
So every `uses:` names a 40-hex commit, every image (a job's `container`, a service, an
action's `image` input, buildx's `driver-opts: image=…`) carries `@sha256:<64 hex>`, and
so does the Dockerfile's base. The checker is tested on bad input too, so an empty pass
cannot hide a broken parse.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".forgejo" / "workflows").glob("*.y*ml"))
ACTION_PIN = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}$")
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
INLINE_IMAGE = re.compile(r"(?:^|[\s,])image=(\S+)")


def _walk(node: Any, path: str) -> Iterator[tuple[str, str, str]]:
    """(path, key, value) of every string value under a mapping key, depth first."""
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{path}.{key}"
            if isinstance(value, str):
                yield here, str(key), value
            else:
                yield from _walk(value, here)
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _walk(item, f"{path}[{index}]")


def unpinned(workflow: dict[str, Any]) -> list[str]:
    """Every reference in ``workflow`` that is not pinned, as ``path: value``."""
    problems: list[str] = []
    for path, key, value in _walk(workflow, ""):
        if key == "uses":
            local = value.startswith("./")
            docker = value.startswith("docker://")
            if docker and not DIGEST.search(value):
                problems.append(f"{path}: {value} (a docker:// action needs @sha256:<digest>)")
            elif not (local or docker or ACTION_PIN.match(value)):
                problems.append(f"{path}: {value} (pin the action to a 40-hex commit SHA)")
        elif key == "image" and not DIGEST.search(value.strip()):
            problems.append(f"{path}: {value} (pin the image by @sha256:<digest>)")
        # Inside an action's inputs (`driver-opts: image=…`); a `run:` script's shell
        # variable of that name is not an image reference.
        for inline in [] if key == "run" else INLINE_IMAGE.findall(value):
            if not DIGEST.search(inline):
                problems.append(f"{path}: image={inline} (pin the image by @sha256:<digest>)")
    return problems


def _container_images(workflow: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """``container:`` and ``services.<name>:`` given as a bare string are images too."""
    for name, job in (workflow.get("jobs") or {}).items():
        container = job.get("container")
        if isinstance(container, str):
            yield f"jobs.{name}.container", container
        for service, spec in (job.get("services") or {}).items():
            if isinstance(spec, str):
                yield f"jobs.{name}.services.{service}", spec


def check(workflow: dict[str, Any]) -> list[str]:
    problems = unpinned(workflow)
    for path, image in _container_images(workflow):
        if not DIGEST.search(image):
            problems.append(f"{path}: {image} (pin the image by @sha256:<digest>)")
    return problems


def test_there_are_workflows_to_check() -> None:
    assert WORKFLOWS, "no .forgejo/workflows/*.yaml found"


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_every_action_and_image_is_pinned(workflow: Path) -> None:
    data = yaml.safe_load(workflow.read_text(encoding="utf-8"))
    assert check(data) == []
    uses = [v for _, k, v in _walk(data, "") if k == "uses"]
    assert uses, f"{workflow.name}: no `uses:` found; is the parse right?"


def test_the_dockerfile_base_is_pinned_by_digest() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    [base] = re.findall(r"(?m)^ARG PYTHON_IMAGE=(\S+)$", dockerfile)
    assert DIGEST.search(base), f"Dockerfile: PYTHON_IMAGE={base} is not pinned by digest"


@pytest.mark.parametrize(
    ("workflow", "needle"),
    [
        ({"jobs": {"a": {"steps": [{"uses": "actions/checkout@v4"}]}}}, "actions/checkout@v4"),
        ({"jobs": {"a": {"steps": [{"uses": "actions/checkout@11bd719"}]}}}, "@11bd719"),
        ({"jobs": {"a": {"container": {"image": "alpine/helm:3.16.4"}}}}, "alpine/helm:3.16.4"),
        ({"jobs": {"a": {"container": "alpine:3"}}}, "alpine:3"),
        ({"jobs": {"a": {"services": {"db": {"image": "postgres:16"}}}}}, "postgres:16"),
        ({"jobs": {"a": {"steps": [{"uses": "docker://alpine:3"}]}}}, "docker://alpine:3"),
        (
            {"jobs": {"a": {"steps": [{"with": {"driver-opts": "image=moby/buildkit:v0"}}]}}},
            "moby/buildkit:v0",
        ),
    ],
)
def test_the_checker_names_each_unpinned_reference(workflow: dict[str, Any], needle: str) -> None:
    [problem] = check(workflow)
    assert needle in problem


def test_the_checker_accepts_sha_and_digest_pins() -> None:
    sha, digest = "a" * 40, "sha256:" + "b" * 64
    workflow = {
        "jobs": {
            "a": {
                "container": {"image": f"alpine@{digest}"},
                "steps": [
                    {"uses": f"actions/checkout@{sha}"},
                    {"uses": "./.forgejo/actions/local"},
                    {"uses": f"docker://alpine@{digest}"},
                    {"with": {"driver-opts": f"image=moby/buildkit:v0@{digest}"}},
                ],
            }
        }
    }
    assert check(workflow) == []
