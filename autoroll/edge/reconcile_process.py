"""The reconcile process, seen from the HTTP edge: start it, feed it, read its health, stop it.

``autoroll serve``'s gunicorn worker answers HTTP; the controller (the reconcile thread, the
watched cache, the election) runs in a child process of it, ``python -m
autoroll.edge.reconcile_main``, so that a pass's CPU never holds the interpreter lock a
webhook's answer waits for (docs/adr/027). This class is the worker's side of the one pipe
between them (``autoroll.edge.link``):

- ``deliver`` merges the scope into the one pending delivery and returns; a sender thread
  writes it to the pipe. A webhook never waits on the pipe or on the controller.
  ``deliver_later`` does the same for a pass some seconds from now (merged per delay).
- a reader thread keeps the last ``LoopStatus`` the child sent (every ``STATUS_SECONDS``);
  ``liveness`` and ``readiness`` are computed from it, so ``/livez`` reflects the pass as
  before. Until the first status the loop counts as started when the child was.
- ``exposition`` asks the child for its metrics and merges the edge's own webhook counters
  in (``link.merged_exposition``): one ``/metrics``.
- ``begin_stop`` sends SIGTERM (signal-handler safe); ``stop`` waits for the child's own
  bounded shutdown (``Controller.stop``: the pass, the election, the Lease release), then
  kills it if it is still there.
- a child that exits on its own (a crash) is the worker's end too: ``on_lost`` (the worker
  sends itself SIGTERM), and gunicorn's master starts a new worker with a new child. The
  new child reconciles only once the old one is gone (``reconcile_main``'s owner lock).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from multiprocessing.connection import Connection, Pipe
from typing import Final

from prometheus_client import CollectorRegistry

from autoroll.controller.loop_health import Health, LoopStatus
from autoroll.core.scope import Scope
from autoroll.edge.link import Deliver, MetricsText, MetricsWanted, merged_exposition

log = logging.getLogger(__name__)

#: Seconds a scrape waits for the reconcile process's metrics.
METRICS_SECONDS: Final = 5.0
#: What the reconcile process's environment gets unless already set (glibc reads them as
#: the process starts; Python's small objects are not affected, only what glibc serves).
#: glibc gives each thread that allocates its own malloc arena (up to 8 per core), and the
#: informers, the registry lookups and the pass each do: at 10,000 Deployments the freed
#: list pages left about 20 MB more resident across arenas than in two. And glibc raises
#: its mmap threshold each time it frees an mmapped block, so after the first list page
#: (megabytes of text) the next ones come from the heap and leave holes there; a fixed
#: 128 KiB keeps every page's buffer mmapped and gives it back whole (5-10 MB at 10,000;
#: issue 28).
RECONCILE_ENV: Final = {"MALLOC_ARENA_MAX": "2", "MALLOC_MMAP_THRESHOLD_": "131072"}


class ReconcileProcessError(RuntimeError):
    """The reconcile process did not answer or did not stop in time."""


class ReconcileProcess:
    """The edge's ``ControllerLink`` to a controller in a child process (module docstring)."""

    def __init__(
        self,
        *,
        owner: str,
        liveness_bound: float,
        edge_metrics: CollectorRegistry,
        on_lost: Callable[[int], None] = lambda code: None,
        env: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._owner = owner
        self._edge_metrics = edge_metrics
        self._on_lost = on_lost
        self._env = {**RECONCILE_ENV, **(os.environ if env is None else env)}
        self._clock = clock
        self._bound = liveness_bound
        self._status: LoopStatus | None = None
        self._started_at = clock()
        self._process: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self._send_lock = threading.Lock()
        self._pending: dict[float, Scope] = {}  # seconds from now (0: now) -> merged scope
        self._pending_lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = False
        self._stop_requested_at: float | None = None
        self._exit_code: int | None = None
        self._metrics_lock = threading.Lock()  # one scrape at a time asks the child
        self._metrics_request = 0
        self._metrics_answer: MetricsText | None = None
        self._metrics_ready = threading.Condition()

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    # -- ControllerLink ---------------------------------------------------------------------

    def start(self) -> None:
        """Start the child and the two threads that talk to it."""
        ours, theirs = Pipe(duplex=True)
        self._started_at = self._clock()
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "autoroll.edge.reconcile_main",
                f"--fd={theirs.fileno()}",
                f"--owner={self._owner}",
            ],
            pass_fds=(theirs.fileno(),),
            env=self._env,
        )
        theirs.close()
        self._conn = ours
        log.info("reconcile process started (pid %s)", self._process.pid)
        for target, name in ((self._read, "reader"), (self._send, "sender")):
            threading.Thread(target=target, name=f"autoroll-link-{name}", daemon=True).start()

    def deliver(self, scope: Scope) -> None:
        self.deliver_later(scope, 0.0)

    def deliver_later(self, scope: Scope, seconds: float) -> None:
        with self._pending_lock:
            pending = self._pending.get(seconds)
            self._pending[seconds] = scope if pending is None else pending.merge(scope)
        self._wake.set()

    def liveness(self) -> Health:
        if self._exit_code is not None and not self._stopping:
            return Health(False, f"the reconcile process exited with code {self._exit_code}")
        return self._current().liveness(self._clock())

    def readiness(self) -> Health:
        if self._stopping:
            return Health(False, "shutting down")
        if self._exit_code is not None:
            return Health(False, f"the reconcile process exited with code {self._exit_code}")
        if self._status is None:
            return Health(False, "the reconcile process is starting")
        return self._status.readiness()

    def exposition(self) -> bytes:
        """The child's metrics with the edge's webhook counters; raises when it is silent."""
        with self._metrics_lock:
            self._metrics_request += 1
            request = self._metrics_request
            self._post(MetricsWanted(request))
            deadline = self._clock() + METRICS_SECONDS
            with self._metrics_ready:
                while self._metrics_answer is None or self._metrics_answer.request != request:
                    left = deadline - self._clock()
                    if left <= 0 or self._exit_code is not None:
                        raise ReconcileProcessError("the reconcile process sent no metrics")
                    self._metrics_ready.wait(min(left, 0.5))
                text = self._metrics_answer.text
        return merged_exposition(text, self._edge_metrics)

    def begin_stop(self) -> None:
        """Tell the child to stop (SIGTERM); safe in a signal handler."""
        if self._stop_requested_at is None:
            self._stop_requested_at = self._clock()
        self._stopping = True
        process = self._process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):  # it just ended
                os.kill(process.pid, signal.SIGTERM)

    def stop(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds from ``begin_stop`` for the child's own shutdown;
        kill it and raise if it is still running then."""
        self.begin_stop()
        process = self._process
        if process is None:
            return
        assert self._stop_requested_at is not None
        left = timeout - (self._clock() - self._stop_requested_at)
        try:
            code = process.wait(max(0.1, left))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise ReconcileProcessError(
                f"the reconcile process (pid {process.pid}) was still running after"
                f" {timeout:g}s; killed"
            ) from None
        finally:
            if self._conn is not None:
                self._conn.close()
        log.info("reconcile process exited with code %s", code)

    # -- the two threads --------------------------------------------------------------------

    def _current(self) -> LoopStatus:
        if self._status is not None:
            return self._status
        return LoopStatus(last_progress=self._started_at, liveness_bound=self._bound)

    def _post(self, message: object) -> None:
        conn = self._conn
        if conn is None:
            raise ReconcileProcessError("the reconcile process is not started")
        try:
            with self._send_lock:
                conn.send(message)
        except (OSError, ValueError) as exc:  # the child is gone (EPIPE, or closed here)
            raise ReconcileProcessError(f"the reconcile process is gone: {exc}") from exc

    def _send(self) -> None:
        """Write each pending delivery (all that arrived meanwhile, merged) to the pipe."""
        while self._exit_code is None:
            self._wake.wait()
            with self._pending_lock:
                pending, self._pending = self._pending, {}
                self._wake.clear()
            try:
                for seconds, scope in sorted(pending.items()):
                    self._post(Deliver(scope, seconds))
            except ReconcileProcessError as exc:
                log.error("a webhook's nudge was not delivered: %s", exc)
                return

    def _read(self) -> None:
        conn, process = self._conn, self._process
        assert conn is not None and process is not None
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                break
            if isinstance(message, LoopStatus):
                self._status = message
            elif isinstance(message, MetricsText):
                with self._metrics_ready:
                    self._metrics_answer = message
                    self._metrics_ready.notify_all()
        code = process.wait()
        self._exit_code = code
        self._wake.set()  # the sender ends
        with self._metrics_ready:
            self._metrics_ready.notify_all()
        if not self._stopping:
            log.error("the reconcile process exited on its own (code %s); stopping", code)
            self._on_lost(code)
