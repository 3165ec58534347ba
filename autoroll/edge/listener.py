"""A standard-library HTTP listener with a thread of its own, beside the main port.

The probes (``autoroll.edge.probes``) and the pinning webhook (``autoroll.edge.admission``)
each have one, so that nothing slow on the main port delays them. ``ListenerServer`` is the
``ThreadingHTTPServer`` they share the settings of: a thread per connection that never keeps
the process alive, IPv4 or IPv6 as the host says, and ``slots`` for the connections served
at once (each server takes one per connection its own way). ``Listener`` binds its server
at ``start`` (raising if it cannot, so a wrong address stops the worker at boot), serves it
on a daemon thread, and ``stop`` shuts it down.
"""

from __future__ import annotations

import socket
import threading
from abc import ABC, abstractmethod
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ListenerServer(ThreadingHTTPServer):
    """A ``ThreadingHTTPServer`` serving at most ``max_connections`` at once."""

    daemon_threads = True  # a connection thread never keeps the process alive
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        *,
        max_connections: int,
    ) -> None:
        self.slots = threading.BoundedSemaphore(max_connections)
        # The listen backlog; socketserver's default of 5 would leave a burst of connections
        # waiting in the kernel instead of being answered or refused at once.
        self.request_queue_size = 2 * max_connections
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        super().__init__(address, handler)


class Listener(ABC):
    """A server bound by ``start`` and served on a daemon thread named ``thread_name``;
    ``what`` names it in the error of a ``port`` asked before ``start``."""

    def __init__(self, host: str, port: int, *, thread_name: str, what: str) -> None:
        self._address = (host, port)
        self._thread_name = thread_name
        self._what = what
        self._server: ListenerServer | None = None
        self._thread: threading.Thread | None = None

    @abstractmethod
    def _bind(self) -> ListenerServer:
        """The server, bound to ``self._address``."""

    @property
    def port(self) -> int:
        """The bound port (the one asked for, or the one chosen for port 0)."""
        if self._server is None:
            raise RuntimeError(f"{self._what} is not started")
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._server = self._bind()
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name=self._thread_name,
            daemon=True,
        )
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        server.shutdown()
        server.server_close()
        thread.join(timeout)


__all__ = ["Listener", "ListenerServer"]
