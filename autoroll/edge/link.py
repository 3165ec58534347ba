"""What the HTTP edge needs of the controller, and the messages that carry it between processes.

The edge (webhook, ``/metrics``, probes) asks five things of the controller: ``deliver`` a
verified webhook's scope (never waiting), its loop's health for ``/livez`` and ``/readyz``,
the ``exposition`` of its metrics, and to start and stop. In tests the ``Controller``
answers in the same process (``autoroll.edge.wiring``); under ``autoroll serve`` it lives in
the reconcile process and ``autoroll.edge.reconcile_process.ReconcileProcess`` answers for it
over one pipe (docs/adr/027), with these messages (pickled by
``multiprocessing.connection``; both ends are this package, over an inherited socketpair):

    edge → controller   Deliver(scope, s)     a verified webhook, to look at now or in ``s``
                                          seconds (scopes merged while queued)
                        MetricsWanted(n)      a scrape of /metrics
    controller → edge   LoopStatus            the loop's health, every STATUS_SECONDS
                        MetricsText(n, text)  the answer to MetricsWanted(n)

Stopping is a signal (SIGTERM to the reconcile process), not a message: it must work from a
signal handler, and whatever the pipe holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Protocol

from prometheus_client import CollectorRegistry, generate_latest

from autoroll.controller.loop_health import Health
from autoroll.core.scope import Scope

#: Seconds between two ``LoopStatus`` messages: the probes' view is at most this old.
STATUS_SECONDS: Final = 0.5
#: Metric families the edge counts itself (the webhook's answers); every other family is
#: the controller's.
EDGE_FAMILIES: Final = frozenset({"autoroll_webhook_requests"})


class ControllerLink(Protocol):
    """The controller as the HTTP edge sees it (module docstring)."""

    def deliver(self, scope: Scope) -> None:
        """A verified webhook's nudge; returns at once, whatever the controller is doing."""

    def deliver_later(self, scope: Scope, seconds: float) -> None:
        """The same, for a pass ``seconds`` from now (a registry receiver's re-check)."""

    def liveness(self) -> Health: ...

    def readiness(self) -> Health: ...

    def exposition(self) -> bytes:
        """The controller's metrics in Prometheus' text format."""

    def start(self) -> None: ...

    def begin_stop(self) -> None:
        """SIGTERM arrived: tell the loop to stop, without waiting (gunicorn's worker calls
        it from its signal handler: ``ReconcileProcess`` only sends a signal)."""

    def stop(self, timeout: float) -> None: ...


@dataclass(frozen=True, slots=True)
class Deliver:
    scope: Scope
    seconds: float = 0.0  # 0: now (``deliver``); else ``deliver_later``


@dataclass(frozen=True, slots=True)
class MetricsWanted:
    request: int


@dataclass(frozen=True, slots=True)
class MetricsText:
    request: int
    text: bytes


def _blocks(text: bytes) -> list[tuple[str, bytes]]:
    """``generate_latest``'s text as (family name, its lines): each family is one block
    opening with ``# HELP <name>``, its samples (``_total``, ``_created``, ...) after."""
    blocks: list[tuple[str, list[bytes]]] = []
    for line in text.splitlines(keepends=True):
        if line.startswith(b"# HELP ") or not blocks:
            name = line.split()[2].decode() if line.startswith(b"# HELP ") else ""
            blocks.append((name, []))
        blocks[-1][1].append(line)
    return [(name, b"".join(lines)) for name, lines in blocks]


def merged_exposition(controller_text: bytes, edge: CollectorRegistry) -> bytes:
    """One ``/metrics`` from two processes: the controller's families, but for those the
    edge counts (``EDGE_FAMILIES``), which come from the edge's own registry. Both sides are
    ``generate_latest``'s output, so the families are whole blocks, moved as they are."""
    kept = [lines for name, lines in _blocks(controller_text) if not _edge_family(name)]
    ours = [lines for name, lines in _blocks(generate_latest(edge)) if _edge_family(name)]
    return b"".join(kept + ours)


def _edge_family(block: str) -> bool:
    """Is this block (``name``, ``name_total``, ``name_created``) one of the edge's?"""
    for suffix in ("_total", "_created"):
        block = block.removesuffix(suffix)
    return block in EDGE_FAMILIES
