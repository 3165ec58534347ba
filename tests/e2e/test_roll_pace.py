"""Roll pace on the real node (issue 17): after a push, a roll goes on as soon as each
replacement is Ready, not at the next poll.

The chart's controller pod with the chart's default poll interval (120 s), a settled
3-replica Deployment of a real image with a readiness probe (the kubelet's verdict), one
push and Forgejo's signed ``package`` webhook. Before the watched cache a webhook bought one
deletion and each further pod waited for a poll: about 2 x 120 s for three pods. Here all
three go within one poll interval, one at a time (never while a replacement is unready).

The measured pace is printed, and written to ``bench/roll_pace.json`` when
``AUTOROLL_BENCH_ROLL_PACE=1`` (``docs/performance.md`` shows it next to the other targets).
"""

from __future__ import annotations

import datetime
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.controller import Autoroll, StartAutoroll
from tests.e2e.enrolled_app import registry_app
from tests.e2e.helpers import core_api
from tests.e2e.scenario import (
    Recorder,
    became_ready,
    decision_lines,
    deletions,
    metric,
    unsettled_deletions,
)
from tests.support.registry import RegistryServer
from tests.support.wait import eventually

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]

#: The chart's default ``pollIntervalSeconds``.
POLL = 120
READY_AFTER = 2.0
REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def default_poll(start_autoroll: StartAutoroll) -> Autoroll:
    """The chart's install (``start_autoroll``) with the chart's default poll interval."""
    return start_autoroll(poll=POLL)


def package_event(repository: str, tag: str) -> bytes:
    """Forgejo's package event for a container tag (the fields autoroll reads)."""
    owner, _, name = repository.partition("/")
    package = {"type": "container", "name": name, "version": tag, "owner": {"login": owner}}
    return json.dumps({"action": "created", "package": package}).encode()


def test_a_push_rolls_all_three_pods_at_the_pace_of_readiness_not_of_the_poll(
    default_poll: Autoroll, kube: Any, namespace: str, docker_registry: RegistryServer
) -> None:
    app = registry_app(kube, namespace, docker_registry, ready_after=READY_AFTER)
    with Recorder(core_api(kube).list_namespaced_pod, namespace) as pods:
        old = app.push()
        app.deploy(replicas=3)
        app.wait_rolled(old, replicas=3, timeout=120)
        # The cache has filed the app (a package event for its tag finds it): settled.
        eventually(
            lambda: _nonempty(_watched(default_poll)),
            timeout=60,
            what="the cache to hold the app's pods",
        )
        full_before = metric(default_poll, "autoroll_pass_scopes_total", {"scope": "full"})
        new = app.push()
        pushed = time.monotonic()
        assert default_poll.webhook(package_event(app.repository, "latest")) == 202
        app.wait_rolled(new, replicas=3, timeout=POLL - 10)
        full_during = metric(default_poll, "autoroll_pass_scopes_total", {"scope": "full"})
    history = [p for p in pods.pods() if p.name.startswith("web-")]
    gone = deletions(history)
    assert [d.digest for d in gone] == [old] * 3
    assert unsettled_deletions(history, replicas=3) == []
    ready = became_ready(history, new)
    assert len(ready) == 3
    first_seen = {p.uid: p.at for p in reversed(history)}
    replacements = [r.at - first_seen[r.uid] for r in ready]
    roll_s = ready[-1].at - pushed
    pace = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "load": " / ".join(f"{x:.1f}" for x in os.getloadavg()),
        "poll_s": POLL,
        "ready_after_s": READY_AFTER,
        "roll_s": roll_s,
        "pull_ready_s": max(replacements),
        "replacements_s": replacements,
        "deletions_s": [d.at - pushed for d in gone],
        "full_passes": int(full_during - full_before),
        "targeted_passes": int(
            metric(default_poll, "autoroll_pass_scopes_total", {"scope": "targeted"})
        ),
    }
    print(f"\nroll pace on the real node: {json.dumps(pace, indent=2)}")
    if os.environ.get("AUTOROLL_BENCH_ROLL_PACE") == "1":
        (REPO_ROOT / "bench" / "roll_pace.json").write_text(json.dumps(pace, indent=2) + "\n")
    assert decision_lines(default_poll, app), "the pod logged no decision about the app"


def _watched(autoroll: Autoroll) -> list[float]:
    held = metric(autoroll, "autoroll_cache_objects", {"kind": "pods"})
    return [held] if held >= 3 else []


def _nonempty(items: list[Any]) -> list[Any]:
    assert items, "none yet"
    return items
