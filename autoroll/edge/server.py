"""gunicorn embedding: one worker process for HTTP, one reconcile process beside it.

Why one of each
---------------
autoroll's safety rules lean on one reconciler (docs/adr/002): one reconcile thread (ticks
never overlap, "at most one deletion per Deployment per tick" means one pod at a time), one
loop-guard memory, one metrics registry describing it, one nudge the webhooks wake. So
gunicorn runs exactly one worker process, and that worker starts exactly one reconcile
process (``autoroll.edge.reconcile_main``), which holds all of that state: the controller
(``autoroll.edge.lifecycle.Controller``), the watched cache and the leader election.

Why not the reconcile thread inside the worker, as before: a pass is CPU-bound Python, and a
webhook's answer waited for the interpreter lock it held (p95 81.8 ms on a loaded node,
issue 28). Now the worker only answers (a signature check, a nudge put on the pipe, the
probes from the loop's last reported status, ``/metrics`` asked of the reconcile process);
its threads share a lock with nothing that computes (docs/adr/027).

Requests are cheap, so concurrency comes from threads (the ``gthread`` worker), not
processes.

Lifecycle
---------
Nothing is built at import time or in the master process (``preload_app`` stays off); the
master only makes the owner key of this ``autoroll serve``. In the forked worker, ``load()``
builds the ``Runtime`` (the edge's metrics, the link to the reconcile process, the Flask
app, the probes' listener) and the ``post_worker_init`` hook starts the probes and the
reconcile process. On SIGTERM the master asks the worker to stop; the worker's signal handler
passes SIGTERM on to the reconcile process at once (``Runtime.begin_stop``), which stops its
pass, its election (releasing the Lease if the pass stopped in time) and exits, while the
worker drains its requests; then the ``worker_exit`` hook waits for the reconcile process.
``ShutdownBudget`` adds up the bound of every step; ``GRACEFUL_TIMEOUT_SECONDS`` is derived
from its worst case and stays below the pod's default 30 s grace period.

What the worker owns, its ``Runtime``, and the ``ShutdownBudget`` are
``autoroll.edge.runtime``'s; its ``build_runtime`` wires the same controller and edge in one
process, for tests that inject adapters (a fake cluster, a fake Lease) and read its objects
directly.
"""

from __future__ import annotations

import logging
import math
import os
import secrets
from collections.abc import Callable
from typing import Any, Final

from flask import Flask
from gunicorn.app.base import BaseApplication
from gunicorn.glogging import Logger as GunicornLogger

from autoroll.config import Config
from autoroll.controller.worker import WorkerStopTimeoutError
from autoroll.edge.lifecycle import (
    RECONCILE_STOP_SECONDS,
    THREADS_STOP_SECONDS,
    Controller,
    Election,
)
from autoroll.edge.reconcile_process import ReconcileProcessError
from autoroll.edge.runtime import SHUTDOWN_BUDGET, Runtime, build_served_runtime
from autoroll.edge.wiring import CACHE_POOL_SIZE, STEP_SECONDS

log = logging.getLogger(__name__)

__all__ = [
    "CACHE_POOL_SIZE",
    "GRACEFUL_TIMEOUT_SECONDS",
    "RECONCILE_STOP_SECONDS",
    "REQUEST_THREADS",
    "STEP_SECONDS",
    "THREADS_STOP_SECONDS",
    "WORKER_TMP_DIR",
    "AutorollServer",
    "Controller",
    "Election",
    "gunicorn_settings",
    "serve",
    "worker_tmp_dir",
]

#: Request threads: webhooks are tiny, but a slow client holds one for up to
#: ``http_worker.REQUEST_READ_SECONDS``. The kubelet's probes have their own listener and
#: threads (``autoroll.edge.probes`` on ``PROBE_ADDR``), so no number of slow clients here delays
#: them; the probe paths answer here too, for what still asks this port.
REQUEST_THREADS: Final = 16

#: Seconds the master waits for the worker after SIGTERM before it SIGKILLs it: the worst
#: case with leader election, rounded up, plus a second for the process to exit. The pod's
#: terminationGracePeriodSeconds (30 s by default) must be larger (a test checks the chart).
GRACEFUL_TIMEOUT_SECONDS: Final = math.ceil(SHUTDOWN_BUDGET.worst_case(electing=True)) + 1

#: Where the worker's heartbeat file lives. gunicorn's default is the temp dir, and with a
#: read-only root filesystem and no /tmp mounted there is none: the worker would not boot.
#: /dev/shm is a tmpfs in every container (Docker, podman, containerd pods).
WORKER_TMP_DIR: Final = "/dev/shm"


def worker_tmp_dir(candidate: str = WORKER_TMP_DIR) -> str | None:
    """``candidate`` when it is a writable directory, else None (gunicorn's default: the
    temp dir), so a host without /dev/shm (macOS) still runs ``autoroll serve``."""
    if os.path.isdir(candidate) and os.access(candidate, os.W_OK | os.X_OK):
        return candidate
    return None


def gunicorn_settings(config: Config, *, tmp_dir: str | None = None) -> dict[str, object]:
    """The gunicorn settings autoroll runs with (pure, so a test can pin them).

    ``tmp_dir`` is the worker heartbeat's directory (``worker_tmp_dir()``; None: gunicorn's).
    """
    return {
        "bind": [config.listen_addr],
        "workers": 1,  # see the module docstring: one process owns all state
        # gthread plus a per-request read deadline (slow-drip clients; see http_worker)
        "worker_class": "autoroll.edge.http_worker.DeadlineThreadWorker",
        "threads": REQUEST_THREADS,
        "preload_app": False,  # nothing is built in the master
        "graceful_timeout": GRACEFUL_TIMEOUT_SECONDS,
        "timeout": 30,
        "keepalive": 5,
        "accesslog": None,  # probes every few seconds would drown the decision lines
        "errorlog": None,  # gunicorn's lines go to the root handler (see RootRoutedLogger)
        "logger_class": RootRoutedLogger,
        "loglevel": str(config.log_level),
        "proc_name": "autoroll",
        "control_socket_disable": True,  # no management socket in $HOME inside a pod
        "worker_tmp_dir": tmp_dir,  # /dev/shm: a missing /tmp is not fatal
        "post_worker_init": _post_worker_init,
        "worker_exit": _worker_exit,
    }


class RootRoutedLogger(GunicornLogger):  # type: ignore[misc]
    """gunicorn's own log lines through autoroll's root handler: one format, one redactor.

    Without this, ``LOG_FORMAT=json`` would still interleave gunicorn's plain-text lines.
    """

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        self.error_log.propagate = True
        self.access_log.propagate = True


class AutorollServer(BaseApplication):  # type: ignore[misc]
    """gunicorn with autoroll's settings; ``load()`` runs in the worker process only."""

    def __init__(
        self,
        config: Config,
        runtime_factory: Callable[[Config], Runtime] | None = None,
    ) -> None:
        self._config = config
        # Made in the master, so a worker gunicorn restarts keys the same owner lock and
        # its reconcile process waits for the old one (autoroll.edge.reconcile_main).
        owner = secrets.token_hex(8)
        self._factory = runtime_factory or (lambda cfg: build_served_runtime(cfg, owner=owner))
        self.runtime: Runtime | None = None
        super().__init__()

    def load_config(self) -> None:
        for name, value in gunicorn_settings(self._config, tmp_dir=worker_tmp_dir()).items():
            # Settings newer than the oldest supported gunicorn are applied when known.
            if name in self.cfg.settings:
                self.cfg.set(name, value)

    def load(self) -> Flask:
        self.runtime = self._factory(self._config)
        return self.runtime.app


def _post_worker_init(worker: Any) -> None:
    """gunicorn hook, in the worker process: start the probes and the one controller."""
    runtime: Runtime | None = worker.app.runtime
    if runtime is None:  # pragma: no cover - gunicorn always loads the app first
        raise RuntimeError("the app was not loaded before post_worker_init")
    runtime.start()
    log.info("controller started for worker pid %s", worker.pid)


def _worker_exit(server: Any, worker: Any) -> None:
    """gunicorn hook, in the worker process after its request loop ended: stop the
    controller (in the reconcile process: wait for it to exit)."""
    runtime: Runtime | None = getattr(worker.app, "runtime", None)
    if runtime is None:
        return
    try:
        runtime.stop()
    except (WorkerStopTimeoutError, ReconcileProcessError) as exc:
        # Abandoned (a daemon thread) or killed: the process exits anyway; say so loudly.
        log.error("%s; exiting without waiting for it", exc)
    else:
        log.info("controller stopped")


def serve(config: Config) -> int:
    """Run gunicorn in the foreground until it is told to stop; return its exit status."""
    AutorollServer(config).run()
    return 0
