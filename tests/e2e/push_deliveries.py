"""What the two push → delivery → roll tests share: ``test_gitea_delivery.py`` (Gitea's signed
package webhook) and ``test_distribution_delivery.py`` (the distribution registry's
notification). They differ only in what carries the push to the controller's pod; the app's
first roll, the timed push → first deletion loop and the checks on the pods' history are the
same, so they are here once.

Each push follows a finished pass and the poll is long next to the measured figure, so only
the delivery can have started the deleting pass (asserted in the loop).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tests.e2e.scenario import (
    App,
    PodSeen,
    Recorder,
    became_ready,
    deletions,
    metric,
    unsettled_deletions,
)
from tests.support.wait import eventually

POLL = 10  # seconds: the timer pass; a delivery-started deletion must come well before it
SAMPLES = 3
REPLICAS = 2


def deployed(app: App) -> tuple[list[str], Any]:
    """Push the first build and roll ``REPLICAS`` pods onto it: the digests pushed so far and
    the Deployment's generation (no roll may change it)."""
    digests = [app.push()]
    app.deploy(replicas=REPLICAS)
    app.wait_rolled(digests[0], replicas=REPLICAS, timeout=120)
    generation = app.deployment()["metadata"]["generation"]
    return digests, generation


def after_a_pass(autoroll: Any) -> float:
    """Wait until a pass has just finished; when it was seen (``time.monotonic()``). The
    next timer pass starts ``POLL`` seconds after that pass ended, or later."""
    before = metric(autoroll, "autoroll_ticks_total", {"outcome": "ok"})

    def ticked() -> float:
        assert metric(autoroll, "autoroll_ticks_total", {"outcome": "ok"}) > before
        return time.monotonic()

    return eventually(ticked, timeout=3 * POLL, interval=0.05, what="a finished pass")


def timed_pushes(
    app: App, autoroll: Any, w: Recorder, digests: list[str], pushed_at: Callable[[], float]
) -> list[float]:
    """Push ``SAMPLES`` builds, each right after a finished pass, adding their digests to
    ``digests`` and waiting for each roll; for each, the seconds from push completion
    (``pushed_at()``, asked right after the push) to the first pod ``w`` saw terminating."""
    samples: list[float] = []
    for _ in range(SAMPLES):
        passed = after_a_pass(autoroll)
        seen = len(deletions(w.pods()))
        digests.append(app.push())
        pushed = pushed_at()

        def deleted(seen: int = seen) -> Any:
            fresh = deletions(w.pods())[seen:]
            assert fresh, "no deletion yet"
            return fresh[0]

        first = eventually(deleted, timeout=2 * POLL, interval=0.02, what="a deletion")
        samples.append(first.at - pushed)
        assert first.at - passed < POLL - 1, "not before the timer pass could have run"
        app.wait_rolled(digests[-1], replicas=REPLICAS, timeout=4 * POLL + 60)
    return samples


def assert_clean_rolls(
    app: App, history: list[PodSeen], digests: list[str], generation: Any
) -> None:
    """Every roll in ``history`` was clean: each stale pod deleted once, one at a time, each
    pushed build Ready on every replica, the Deployment object never written."""
    # The pods: every stale one deleted once, one at a time, never an unsettled deletion.
    assert [d.digest for d in deletions(history)] == [
        d for d in digests[:-1] for _ in range(REPLICAS)
    ]
    assert unsettled_deletions(history, replicas=REPLICAS) == []
    for digest in digests[1:]:
        assert len(became_ready(history, digest)) == REPLICAS
    assert app.deployment()["metadata"]["generation"] == generation
