"""Run the real ``autoroll serve`` (gunicorn) as a subprocess on 127.0.0.1, for black-box tests.

``start_serve`` gives the process a hand-made environment (nothing from the developer's
shell leaks in), captures stdout and stderr to separate files (secret scans read both),
and waits for ``/healthz``. ``dead_kubeconfig`` points at a closed port, for tests that
need the HTTP edge and not the cluster: every pass then fails fast and is survived.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.support.ports import OnLoopback, free_port
from tests.support.wait import wait_until

#: Kubernetes' default terminationGracePeriodSeconds: how long a pod gets after SIGTERM, so how
#: long a harness waits for a local controller before it kills it. The controller's own bound
#: (``autoroll.edge.server.GRACEFUL_TIMEOUT_SECONDS``) is inside it; a shorter wait here kills
#: a controller that is still shutting down within that bound.
POD_GRACE_SECONDS = 30


def sigterm_and_wait(process: subprocess.Popen[Any], timeout: float) -> tuple[int, float]:
    """SIGTERM a local controller, as the kubelet would its pod; (exit code, seconds until it
    exited). ``subprocess.TimeoutExpired`` if it is still running after ``timeout``."""
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    code = process.wait(timeout)
    return code, time.monotonic() - started


def stop_or_kill(
    process: subprocess.Popen[Any], grace: float = POD_GRACE_SECONDS, *, kill_wait: float = 10
) -> None:
    """SIGTERM, then SIGKILL once ``grace`` is over: a teardown that never leaves it running."""
    if process.poll() is not None:
        return
    try:
        sigterm_and_wait(process, grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(kill_wait)


def scrape_metric(url: str, name: str, **labels: str) -> float:
    """The samples named ``name`` on ``<url>/metrics`` whose labels include ``labels``,
    summed over the labels not given (``kind``, say: every workload kind); 0 when absent.

    Parsed with ``prometheus_client``'s own text parser, so label order, escaping and
    exposition details are the library's business, not a regex's.
    """
    text = requests.get(f"{url}/metrics", timeout=5).text
    return sum(
        float(sample.value)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name and labels.items() <= dict(sample.labels).items()
    )


def dead_kubeconfig(path: Path) -> Path:
    """A kubeconfig whose API server is a closed port on 127.0.0.1."""
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f'clusters: [{{name: c, cluster: {{server: "https://127.0.0.1:{free_port()}"}}}}]\n'
        "users: [{name: u, user: {token: not-a-real-token}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
    )
    return path


@dataclass
class Serve(OnLoopback):
    process: subprocess.Popen[bytes]
    port: int
    stdout_path: Path
    stderr_path: Path
    probe_port: int = 0

    @property
    def probe_url(self) -> str:
        """The probes' own listener (``PROBE_ADDR``)."""
        return f"http://127.0.0.1:{self.probe_port}"

    def output(self) -> str:
        """Everything the process wrote so far, stdout then stderr."""
        return self.stdout_path.read_text(errors="replace") + self.stderr_path.read_text(
            errors="replace"
        )

    def metric(self, name: str, **labels: str) -> float:
        return scrape_metric(self.url, name, **labels)

    def ticks(self) -> float:
        return self.metric("autoroll_ticks_total", outcome="ok") + self.metric(
            "autoroll_ticks_total", outcome="error"
        )

    def terminate(self, timeout: float = POD_GRACE_SECONDS) -> tuple[int, float]:
        """SIGTERM; returns (exit code, seconds until exit)."""
        return sigterm_and_wait(self.process, timeout)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def start_serve(tmp: Path, env: dict[str, str], *, timeout: float = 30) -> Serve:
    port, probe_port = free_port(), free_port()
    full_env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp),
        "LISTEN_ADDR": f"127.0.0.1:{port}",
        "PROBE_ADDR": f"127.0.0.1:{probe_port}",  # the probes' own port (autoroll.edge.probes)
        "POLL_INTERVAL_SECONDS": "3600",  # only the first pass and nudges run
        # No health window unless a test is about it (it passes ROLL_HEALTHY_SECONDS).
        "ROLL_HEALTHY_SECONDS": "0",
        **env,
    }
    stdout_path, stderr_path = tmp / "serve.stdout", tmp / "serve.stderr"
    with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "autoroll", "serve"], env=full_env, stdout=out, stderr=err
        )
    serve = Serve(process, port, stdout_path, stderr_path, probe_port)

    def healthy() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"serve exited {process.returncode}:\n{serve.output()}")
        try:
            return requests.get(f"{serve.url}/healthz", timeout=1).status_code == 200
        except (requests.ConnectionError, requests.Timeout):
            return False  # not listening yet, or slow to answer on a busy machine: ask again

    try:
        wait_until(healthy, timeout, "/healthz")
    except BaseException:
        serve.kill()
        raise
    return serve


def drip(port: int, prefix: bytes, payload: bytes, cut: list[float]) -> None:
    """Send ``prefix`` at once, then ``payload`` a byte a second, until the server is done.

    Appends the seconds until the server answered or hung up; a server that lets a
    dripping client finish would make this take ``len(payload)`` seconds.
    """
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        if prefix:
            sock.sendall(prefix)
        sock.settimeout(1.0)  # the pace: one byte per second
        for byte in payload:
            try:
                sock.sendall(bytes([byte]))
                sock.recv(65536)
            except TimeoutError:
                continue  # the server is still waiting for us: keep dripping
            except OSError:
                pass  # reset: the server hung up
            # An answer, EOF or a reset: the server is done with this connection.
            cut.append(time.monotonic() - started)
            return
