"""gunicorn's ``gthread`` worker with a deadline on reading each request.

Why: gthread hands a connection to a request thread as soon as its first byte arrives, and
the thread then reads headers and body with blocking reads that have no overall time
limit. A client sending one byte a second ("slow drip", slowloris) holds a thread for as
long as it likes; a handful of them hold every thread, and ``/healthz`` stops answering —
kubelet then restarts a controller that was doing nothing wrong.

``DeadlineThreadWorker`` gives every request ``REQUEST_READ_SECONDS`` to arrive in full,
counted from when a thread picks the connection up. When it runs out, the connection's
reads end as if the client had closed it: gunicorn drops a half-read request line or
headers, and the webhook handler sees a short body, which fails its signature check (403).
Either way the connection closes and the thread is free again.

Limits (documented in docs/faults.md): a dripping client holds one of the ``threads`` for
at most ``REQUEST_READ_SECONDS``; up to ``threads - 1`` of them at once leave the probes
unaffected, more make other requests wait for a thread — at most that long. TLS is not
terminated by autoroll (sockets are plain), so only plain sockets are wrapped.
"""

from __future__ import annotations

import contextlib
import math
import socket
import time
from typing import Any, Final

from gunicorn.workers.gthread import ThreadWorker

#: Seconds one request (request line, headers and body) may take to arrive. Forgejo sends
#: a webhook of a few KiB at once; a probe is one packet.
REQUEST_READ_SECONDS: Final = 10.0


class DeadlineSocket:
    """A socket whose reads end (EOF) at a deadline; everything else is passed through.

    Once cut, it stays cut: the rest of a half-sent request must never be parsed as the
    start of the next one.
    """

    __slots__ = ("_cut", "_deadline", "_sock")

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._deadline = math.inf
        self._cut = False

    def start(self, seconds: float) -> None:
        """A new request begins: it has ``seconds`` to arrive."""
        self._deadline = time.monotonic() + seconds

    @property
    def cut(self) -> bool:
        return self._cut

    def recv(self, size: int, flags: int = 0) -> bytes:
        if self._cut:
            return b""
        previous = self._sock.gettimeout()
        if previous == 0.0:  # a non-blocking caller (a poller) never waits anyway
            return self._sock.recv(size, flags)
        left = self._deadline - time.monotonic()
        if left <= 0:
            return self._hang_up()
        self._sock.settimeout(left if previous is None else min(previous, left))
        try:
            return self._sock.recv(size, flags)
        except TimeoutError:
            if time.monotonic() >= self._deadline:
                return self._hang_up()
            raise  # the caller's own, shorter timeout
        finally:
            self._sock.settimeout(previous)

    def _hang_up(self) -> bytes:
        self._cut = True
        with contextlib.suppress(OSError):  # already gone is fine
            self._sock.shutdown(socket.SHUT_RD)
        return b""

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class DeadlineThreadWorker(ThreadWorker):  # type: ignore[misc]
    """``gthread`` with ``REQUEST_READ_SECONDS`` per request (see the module docstring).

    On SIGTERM it also tells the app's runtime to begin stopping (``begin_stop``, if the
    loaded app has one), so the reconcile pass winds down while requests drain.
    """

    def handle_exit(self, sig: int, frame: Any) -> None:
        super().handle_exit(sig, frame)
        begin_stop = getattr(getattr(self.app, "runtime", None), "begin_stop", None)
        if callable(begin_stop):
            begin_stop()

    def handle(self, conn: Any) -> Any:
        if not self.cfg.is_ssl:
            if not isinstance(conn.sock, DeadlineSocket):
                conn.sock = DeadlineSocket(conn.sock)
            if conn.sock.cut:
                return False  # close: what is left of the stream is not a request
            conn.sock.start(REQUEST_READ_SECONDS)
        return super().handle(conn)
