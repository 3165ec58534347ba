"""A bounded CPU load beside the benchmark: Debian's ``stress-ng``, a fixed number of workers
and a time limit, with the load average it caused recorded all along.

Issue 28: a controller shares its node with busy workloads, so the quiet figures are not the
ones users see. ``bench.run --load-cpus N`` runs the same measurements with ``stress-ng
--cpu N --timeout T`` beside them (started first, stopped last, and killed by its own time
limit if the benchmark dies), and samples the 1-minute load average every
``SAMPLE_SECONDS``; the report shows the loaded run beside the quiet one, each with its
load average.

``stress-ng`` comes from Debian (``scripts/tools.sh bench``, pinned by name in
``scripts/versions.env`` like the other apt packages).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Final

#: Seconds between two samples of the load average.
SAMPLE_SECONDS: Final = 10.0


@dataclass
class LoadRecord:
    """What ran beside the benchmark and the load average it saw (1-minute, sampled)."""

    workers: int
    timeout_s: int
    command: str
    before: tuple[float, float, float]
    samples: list[float] = field(default_factory=list)
    after: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def as_json(self) -> dict[str, Any]:
        found = asdict(self)
        if self.samples:
            found["mean"] = sum(self.samples) / len(self.samples)
            found["min"], found["max"] = min(self.samples), max(self.samples)
        return found


def describe(record: dict[str, Any]) -> str:
    """``stress-ng --cpu 8 … beside it: load average 9.1 on average (7.2-11.0, …)``."""
    beside = f"`{record['command']}` beside it" if record.get("workers") else "no load added"
    if not record.get("samples"):
        return f"{beside}; load average {record['before'][0]:.1f} before"
    return (
        f"{beside}: 1-minute load average {record['mean']:.1f} on average"
        f" ({record['min']:.1f}-{record['max']:.1f}, sampled every {SAMPLE_SECONDS:.0f} s)"
    )


@contextlib.contextmanager
def cpu_load(workers: int, timeout_s: int) -> Iterator[LoadRecord]:
    """Run ``stress-ng --cpu workers --timeout timeout_s`` for the body of the ``with``
    (``workers`` 0: nothing, the load average is only sampled: the quiet run's)."""
    record = LoadRecord(
        workers=workers,
        timeout_s=timeout_s,
        command=f"stress-ng --cpu {workers} --timeout {timeout_s}s" if workers else "nothing",
        before=os.getloadavg(),
    )
    process = _stress(workers, timeout_s) if workers else None
    done = threading.Event()

    def sample() -> None:
        while not done.wait(SAMPLE_SECONDS):
            record.samples.append(os.getloadavg()[0])

    sampler = threading.Thread(target=sample, name="bench-load-sampler", daemon=True)
    sampler.start()
    try:
        yield record
    finally:
        done.set()
        sampler.join(5)
        record.after = os.getloadavg()
        if process is not None:
            _end(process)


def _stress(workers: int, timeout_s: int) -> subprocess.Popen[bytes]:
    binary = shutil.which("stress-ng")
    if binary is None:
        raise SystemExit("bench: stress-ng is not on PATH; run `scripts/tools.sh bench` first")
    argv = [binary, "--cpu", str(workers), "--timeout", f"{timeout_s}s", "--quiet"]
    # Its own session: the workers are its children, and one killpg ends them all.
    return subprocess.Popen(argv, start_new_session=True, stdout=subprocess.DEVNULL)


def _end(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(5)
