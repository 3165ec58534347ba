"""The API server's way into the node's network: an HTTP CONNECT proxy, as a cluster's
konnectivity server is.

The API server calls a webhook that names a Service (the chart's pinning webhook) at the
Service's ClusterIP. That address exists only inside the node's network namespace (kube-proxy's
rules live there); the API server runs on the host's 127.0.0.1. A real control plane that
cannot route to the pod network (managed clusters, isolated control planes) reaches it
through its *egress selector*: every connection of the ``cluster`` network context (webhooks
by Service, aggregated APIs, the kubelets) goes through a proxy that speaks HTTP CONNECT. The
test control plane is started with one (``controlplane_config.egress_selector_config``), over a
Unix socket; this is the proxy at its other end: each ``CONNECT host:port`` is dialled from
inside the node's network namespace (``loopback.in_netns``, per socket, nothing on the host
changes), then bytes are copied both ways.

Only what kube-proxy and the node's routes allow is reachable: the node's own addresses, its
pods and its Services. Until a node starts, the socket does not exist and such calls fail,
as they would with no proxy running (a webhook's failurePolicy decides what that means).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from pathlib import Path

from tests.e2e.loopback import _pump, in_netns

#: The longest request head accepted (a CONNECT line and a few headers).
_MAX_HEAD = 8192


class ClusterEgressProxy:
    """``CONNECT`` over the Unix socket at ``path``, dialled inside ``netns``."""

    def __init__(self, path: Path, netns: str) -> None:
        self.path = path
        self.netns = netns
        self.connects: list[str] = []  # every target asked for, in order
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, name="cluster-egress", daemon=True)

    def __enter__(self) -> ClusterEgressProxy:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self._listener.bind(str(self.path))
        os.chmod(self.path, 0o600)
        self._listener.listen(64)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.close()
        self._thread.join(5)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with self._lock:
            self._open.add(client)
        try:
            head = b""
            while b"\r\n\r\n" not in head and len(head) < _MAX_HEAD:
                chunk = client.recv(1024)
                if not chunk:
                    return
                head += chunk
            line = head.split(b"\r\n", 1)[0].decode("latin-1")
            method, _, rest = line.partition(" ")
            target = rest.partition(" ")[0]
            host, _, port = target.rpartition(":")
            if method != "CONNECT" or not host or not port.isdigit():
                client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
                return
            self.connects.append(target)
            try:
                with in_netns(self.netns):
                    upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                upstream.settimeout(10)
                upstream.connect((host.strip("[]"), int(port)))
                upstream.settimeout(None)
            except OSError as exc:
                client.sendall(f"HTTP/1.1 502 Bad Gateway\r\n\r\n{exc}".encode())
                return
            with self._lock:
                self._open.add(upstream)
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            leftover = head.split(b"\r\n\r\n", 1)[1]
            if leftover:
                upstream.sendall(leftover)
            done = threading.Barrier(2)
            threading.Thread(target=_pump, args=(upstream, client, done), daemon=True).start()
            _pump(client, upstream, done)
        except OSError:
            return
        finally:
            with self._lock:
                self._open.discard(client)


__all__ = ["ClusterEgressProxy"]
