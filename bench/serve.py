"""A real ``autoroll serve`` (gunicorn, one worker) on 127.0.0.1 for measurements 2 and 3
(``bench.webhook``): started through its environment only, read through ``/metrics`` and
``/proc``, sent signed webhooks, stopped with SIGTERM.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import requests
from prometheus_client.parser import text_string_to_metric_families

from bench.child import REPO_ROOT, controller_python
from bench.controlplane import ApiServer
from bench.loadgen import BODY
from tests.support.ports import free_port
from tests.support.registry import RegistryServer

#: The per-tag debounce of webhook deliveries (the controller's default, set explicitly).
TAG_PASS_INTERVAL_SECONDS = 5


@dataclass
class Serve:
    """A running ``autoroll serve``: URL, webhook secret, its log file."""

    url: str
    secret: str
    process: subprocess.Popen[bytes]
    log: Path

    def metrics(self) -> dict[str, float]:
        """Every sample of ``/metrics`` as ``name{labels}`` → value."""
        text = requests.get(f"{self.url}/metrics", timeout=10).text
        samples = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
                samples[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
        return samples

    def ticks(self) -> int:
        samples = self.metrics()
        return int(sum(v for k, v in samples.items() if k.startswith("autoroll_ticks_total")))

    def tick_seconds(self) -> float:
        """Mean pass duration so far (``autoroll_tick_duration_seconds`` sum / count)."""
        samples = self.metrics()
        count = samples.get("autoroll_tick_duration_seconds_count", 0.0)
        return samples.get("autoroll_tick_duration_seconds_sum", 0.0) / count if count else 0.0

    def webhook(self, session: requests.Session, body: bytes = BODY) -> int:
        digest = hmac.new(self.secret.encode(), body, hashlib.sha256).hexdigest()
        response = session.post(
            f"{self.url}/webhook",
            data=body,
            headers={"Content-Type": "application/json", "X-Forgejo-Signature": digest},
            timeout=10,
        )
        return response.status_code

    def peak_rss_kib(self) -> int:
        """The largest peak RSS (VmHWM) of ``autoroll serve``'s processes."""
        return max(self.peak_rss_by_process().values(), default=0)

    def peak_rss_by_process(self) -> dict[str, int]:
        """Each process's peak RSS (VmHWM, KiB): the gunicorn ``master``, its ``worker``
        (the HTTP edge) and the ``reconcile`` process beside it (docs/adr/027). Shared pages
        count in each, so their sum is an upper bound of what the pod holds."""
        found: dict[str, int] = {}
        pids = [(self.process.pid, "master")]
        while pids:
            pid, role = pids.pop()
            with contextlib.suppress(OSError):
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                if b"reconcile_main" in cmdline:
                    role = "reconcile"
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        found[role] = max(found.get(role, 0), int(line.split()[1]))
                for task in Path(f"/proc/{pid}/task").iterdir():
                    children = (task / "children").read_text().split()
                    pids += [(int(c), "worker") for c in children]
        return found

    def wait_ticks(self, at_least: int, timeout: float) -> int:
        """Wait until at least ``at_least`` passes have finished; return the count."""
        deadline = time.monotonic() + timeout
        while (ticks := self.ticks()) < at_least:
            if time.monotonic() > deadline:
                raise RuntimeError(f"autoroll ran {ticks} passes, expected {at_least} ({self.log})")
            time.sleep(0.05)
        return ticks


@contextlib.contextmanager
def running_serve(
    *,
    api: ApiServer,
    registry: RegistryServer,
    selector: str,
    log: Path,
    extra_env: dict[str, str] | None = None,
) -> Iterator[Serve]:
    """``autoroll serve`` configured through its environment only; stopped with SIGTERM."""
    port = free_port()
    secret = secrets.token_hex(32)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(REPO_ROOT),  # the runtime venv holds the libraries, not the project
        "HOME": str(log.parent),
        "KUBECONFIG": str(api.kubeconfig),
        "FORGEJO_HOST": registry.host,
        "FORGEJO_USER": registry.user,
        "FORGEJO_TOKEN": registry.password,
        "WEBHOOK_SECRET": secret,
        "REGISTRY_SCHEME": "http",
        "LABEL_SELECTOR": selector,
        "LISTEN_ADDR": f"127.0.0.1:{port}",
        # The probes' own listener on a free port too: its default (0.0.0.0:8081) may be
        # taken on a shared machine, and a listener that cannot bind stops the worker.
        "PROBE_ADDR": f"127.0.0.1:{free_port()}",
        "POLL_INTERVAL_SECONDS": "3600",  # only the first pass and webhooks start passes
        # The guardrails' budget is lifted: this measures how soon a pass deletes, not the
        # budget's pace (tests/e2e/test_guardrails.py measures that). With it on, the
        # thousands of pods the bench creates seconds before the controller starts are, by
        # design, the budget's evidence of a previous leader's deletions (ADR 016), and the
        # latency Deployments left rolling (no controller manager) fill the in-flight slots.
        "ROLL_BUDGET_DELETIONS": "0",
        "ROLL_BUDGET_IN_FLIGHT": "0",
        # Nor is the health window (ROLL_HEALTHY_SECONDS): this measures how soon a pass
        # deletes, and the window would pace each Deployment's next pod by 30 s (the bench's
        # pods carry Ready times, so it would hold them exactly as on a cluster).
        "ROLL_HEALTHY_SECONDS": "0",
        "LOG_LEVEL": "info",
        "LOG_FORMAT": "text",
        # The shipped default, named so the webhook load can wait out its trailing pass.
        "TAG_PASS_INTERVAL_SECONDS": str(TAG_PASS_INTERVAL_SECONDS),
        **(extra_env or {}),
    }
    with log.open("wb") as out:
        process = subprocess.Popen(
            [controller_python(), "-m", "autoroll", "serve"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    serve = Serve(f"http://127.0.0.1:{port}", secret, process, log)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                tail = log.read_text(errors="replace").splitlines()[-5:]
                raise RuntimeError(
                    f"autoroll serve exited {process.returncode}; see {log}; it ended with:\n"
                    + "\n".join(tail)
                )
            with contextlib.suppress(requests.RequestException):
                if requests.get(f"{serve.url}/healthz", timeout=1).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"autoroll serve did not answer /healthz; see {log}")
            time.sleep(0.1)
        serve.wait_ticks(1, timeout=300)  # the start-up pass
        yield serve
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
