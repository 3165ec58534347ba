"""The two scenarios a real containerd cannot be made to show, on the simulated kubelet.

- A runtime that reports the platform child's digest of a multi-arch index (CRI-O has done
  so; containerd reports the index digest, see ``test_scenarios.py``).
- A runtime stuck reporting the digest it first pulled for a tag, whatever it runs now.

Everything else is real: control plane, registry, images, ``autoroll serve``. The test
namespace is labelled for the simulated kubelet, so the real node's binder leaves it alone.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.controller import StartAutoroll
from tests.e2e.enrolled_app import (
    POLL,
    SLACK,
    at_least,
    enrol,
    full_passes_after,
    pods,
    registry_app,
)
from tests.e2e.kubelet import SimulatedKubelet
from tests.e2e.kubelet_behaviour import Behaviour
from tests.e2e.kubelet_images import RegistryResolver
from tests.e2e.scenario import App, Recorder, decision_lines, deletions, metric, unsettled_deletions
from tests.support.registry import RegistryServer

__all__ = ["pods"]  # a fixture, imported for this module

pytestmark = pytest.mark.e2e


@pytest.fixture
def sim_app(
    kube: Any, namespace: str, docker_registry: RegistryServer, kubelet: SimulatedKubelet
) -> App:
    """An app whose pods the simulated kubelet runs, "pulling" from the real registry."""
    resolver = RegistryResolver(auth=docker_registry.auth)
    kubelet.use_resolver(resolver, resolver.child)
    return registry_app(kube, namespace, docker_registry)


def test_simulated_cri_o_child_digest_of_a_multi_arch_index_rolls_once_without_a_loop(
    sim_app: App, pods: Recorder, kubelet: SimulatedKubelet, start_autoroll: StartAutoroll
) -> None:
    app = sim_app
    kubelet.behave(app.image, Behaviour(report_child=True))
    old = app.push_index()
    autoroll = enrol(app, start_autoroll, old.children[0], replicas=2)  # amd64 comes first
    assert decision_lines(autoroll, app, r": current \(")

    new = app.push_index()
    app.wait_rolled(new.children[0], replicas=2, timeout=2 * (POLL + SLACK) + POLL)
    full_passes_after(autoroll, 2)  # two more passes over pods reporting the new child digest
    assert [d.digest for d in deletions(pods.pods())] == [old.children[0]] * 2
    assert metric(autoroll, "autoroll_pod_deletions_total", {"mode": "real"}) == 2
    assert decision_lines(autoroll, app, r": current \(")[-1:], "the last pass says current"


def test_simulated_runtime_stuck_on_the_old_digest_is_bounded_to_one_deletion_per_pod(
    sim_app: App, pods: Recorder, kubelet: SimulatedKubelet, start_autoroll: StartAutoroll
) -> None:
    app = sim_app
    old = app.push()
    autoroll = enrol(app, start_autoroll, old)
    kubelet.behave(app.push(), Behaviour(keep_old_digest=True))  # pulls new, reports old

    at_least(
        3,
        lambda: deletions(pods.pods()),
        timeout=3 * (POLL + SLACK),
        what="every original pod deleted once",
    )
    full_passes_after(autoroll, 2)  # two more passes: the replacements still look stale
    history = pods.pods()
    assert len(deletions(history)) == 3
    assert unsettled_deletions(history, replicas=3) == []
    live = app.live_pods()
    assert len(live) == 3 and all(p.digest == old and p.ready for p in live)
    assert metric(autoroll, "autoroll_loop_guard_hits_total") >= 3
    assert decision_lines(autoroll, app, r" WARNING .*created-after-target")
