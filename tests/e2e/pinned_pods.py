"""The pinning tests' view of an app's pods on the real node: which image each spec names
(pinned ``<image>@<digest>`` or the tag), which digest each runs, and waiting until they
settle (``tests/e2e/test_pinning.py``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tests.e2e.helpers import core_api
from tests.e2e.scenario import App
from tests.support.wait import eventually

START = 120.0  # a fresh pod on the real node: sandbox, pull, probe; the machine is shared


def pods(app: App) -> list[dict[str, Any]]:
    response = core_api(app.kube).list_namespaced_pod(
        app.namespace, label_selector=f"app={app.name}", _preload_content=False
    )
    items: list[dict[str, Any]] = json.loads(response.data)["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def spec_image(pod: Mapping[str, Any]) -> str:
    return str(pod["spec"]["containers"][0]["image"])


def running(pod: Mapping[str, Any]) -> str:
    statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
    return str(statuses[0].get("imageID") or "").rpartition("@")[2]


def ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def summary(app: App) -> list[tuple[str, str, str, bool]]:
    return [
        (p["metadata"]["name"], spec_image(p).rpartition("@")[2][:19], running(p)[:19], ready(p))
        for p in pods(app)
    ]


def wait_pods(
    app: App, replicas: int, *, pinned: str | None, runs: str, timeout: float = START
) -> list[dict[str, Any]]:
    """Wait until ``replicas`` pods are Ready running ``runs``; with ``pinned``, every one
    named ``<image>@<pinned>``; None: at least one is not pinned at all."""

    def settled() -> list[dict[str, Any]]:
        found = pods(app)
        assert len(found) == replicas, summary(app)
        assert all(ready(p) and running(p) == runs for p in found), summary(app)
        return found

    found = eventually(settled, timeout=timeout, what=f"{replicas} pods Ready on {runs[:19]}")
    images = [spec_image(p) for p in found]
    if pinned is not None:
        assert images == [f"{app.image}@{pinned}"] * replicas, summary(app)
    return found


def newest(found: list[dict[str, Any]]) -> dict[str, Any]:
    return max(found, key=lambda p: p["metadata"]["creationTimestamp"])
