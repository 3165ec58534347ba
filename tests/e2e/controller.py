"""``autoroll serve`` as a local process against the e2e control plane and registry.

Configured only through its documented environment (issue 5): the kubeconfig of the control
plane, ``FORGEJO_*`` for the registry, a fresh ``WEBHOOK_SECRET``, ``REGISTRY_SCHEME=http``
because the local registry has no TLS. Its output is kept (``Autoroll.lines``) so a test can
assert on decisions, and can be echoed live (the demo does).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import re
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import requests

from tests.e2e.controlplane import ControlPlane
from tests.support.autoroll_cli import run_autoroll
from tests.support.ports import free_port
from tests.support.registry import RegistryServer
from tests.support.serve import POD_GRACE_SECONDS, sigterm_and_wait, stop_or_kill

DEFAULT_COMMAND = (sys.executable, "-m", "autoroll", "serve")


class ControllerError(RuntimeError):
    """``autoroll serve`` exited or did not answer /healthz (message has its last output)."""


@dataclass
class Autoroll:
    """The running controller: its URL, the webhook secret, and every line it printed.

    ``process`` is the local process, or None when the controller runs as a pod
    (``incluster.py``); then ``restart`` replaces the pod (a self-roll or a failover is one)
    and ``helm`` runs a helm command on its release (``helm("test", "autoroll")``).
    """

    url: str
    secret: str
    process: subprocess.Popen[str] | None
    output: list[str] = field(default_factory=list)
    restart: Callable[[], None] | None = None
    #: ``helm <args>`` against the release (in-cluster only); its standard output.
    helm: Callable[..., str] | None = None

    def lines(self, pattern: str = "", *, since: int = 0) -> list[str]:
        """Output lines so far, from line ``since`` on, that match the regular expression
        ``pattern``."""
        regex = re.compile(pattern)
        return [line for line in list(self.output)[since:] if regex.search(line)]

    def wait_for_line(self, pattern: str, *, timeout: float = 30.0) -> str:
        """The first output line matching ``pattern``; AssertionError after ``timeout``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.lines(pattern)
            if found:
                return found[0]
            time.sleep(0.1)
        tail = "\n".join(self.output[-20:])
        raise AssertionError(f"no autoroll line matched {pattern!r} in {timeout}s; last:\n{tail}")

    def terminate(self, timeout: float) -> float:
        """SIGTERM the local process and wait for it to exit; the seconds it took.

        AssertionError with the last lines it printed (each stamped) if it is still running
        after ``timeout``: a slow shutdown says which step it was in.
        """
        assert self.process is not None, "terminate() is for a local process"
        try:
            return sigterm_and_wait(self.process, timeout)[1]
        except subprocess.TimeoutExpired:
            tail = "\n".join(self.output[-30:])
            raise AssertionError(
                f"autoroll still running {timeout}s after SIGTERM; last:\n{tail}"
            ) from None

    def webhook(
        self,
        body: bytes = b'{"ref": "refs/heads/main"}',
        *,
        sign: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> int:
        """POST ``body`` to /webhook, signed as Forgejo signs it unless ``sign`` is False.

        ``headers`` are sent as well (after the signature), e.g. a forged signature header.
        """
        sent = {"Content-Type": "application/json"}
        if sign:
            digest = hmac.new(self.secret.encode(), body, hashlib.sha256).hexdigest()
            sent["X-Forgejo-Signature"] = digest
        sent.update(headers or {})
        headers = sent
        response = requests.post(f"{self.url}/webhook", data=body, headers=headers, timeout=5)
        return response.status_code


def run_plan(plane: ControlPlane, registry: RegistryServer, label_selector: str) -> str:
    """``autoroll plan`` as a user runs it, from their machine with their kubeconfig, for the
    workloads ``label_selector`` picks; its output (fails the test if it exits non-zero)."""
    env = {
        **os.environ,
        "FORGEJO_HOST": registry.host,
        "FORGEJO_USER": registry.user,
        "FORGEJO_TOKEN": registry.password,
        "REGISTRY_SCHEME": "http",
        "LABEL_SELECTOR": label_selector,
        # As the tests' controllers run (no health window unless a test is about it).
        "ROLL_HEALTHY_SECONDS": "0",
    }
    done = run_autoroll("plan", "--kubeconfig", str(plane.kubeconfig), env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def controller_env(
    *, plane: ControlPlane, registry: RegistryServer, secret: str, port: int, poll_seconds: int
) -> dict[str, str]:
    """The documented environment of ``autoroll serve`` for this control plane and registry."""
    return {
        "KUBECONFIG": str(plane.kubeconfig),
        "FORGEJO_HOST": registry.host,
        "FORGEJO_USER": registry.user,
        "FORGEJO_TOKEN": registry.password,
        "WEBHOOK_SECRET": secret,
        "POLL_INTERVAL_SECONDS": str(poll_seconds),
        "LISTEN_ADDR": f"127.0.0.1:{port}",
        "PROBE_ADDR": f"127.0.0.1:{free_port()}",  # the probes' own port (autoroll.edge.probes)
        "REGISTRY_SCHEME": "http",
        "LOG_LEVEL": "info",
        "LOG_FORMAT": "text",
        # No health window unless a test is about it: the scenarios time rolls.
        "ROLL_HEALTHY_SECONDS": "0",
    }


#: The e2e fixture ``start_autoroll`` (``conftest.py``): ``start(poll=..., registry=..., **env)``
#: starts the controller for the test and returns it.
StartAutoroll = Callable[..., Autoroll]


@contextlib.contextmanager
def running_autoroll(
    *,
    plane: ControlPlane,
    registry: RegistryServer,
    poll_seconds: int = 5,
    extra_env: Mapping[str, str] | None = None,
    command: Sequence[str] = DEFAULT_COMMAND,
    cwd: Path | None = None,
    echo: Callable[[str], None] | None = None,
    timeout: float = 30.0,
) -> Iterator[Autoroll]:
    """Start the controller, wait for /healthz, yield it; SIGTERM (then kill) afterwards."""
    port = free_port()
    secret = secrets.token_hex(32)
    env = {
        **os.environ,
        **controller_env(
            plane=plane, registry=registry, secret=secret, port=port, poll_seconds=poll_seconds
        ),
        **(extra_env or {}),
    }
    process = subprocess.Popen(
        list(command),
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # a terminal Ctrl-C reaches the caller, which stops it in order
    )
    autoroll = Autoroll(url=f"http://127.0.0.1:{port}", secret=secret, process=process)

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            autoroll.output.append(line.rstrip("\n"))
            if echo is not None:
                echo(line.rstrip("\n"))

    reader = threading.Thread(target=pump, name="autoroll-output", daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                reader.join(2)
                tail = "\n".join(autoroll.output[-20:])
                raise ControllerError(
                    f"`{' '.join(command)}` exited with code {process.returncode}:\n{tail}"
                )
            with contextlib.suppress(requests.RequestException):
                if requests.get(f"{autoroll.url}/healthz", timeout=1).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise ControllerError(
                    f"autoroll did not answer {autoroll.url}/healthz in {timeout}s"
                )
            time.sleep(0.2)
        yield autoroll
    finally:
        stop_or_kill(process, POD_GRACE_SECONDS, kill_wait=5)
        reader.join(5)
