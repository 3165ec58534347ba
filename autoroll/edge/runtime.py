"""What the one gunicorn worker process owns, and how long its shutdown may take.

``Runtime`` is the HTTP edge (the Flask app, the probes' listener) and its ``link`` to the
controller: the reconcile process under ``autoroll serve`` (``build_served_runtime``), or
the controller itself in this process for tests that inject adapters and read its objects
(``build_runtime``). ``ShutdownBudget`` adds up the bound of every step from SIGTERM to
exit; gunicorn's ``graceful_timeout`` is derived from it (``autoroll.edge.server``).
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from typing import Any, Final, Unpack

from flask import Flask
from prometheus_client import CollectorRegistry

from autoroll.config import Config
from autoroll.controller.loop_health import liveness_bound
from autoroll.edge.http_worker import REQUEST_READ_SECONDS
from autoroll.edge.lifecycle import (
    RECONCILE_STOP_SECONDS,
    THREADS_STOP_SECONDS,
    Controller,
    Election,
)
from autoroll.edge.link import ControllerLink
from autoroll.edge.probes import ProbeServer
from autoroll.edge.receivers import Receiving
from autoroll.edge.reconcile_process import ReconcileProcess
from autoroll.edge.web import create_app
from autoroll.edge.wiring import STEP_SECONDS, Adapters, build_controller
from autoroll.instruments.metrics import Metrics
from autoroll.kube.transport import LEASE_CALL_TIMEOUT, call_seconds

#: Seconds the reconcile process gets, once its threads are stopped, to log how that went,
#: close its pipe and exit: the interpreter's exit on a loaded node. With one second, a
#: loaded CI machine killed it before it could say which thread was stuck.
PROCESS_EXIT_SECONDS: Final = 2.0


@dataclass(frozen=True, slots=True)
class ShutdownBudget:
    """The longest each step of a shutdown can take, SIGTERM to exit, in seconds.

    On SIGTERM the reconcile process is told to stop at once while gunicorn drains its
    requests; it joins its reconcile thread (what is left of that budget), then its other
    threads against one deadline, releases the Lease (one read and one write) only with
    leader election and only if the reconcile thread stopped cleanly, and exits; the worker
    waits for it. Every step is bounded by a timeout in the code, so the sum is a bound, not
    a hope; gunicorn's ``graceful_timeout`` is derived from it.
    """

    request_drain: float = REQUEST_READ_SECONDS + 1.0  # a request still arriving, then its answer
    reconcile_stop: float = RECONCILE_STOP_SECONDS  # runs beside the drain
    threads_stop: float = THREADS_STOP_SECONDS  # election, cache, notifier, pinning: together
    lease_release: float = 2 * call_seconds(LEASE_CALL_TIMEOUT)
    process_exit: float = PROCESS_EXIT_SECONDS

    def reconcile_process(self, *, electing: bool) -> float:
        """SIGTERM to the reconcile process's exit."""
        release = self.lease_release if electing else 0.0
        return self.reconcile_stop + self.threads_stop + release + self.process_exit

    def worst_case(self, *, electing: bool) -> float:
        """SIGTERM to the worker's exit: the drain and the reconcile process run side by side."""
        return max(self.request_drain, self.reconcile_process(electing=electing))


SHUTDOWN_BUDGET: Final = ShutdownBudget()


class Runtime:
    """Everything the one gunicorn worker process owns: the HTTP edge (the Flask app, the
    probes' listener) and its ``link`` to the controller, in this process or the next."""

    def __init__(
        self,
        *,
        app: Flask,
        link: ControllerLink,
        stop_seconds: float,
        probes: ProbeServer | None = None,
        controller: Controller | None = None,
    ) -> None:
        self.app = app
        self.link = link
        self.probes = probes
        self.controller = controller  # only when it runs in this process (tests)
        self._stop_seconds = stop_seconds

    # The controller's objects, when it runs in this process (tests read them).
    @property
    def metrics(self) -> Metrics:
        return self._local().metrics

    @property
    def nudge(self) -> Any:
        return self._local().nudge

    @property
    def reconciler(self) -> Any:
        return self._local().reconciler

    @property
    def worker(self) -> Any:
        return self._local().worker

    @property
    def election(self) -> Election | None:
        return self._local().election

    @property
    def cache(self) -> Any:
        return self._local().cache

    def _local(self) -> Controller:
        if self.controller is None:
            raise AttributeError("the controller runs in the reconcile process, not here")
        return self.controller

    def start(self) -> None:
        """Start the probes' listener (a port in use raises here and stops the worker at
        boot, before any reconciling starts), then the controller."""
        if self.probes is not None:
            self.probes.start()
        self.link.start()

    def begin_stop(self) -> None:
        """SIGTERM arrived: tell the controller to stop now, without waiting.

        Called from the worker's signal handler (``http_worker.DeadlineThreadWorker``), so
        the pass winds down while gunicorn drains requests, not after.
        """
        self.link.begin_stop()

    def stop(self, timeout: float | None = None) -> None:
        """Stop the controller (``timeout`` from ``begin_stop``; by default its own bound),
        then the probes' listener. Raises what the controller's stop raised."""
        try:
            self.link.stop(self._stop_seconds if timeout is None else timeout)
        finally:
            if self.probes is not None:
                # Last, so /readyz says "shutting down" until the end; at most one poll
                # (0.2 s), inside the second GRACEFUL_TIMEOUT_SECONDS leaves for the exit.
                self.probes.stop(timeout=0.5)


def build_runtime(config: Config, **adapters: Unpack[Adapters]) -> Runtime:
    """The controller and the edge in one process (tests inject adapters). Cheap: no
    network until it starts."""
    controller = build_controller(config, **adapters)
    app = create_app(
        webhook_secret=config.webhook_secret.reveal(),
        nudge=controller.deliver,
        metrics=controller.metrics,
        live=controller.liveness,
        ready=controller.readiness,
        forgejo_host=config.forgejo_host,
        receiving=receiving(config),
        later=controller.deliver_later,
    )
    return Runtime(
        app=app,
        link=controller,
        stop_seconds=RECONCILE_STOP_SECONDS,
        probes=_probes(config, controller),
        controller=controller,
    )


def build_served_runtime(config: Config, *, owner: str) -> Runtime:
    """The edge of ``autoroll serve``: its controller runs in the reconcile process, which
    ``start`` starts (``owner`` keys its one-at-a-time lock). Cheap: nothing starts here."""
    metrics = Metrics(CollectorRegistry())  # only the webhook's answers are counted here
    link = ReconcileProcess(
        owner=owner,
        liveness_bound=liveness_bound(
            interval_seconds=config.poll_interval_seconds,
            pass_timeout_seconds=config.pass_timeout_seconds,
            step_seconds=STEP_SECONDS,
        ),
        edge_metrics=metrics.registry,
        on_lost=_leave,
    )
    app = create_app(
        webhook_secret=config.webhook_secret.reveal(),
        nudge=link.deliver,
        metrics=metrics,
        live=link.liveness,
        ready=link.readiness,
        forgejo_host=config.forgejo_host,
        receiving=receiving(config),
        later=link.deliver_later,
        exposition=link.exposition,
    )
    return Runtime(
        app=app,
        link=link,
        # The reconcile process's own stop, signal to exit: its pass, its election and the
        # Lease release (each bounded there), never past the worker's graceful timeout.
        stop_seconds=SHUTDOWN_BUDGET.worst_case(electing=config.leader_election is not None),
        probes=_probes(config, link),
    )


def receiving(config: Config) -> Receiving:
    """The registries' receivers that are on, with their secrets, and the registries autoroll
    reads (``REGISTRIES`` and the ``FORGEJO_HOST`` shorthand); a registry's receiver always
    names the host, so a push naming none is on no registry autoroll reads."""
    secrets = {s: secret.reveal() for s, secret in config.receivers.secrets}
    return Receiving(secrets, tuple(sorted(config.registry_hosts)), None)


def _probes(config: Config, link: ControllerLink) -> ProbeServer:
    return ProbeServer(
        config.probe_host.strip("[]"),  # "[::]" names the IPv6 wildcard
        config.probe_port,
        live=link.liveness,
        ready=link.readiness,
    )


def _leave(code: int) -> None:
    """The reconcile process ended on its own: this worker ends too (gracefully), and
    gunicorn's master starts a new one, with a new reconcile process."""
    os.kill(os.getpid(), signal.SIGTERM)


__all__ = [
    "PROCESS_EXIT_SECONDS",
    "SHUTDOWN_BUDGET",
    "Runtime",
    "ShutdownBudget",
    "build_runtime",
    "build_served_runtime",
    "receiving",
]
