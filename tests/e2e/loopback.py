"""Join the loopback of the node's network namespace to the host's, one TCP port at a time.

The e2e node (``node.py``) runs in a network namespace of its own whose only interfaces are
``lo`` and a dummy carrying the node IP: nothing in it can reach any other address. The control
plane and the registries listen on the host's 127.0.0.1. A ``LoopbackBridge`` makes such a port
appear on the node's 127.0.0.1 as well (same number), so the kubelet, containerd and
host-network pods use the very addresses the tests use; ``expose`` does the reverse for a port
something on the node listens on (the in-cluster controller's web port).

A socket belongs to the network namespace its creating thread was in, so the bridge creates
each socket after ``setns`` into the right namespace and switches straight back; bytes are
then copied between two ordinary sockets. Only 127.0.0.1 is ever listened on or connected to.

Errors::

    BridgeError     a port could not be listened on (the message names the port and namespace)
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


class BridgeError(RuntimeError):
    """A bridged port could not be opened."""


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


@contextlib.contextmanager
def in_netns(path: str | None) -> Iterator[None]:
    """Run the block with this thread in the network namespace at ``path`` (None: stay)."""
    if path is None:
        yield
        return
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(path, os.O_RDONLY)
    try:
        _setns(target)
        try:
            yield
        finally:
            _setns(home)
    finally:
        os.close(target)
        os.close(home)


def _pump(source: socket.socket, sink: socket.socket, done: threading.Barrier) -> None:
    """Copy until EOF, then half-close; the second of a pair to finish closes both."""
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)
        with contextlib.suppress(threading.BrokenBarrierError):
            if done.wait() == 0:
                source.close()
                sink.close()


@dataclass
class _Forward:
    port: int
    listen_ns: str | None
    connect_ns: str | None
    listener: socket.socket
    connections: set[socket.socket] = field(default_factory=set)


class LoopbackBridge:
    """Forward 127.0.0.1 ports between the host's network namespace and ``netns``.

    ``netns`` is a path such as ``/proc/<pid>/ns/net``. Close with ``close()`` (or ``with``);
    closing ends every listener and every open connection.
    """

    def __init__(self, netns: str) -> None:
        self.netns = netns
        self._lock = threading.Lock()
        self._forwards: list[_Forward] = []
        self._threads: list[threading.Thread] = []
        self._closed = False

    def import_port(self, port: int) -> None:
        """The host's 127.0.0.1:``port`` answers on the node's 127.0.0.1:``port`` too."""
        self._open(port, listen_ns=self.netns, connect_ns=None)

    def expose(self, port: int) -> None:
        """The node's 127.0.0.1:``port`` answers on the host's 127.0.0.1:``port`` too."""
        self._open(port, listen_ns=None, connect_ns=self.netns)

    def _open(self, port: int, *, listen_ns: str | None, connect_ns: str | None) -> None:
        with self._lock:
            if any(f.port == port and f.listen_ns == listen_ns for f in self._forwards):
                return
        where = "the node" if listen_ns else "the host"
        try:
            with in_netns(listen_ns):
                listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", port))
            listener.listen(64)
        except OSError as exc:
            raise BridgeError(f"cannot listen on 127.0.0.1:{port} in {where}: {exc}") from exc
        forward = _Forward(port, listen_ns, connect_ns, listener)
        thread = threading.Thread(
            target=self._accept, args=(forward,), name=f"loopback-{port}", daemon=True
        )
        with self._lock:
            self._forwards.append(forward)
            self._threads.append(thread)
        thread.start()

    def _accept(self, forward: _Forward) -> None:
        while True:
            try:
                client, _ = forward.listener.accept()
            except OSError:
                return  # closed
            try:
                with in_netns(forward.connect_ns):
                    upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                upstream.settimeout(5)
                upstream.connect(("127.0.0.1", forward.port))
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._closed:
                    client.close()
                    upstream.close()
                    return
                forward.connections -= {c for c in forward.connections if c.fileno() == -1}
                forward.connections.update((client, upstream))
            done = threading.Barrier(2)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(a, b, done), daemon=True).start()

    def close(self) -> None:
        """Stop listening and cut every bridged connection."""
        with self._lock:
            self._closed = True
            forwards = list(self._forwards)
        for forward in forwards:
            with contextlib.suppress(OSError):
                forward.listener.shutdown(socket.SHUT_RDWR)
            forward.listener.close()
            for conn in list(forward.connections):
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
                conn.close()
        for thread in self._threads:
            thread.join(5)

    def __enter__(self) -> LoopbackBridge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
