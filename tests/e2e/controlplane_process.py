"""One server process of the e2e control plane (``controlplane.py``): started in its own
session with its output in a log file, read back as the log's last lines when it fails, and
stopped with SIGTERM, then SIGKILL, clients before servers; and the HTTP probe its readiness
is polled with. The node's processes (``node_process.Process``) and the benchmarks' API
server (``bench/controlplane.py``) are the same kind of process.
"""

from __future__ import annotations

import signal
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

LOG_TAIL_LINES = 30


# --- processes ----------------------------------------------------------------


class Component:
    """One server process with its output in a log file.

    ``env`` replaces the environment (None: this process's); ``preexec_fn`` runs in the child
    between fork and exec (the node's processes join their cgroups there).
    """

    def __init__(
        self,
        name: str,
        argv: list[str],
        log: Path,
        *,
        env: Mapping[str, str] | None = None,
        preexec_fn: Callable[[], None] | None = None,
    ) -> None:
        self.name = name
        self.argv = argv
        self.log = log
        self.env = None if env is None else dict(env)
        self.preexec_fn = preexec_fn
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            # Own session: a Ctrl-C in the terminal reaches the test runner, which tears down
            # in order, rather than every server at once.
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
                # Callers pass only prctl and file writes (no locks, no imports): safe even
                # with the test runner's threads (``node_process.tied_to_us``).
                preexec_fn=self.preexec_fn,  # noqa: PLW1509
            )

    def exit_code(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def tail(self, lines: int = LOG_TAIL_LINES) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM, wait, then SIGKILL; never leaves the process behind."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def send_signal(self, number: signal.Signals) -> None:
        """Send ``number`` to the process (the node's ``Process``: to its process group)."""
        assert self.proc is not None
        self.proc.send_signal(number)


def http_ok(url: str, *, context: ssl.SSLContext | None = None, token: str | None = None) -> bool:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=2, context=context) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def terminate_all(components: Sequence[Component]) -> None:
    # Clients before servers: the controller manager, then the apiserver, then etcd.
    for component in reversed(components):
        component.stop(timeout=15)
