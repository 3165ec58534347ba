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

The SIGTERM handler only sets a flag; the main loop, woken by the signal's wake-up fd, does
the stopping. A Python handler runs in the main thread between two bytecodes, perhaps while
that thread holds a lock (a scrape's exposition, a delivery's nudge), or inside its own first
run when the worker's second SIGTERM comes (it sends one from its own handler and one as it
waits): a handler that took a lock could wait on itself for ever. That happened: the watched
cache's lock, taken by a handler inside the same handler, and the worker killed the
process at its bound, with the Lease left to expire.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
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
    """The pipe's end in this process: answers, status, and the stop flags."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._send_lock = threading.Lock()
        self.stop = threading.Event()  # the worker is gone (seen by a send)
        self.signalled = False  # SIGTERM: set by the handler, read by the main loop
        self._wake_read, self.wake_fd = os.pipe()  # the signal's C handler writes here
        for fd in (self._wake_read, self.wake_fd):
            os.set_blocking(fd, False)

    def on_sigterm(self, signum: int, frame: object) -> None:
        """A flag only, no lock (module docstring); the wake-up fd has woken ``serve``."""
        self.signalled = True

    def stopping(self) -> bool:
        return self.signalled or self.stop.is_set()

    def close(self) -> None:
        os.close(self._wake_read)
        os.close(self.wake_fd)

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
        while not self.stopping():
            try:
                ready = wait([self._conn, self._wake_read], timeout=0.2)
                if self._wake_read in ready:
                    with contextlib.suppress(BlockingIOError):
                        os.read(self._wake_read, 64)
                if self._conn not in ready or self.signalled:
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
    handler = signal.signal(signal.SIGTERM, serving.on_sigterm)
    interrupt = signal.signal(signal.SIGINT, signal.SIG_IGN)
    wake_fd = signal.set_wakeup_fd(serving.wake_fd, warn_on_full_buffer=False)
    try:
        return _run(serving, owner, build)
    finally:
        signal.set_wakeup_fd(wake_fd)
        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, interrupt)
        serving.close()


def _run(serving: _Serving, owner: str, build: Callable[[], Controller]) -> int:
    lock = owner_lock(owner, stopping=serving.stopping)
    if serving.stopping():
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
