"""The pieces of the two-process model that need no second process (docs/adr/027)."""

from __future__ import annotations

import sys
import threading
import time

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from autoroll.controller.loop_health import LoopStatus
from autoroll.edge.link import EDGE_FAMILIES, merged_exposition
from autoroll.edge.reconcile_main import owner_lock
from autoroll.instruments.metrics import Metrics


def families(text: bytes) -> dict[str, list[tuple[str, dict[str, str], float]]]:
    return {
        f.name: [(s.name, s.labels, s.value) for s in f.samples]
        for f in text_string_to_metric_families(text.decode())
    }


def test_one_exposition_has_the_edge_s_webhook_counts_and_the_controller_s_rest() -> None:
    controller, edge = Metrics(CollectorRegistry()), Metrics(CollectorRegistry())
    controller.ticks.labels(outcome="ok").inc(3)
    controller.tick_duration.observe(0.2)
    controller.leader.set(1)
    controller.webhook_requests.labels(source="forgejo", outcome="targeted").inc(
        99
    )  # never counted there
    edge.webhook_requests.labels(source="forgejo", outcome="targeted").inc(2)
    edge.ticks.labels(outcome="ok").inc(7)  # never counted here
    merged = merged_exposition(generate_latest(controller.registry), edge.registry)
    found = families(merged)
    expected = families(generate_latest(controller.registry))
    for name, samples in families(generate_latest(edge.registry)).items():
        if name.removesuffix("_created") in EDGE_FAMILIES:
            expected[name] = samples
    assert found == expected
    assert (
        "autoroll_webhook_requests_total",
        {"source": "forgejo", "outcome": "targeted"},
        2.0,
    ) in found["autoroll_webhook_requests"]
    assert ("autoroll_ticks_total", {"outcome": "ok"}, 3.0) in found["autoroll_ticks"]
    types = [line for line in merged.decode().splitlines() if line.startswith("# TYPE")]
    assert len(types) == len(set(types))
    assert sorted(types) == sorted(
        line
        for line in generate_latest(controller.registry).decode().splitlines()
        if line.startswith("# TYPE")
    )


def test_the_loop_status_gives_the_probes_their_answers() -> None:
    status = LoopStatus(last_progress=100.0, liveness_bound=60.0, last_error="Boom")
    assert status.liveness(150.0).ok and "Boom" in status.liveness(150.0).detail
    assert not status.liveness(161.0).ok
    assert status.readiness().ok
    assert not LoopStatus(0.0, 1.0, running=False).readiness().ok
    assert LoopStatus(0.0, 1.0, stopping=True).readiness().detail == "shutting down"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="abstract sockets: Linux")
def test_the_owner_lock_is_held_by_one_process_at_a_time() -> None:
    owner = f"test-{time.monotonic_ns()}"
    first = owner_lock(owner, stopping=lambda: False)
    assert first is not None
    # A second holder waits; told to stop while waiting, it gives up without the lock.
    deadline = time.monotonic() + 0.6
    assert owner_lock(owner, stopping=lambda: time.monotonic() > deadline) is None
    # Another owner key is another lock.
    other = owner_lock(owner + "-other", stopping=lambda: False)
    assert other is not None
    other.close()
    # Freed (here by close; by the kernel when the holder dies), it is taken at once.
    got: list[object] = []
    waiter = threading.Thread(target=lambda: got.append(owner_lock(owner, stopping=lambda: False)))
    waiter.start()
    time.sleep(0.3)
    assert got == []
    first.close()
    waiter.join(5)
    assert got and got[0] is not None
    got[0].close()  # type: ignore[attr-defined]
