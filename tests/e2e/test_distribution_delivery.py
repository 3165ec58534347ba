"""The distribution registry's live notification, on the real node, nothing stood in:

a push to Debian's ``docker-registry`` → the registry's notification (``notifications.endpoints``,
``Authorization: Bearer <token>``) to ``/webhook/distribution`` of the controller installed by
``helm install`` as a pod on the node (the chart's ``webhookReceivers: [distribution]``, its
token in the chart's Secret, mounted as a file) → a pass targeted at the pushed tag → it
deletes the stale pod of an enrolled app whose containers containerd pulled from that registry
(docs/adr/025-webhook-receivers.md).

Every hop is loopback: the registry listens on the host's 127.0.0.1, the node pulls from it
through its loopback bridge, and the controller's host-network port is exposed back on the
host's 127.0.0.1, where the registry delivers.

Measured: push completion (the manifest PUT answered) → the first pod seen terminating by a
pod watch, ``SAMPLES`` times. Each push follows a finished pass and the poll is long next to
that figure, so only the notification can have started the deleting pass (asserted). The
registry notifies every pull too (containerd's, the controller's HEADs): those start nothing.
"""

from __future__ import annotations

import secrets
import statistics
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.controller import StartAutoroll
from tests.e2e.enrolled_app import registry_app
from tests.e2e.helpers import core_api
from tests.e2e.push_deliveries import POLL, SAMPLES, assert_clean_rolls, deployed, timed_pushes
from tests.e2e.scenario import Recorder, metric
from tests.support.registry import RegistryServer

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

#: Bound on push completion → first deletion (a pass of the real controller on the real node).
DELIVERY_BOUND = 6.0


def _notify(registry: RegistryServer, url: str, token: str) -> None:
    """Restart the registry (same port, same storage) with its endpoint at ``url``."""
    registry.stop()
    registry.notifications = [
        {
            "name": "autoroll",
            "url": url,
            "headers": {"Authorization": [f"Bearer {token}"]},
            "timeout": "2s",
            "threshold": 5,
            "backoff": "1s",
        }
    ]
    registry.write_config()
    registry.start()


def _outcome(autoroll: Any, outcome: str) -> float:
    labels = {"source": "distribution", "outcome": outcome}
    return metric(autoroll, "autoroll_webhook_requests_total", labels)


def test_a_push_to_docker_registry_is_notified_to_the_helm_installed_pod_which_rolls_real_pods(  # noqa: PLR0917 - pytest passes fixtures by name
    fresh_registry: RegistryServer,
    kube: Any,
    node: Any,
    namespace: str,
    tmp_path: Path,
    start_autoroll: StartAutoroll,
) -> None:
    token = secrets.token_hex(24)
    app = registry_app(kube, namespace, fresh_registry)
    autoroll = start_autoroll(poll=POLL, registry=fresh_registry, DISTRIBUTION_WEBHOOK_TOKEN=token)
    digests, generation = deployed(app)
    _notify(fresh_registry, f"{autoroll.url}/webhook/distribution", token)
    with Recorder(core_api(kube).list_namespaced_pod, namespace, label_selector="app=web") as w:
        samples = timed_pushes(app, autoroll, w, digests, time.monotonic)
    history = w.pods()
    print(
        "push -> first deletion over the distribution registry's notification:"
        f" {', '.join(f'{s:.2f}' for s in samples)} s (median {statistics.median(samples):.2f},"
        f" max {max(samples):.2f}); ignored (pulls and blobs) {_outcome(autoroll, 'ignored'):.0f}"
    )
    assert max(samples) <= DELIVERY_BOUND, samples
    # One targeted pass per push; the blob, by-digest and pull events started nothing.
    assert _outcome(autoroll, "targeted") == SAMPLES
    assert _outcome(autoroll, "ignored") > 0
    assert _outcome(autoroll, "bad-signature") == 0
    assert_clean_rolls(app, history, digests, generation)
    assert not [line for line in autoroll.output if "Traceback" in line]
    assert not [line for line in autoroll.output if token in line]
