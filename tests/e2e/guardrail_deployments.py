"""The Deployments the guardrail tests enrol, and how those tests read their pods: an enrolled
manifest (``enrolled``), the namespace's pods as listed now (``live``), "every pod Ready on
this digest" (``all_on``), "at least n log lines" (``at_least``), and the controller run as a
local process over a watch of the namespace's pods (``watched_autoroll``).

They stand apart because the budget and window tests (``test_guardrails.py``) and the platform
tests (``test_platform_awareness.py``) both use them; these tests run ``autoroll`` as a local
process on their own manifests rather than through ``enrolled_app.py``'s ``App``.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from typing import Any

from tests.e2e.controller import Autoroll, running_autoroll
from tests.e2e.controlplane import ControlPlane
from tests.e2e.helpers import core_api, deployment
from tests.e2e.scenario import ENROLL_LABEL, TEST_LABEL, PodSeen, Recorder, label_selector
from tests.support.registry import RegistryServer


def enrolled(name: str, image: str, test: str, *, replicas: int, **extra: Any) -> dict[str, Any]:
    manifest = deployment(
        name,
        image,
        replicas=replicas,
        labels={ENROLL_LABEL: "true", TEST_LABEL: test},
        http_port=extra.get("http_port"),
    )
    annotations = extra.get("annotations")
    if annotations:
        manifest["metadata"]["annotations"] = dict(annotations)
    selector = extra.get("node_selector")
    if selector:
        manifest["spec"]["template"]["spec"]["nodeSelector"] = dict(selector)
    return manifest


def live(kube: Any, namespace: str, selector: str = "") -> list[PodSeen]:
    response = core_api(kube).list_namespaced_pod(
        namespace, label_selector=selector, _preload_content=False
    )
    now = time.monotonic()
    return [PodSeen.from_raw(now, "LIST", p) for p in json.loads(response.data)["items"]]


def all_on(kube: Any, namespace: str, digest: str, count: int, selector: str = "") -> None:
    pods = live(kube, namespace, selector)
    done = [p for p in pods if p.ready and p.digest == digest and not p.terminating]
    assert len(done) == count and len(pods) == count, (
        f"{len(done)} of {count} Ready on {digest[:19]}; {len(pods)} pods"
    )


def at_least(lines: list[str], n: int) -> None:
    assert len(lines) >= n, lines


@contextlib.contextmanager
def watched_autoroll(
    plane: ControlPlane,
    kube: Any,
    namespace: str,
    registry: RegistryServer,
    *,
    tail: int,
    **env: str,
) -> Iterator[tuple[Recorder, Autoroll]]:
    """A watch of every pod in ``namespace`` and, started after it, ``autoroll serve`` (5 s
    poll) for the test's Deployments, with ``env`` too; the last ``tail`` lines of its output
    printed before it stops, whether the test passed or not."""
    with (
        Recorder(core_api(kube).list_namespaced_pod, namespace) as recorder,
        running_autoroll(
            plane=plane,
            registry=registry,
            poll_seconds=5,
            extra_env={"LABEL_SELECTOR": label_selector(namespace), **env},
        ) as autoroll,
    ):
        try:
            yield recorder, autoroll
        finally:
            print("--- autoroll output (tail) ---", *autoroll.output[-tail:], sep="\n")
