"""``python -m autoroll.edge.reconcile_main``: the reconcile process of ``autoroll serve``.

Started by the gunicorn worker (``autoroll.edge.reconcile_process``) with one end of a pipe
(``--fd``) and its owner key (``--owner``, made once per ``autoroll serve``). It reads the
same environment as its parent, so the same ``Config``; logs to the same stderr with the
same redactor; then:

1. takes the owner lock: an abstract Unix socket named after the owner key, which the
   kernel frees when the process that bound it is gone, however it ended. A worker that
   gunicorn restarted starts a new reconcile process while the old one may still be
   finishing its last step; the new one waits here, so there is never more than one
   reconcile loop per ``autoroll serve`` (docs/adr/002, 027). Linux only (elsewhere the
   lock is skipped, and said so);
2. builds and starts the ``Controller`` (``autoroll.edge.wiring``);
3. serves the pipe: each ``Deliver`` is the controller's ``deliver``, each
   ``MetricsWanted`` is answered with its exposition; a thread sends the loop's status every
   ``link.STATUS_SECONDS``;
4. stops on SIGTERM (from the worker) or when the pipe closes (the worker is gone): the
   controller's own bounded stop (the pass, the election, the Lease), then exits. SIGINT is
   ignored: a Ctrl-C in a terminal reaches the whole process group, and the worker decides.
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Final

from autoroll.config import Config
from autoroll.config.errors import ConfigError
from autoroll.controller.worker import WorkerStopTimeoutError
from autoroll.edge.lifecycle import RECONCILE_STOP_SECONDS, Controller
from autoroll.edge.link import STATUS_SECONDS, Deliver, MetricsText, MetricsWanted
from autoroll.edge.wiring import build_controller, log_secrets
from autoroll.instruments import logs

log = logging.getLogger("autoroll.edge.reconcile_main")  # also when run as __main__

#: Seconds between two attempts at the owner lock while another reconcile process holds it.
LOCK_RETRY_SECONDS: Final = 0.2
#: Exit status when the configuration no longer reads (the parent read it a moment before).
EXIT_CONFIG: Final = 2


def owner_lock(owner: str, *, stopping: Callable[[], bool]) -> socket.socket | None:
    """Hold the owner lock (module docstring, step 1); None when stopped while waiting or on
    a platform without abstract sockets."""
    if not sys.platform.startswith("linux"):
        log.warning("no owner lock on %s: one reconcile process is assumed", sys.platform)
        return None
    lock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    said = False
    while not stopping():
        try:
            lock.bind(f"\0autoroll-reconcile-{owner}")
            return lock
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
        if not said:
            log.info("waiting for the previous reconcile process to exit")
            said = True
        time.sleep(LOCK_RETRY_SECONDS)
    lock.close()
    return None


class _Serving:
    """The pipe's end in this process: answers, status, and the stop flag."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._send_lock = threading.Lock()
        self.stop = threading.Event()

    def send(self, message: object) -> bool:
        try:
            with self._send_lock:
                self._conn.send(message)
            return True
        except (OSError, ValueError):  # the worker is gone
            self.stop.set()
            return False

    def report(self, controller: Controller) -> None:
        """Send the loop's status now and every ``STATUS_SECONDS`` until stopped."""
        while self.send(controller.status()) and not self.stop.wait(STATUS_SECONDS):
            pass
        self.send(controller.status())  # "shutting down", if the worker still listens

    def serve(self, controller: Controller) -> None:
        """Answer the worker's messages until a stop or the pipe's end."""
        while not self.stop.is_set():
            try:
                if not self._conn.poll(0.2):
                    continue
                message = self._conn.recv()
            except (EOFError, OSError):
                log.info("the worker process is gone; stopping")
                break
            if isinstance(message, Deliver) and message.seconds > 0:
                controller.deliver_later(message.scope, message.seconds)
            elif isinstance(message, Deliver):
                controller.deliver(message.scope)
            elif isinstance(message, MetricsWanted):
                self.send(MetricsText(message.request, controller.exposition()))


def run(conn: Connection, owner: str, build: Callable[[], Controller]) -> int:
    """Steps 1 to 4 of the module docstring; the exit status."""
    serving = _Serving(conn)
    controller: Controller | None = None

    def on_sigterm(signum: int, frame: object) -> None:
        serving.stop.set()
        if controller is not None:
            controller.begin_stop()

    signal.signal(signal.SIGTERM, on_sigterm)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    lock = owner_lock(owner, stopping=serving.stop.is_set)
    if serving.stop.is_set():
        return 0
    controller = build()
    controller.start()
    log.info("reconcile process %s serving its worker", os.getpid())
    reporter = threading.Thread(
        target=serving.report, args=(controller,), name="autoroll-status", daemon=True
    )
    reporter.start()
    serving.serve(controller)
    try:
        controller.stop(timeout=RECONCILE_STOP_SECONDS)
    except WorkerStopTimeoutError as exc:
        # The thread is a daemon: the process exits anyway; say so loudly.
        log.error("%s; exiting without waiting for it", exc)
    else:
        log.info("reconcile thread stopped")
    serving.stop.set()
    reporter.join(1.0)
    if lock is not None:
        lock.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autoroll.edge.reconcile_main")
    parser.add_argument("--fd", type=int, required=True, help="this end of the worker's pipe")
    parser.add_argument("--owner", required=True, help="the owner lock's key")
    args = parser.parse_args(argv)
    try:
        config = Config.from_env(os.environ)
    except ConfigError as exc:
        print(f"autoroll reconcile process: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    logs.configure(
        level=config.log_level, log_format=config.log_format, secrets=log_secrets(config)
    )
    return run(Connection(args.fd), args.owner, lambda: build_controller(config))


if __name__ == "__main__":
    raise SystemExit(main())
