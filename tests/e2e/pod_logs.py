"""The in-cluster controller's log lines, read as the kubelet wrote them.

The API server cannot reach the kubelet (the node's address lives in its own network
namespace), so ``kubectl logs`` is not available; ``PodLogs`` reads the container log files
the kubelet writes, from the node's mount namespace (``/proc/<holder>/root/var/log/pods``).
"""

from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path
from typing import Any

from tests.e2e.helpers import core_api
from tests.e2e.node import Node


def parse_cri_log(lines: list[str], pending: str = "") -> tuple[list[str], str]:
    """Container log lines as the kubelet writes them (``<time> <stream> <P|F> <text>``):
    the text of each complete line, and what a trailing partial (``P``) line holds so far."""
    out: list[str] = []
    for line in lines:
        parts = line.split(" ", 3)
        if len(parts) < 4:
            continue
        _, _, tag, text = parts
        pending += text
        if tag == "F":
            out.append(pending)
            pending = ""
    return out, pending


class PodLogs:
    """Follow the ``autoroll`` container of every pod ``selector`` picks into ``output``."""

    def __init__(
        self, kube: Any, node: Node, namespace: str, output: list[str], *, selector: str
    ) -> None:
        self.core = core_api(kube)
        self.selector = selector
        self.root = node.pod_logs
        self.namespace = namespace
        self.output = output
        self._offsets: dict[Path, int] = {}
        self._pending: dict[Path, str] = {}
        self._pods: list[tuple[str, str]] = []  # (name, uid), in creation order
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="autoroll-pod-logs", daemon=True)

    def __enter__(self) -> PodLogs:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._read()

    def _run(self) -> None:
        rounds = 0
        while not self._stop.is_set():
            if rounds % 10 == 0:  # new pods are rare: ask the API once a second
                with contextlib.suppress(Exception):  # the next round tries again
                    self._discover()
            rounds += 1
            self._read()
            self._stop.wait(0.1)

    def _discover(self) -> None:
        listed = self.core.list_namespaced_pod(
            self.namespace, label_selector=self.selector, _preload_content=False
        )
        try:
            body = listed.data
        finally:
            listed.release_conn()  # unreleased raw responses leak one socket each
        items = sorted(json.loads(body)["items"], key=lambda p: p["metadata"]["creationTimestamp"])
        for pod in items:
            key = (pod["metadata"]["name"], pod["metadata"]["uid"])
            if key not in self._pods:
                self._pods.append(key)

    def _read(self) -> None:
        for name, uid in list(self._pods):
            directory = self.root / f"{self.namespace}_{name}_{uid}" / "autoroll"
            with contextlib.suppress(OSError):
                for path in sorted(directory.glob("*.log"), key=lambda p: int(p.stem)):
                    self._read_file(path)

    def _read_file(self, path: Path) -> None:
        offset = self._offsets.get(path, 0)
        with path.open("rb") as handle:
            handle.seek(offset)
            data = handle.read()
        complete, _, _ = data.rpartition(b"\n")
        if not complete:
            return
        self._offsets[path] = offset + len(complete) + 1
        lines, self._pending[path] = parse_cri_log(
            complete.decode(errors="replace").split("\n"), self._pending.get(path, "")
        )
        self.output.extend(lines)
