"""``autoroll plan``: one reconcile pass in dry-run, shown as a table a person can act on.

It is the same pass the server runs (``Reconciler`` with ``dry_run=True``), so what the
table says is what the controller would do right now — not a separate re-implementation
that could drift from it. Rendering is pure: ``render(report)`` turns a ``TickReport`` into
text.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from prometheus_client import CollectorRegistry

from autoroll.decide import ContainerVerdict, Decision, Verdict
from autoroll.metrics import Metrics
from autoroll.model import Digest, Unknown
from autoroll.ports import ClusterPort, RegistryPort
from autoroll.reconciler import Reconciler, TickReport

HEADERS = ("DEPLOYMENT", "CONTAINER", "IMAGE", "RUNNING", "REGISTRY", "VERDICT")


def run_plan(
    *, cluster: ClusterPort, registry: RegistryPort, forgejo_host: str, now: datetime | None = None
) -> TickReport:
    """One dry pass: decide everything, delete nothing."""
    reconciler = Reconciler(
        cluster=cluster,
        registry=registry,
        metrics=Metrics(CollectorRegistry()),
        forgejo_host=forgejo_host,
        dry_run=True,
        clock=(lambda: now) if now is not None else (lambda: datetime.now(UTC)),
    )
    return reconciler.tick()


def verdict_text(verdict: ContainerVerdict) -> str:
    """The VERDICT column: what would happen, and why, in a few words."""
    detail = f" ({verdict.detail})" if verdict.detail else ""
    match verdict.verdict:
        case Verdict.CURRENT:
            # The detail names pods running the target's content under another name.
            return f"current{detail}"
        case Verdict.STALE:
            return f"stale → would delete pod {verdict.pod}"
        case Verdict.WAITING:
            next_pod = f"{verdict.pod} is stale; " if verdict.pod else ""
            return f"waiting: {next_pod}{verdict.reason.value}{detail}"
        case Verdict.LOOP_GUARD:
            return f"loop guard: {verdict.reason.value}{detail}"
        case _:
            return f"skipped: {verdict.reason.value}{detail}"


def _short(value: Digest | Unknown | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, Digest):
        return value.short
    return f"unknown ({value.reason})"


def rows(decisions: Sequence[Decision]) -> list[tuple[str, ...]]:
    """One row per enrolled Deployment and container, in the report's order."""
    table: list[tuple[str, ...]] = []
    for decision in decisions:
        for verdict in decision.containers:
            running = ",".join(d.short for d in verdict.running_digests) or "-"
            table.append(
                (
                    decision.key,
                    verdict.container,
                    verdict.image,
                    running,
                    _short(verdict.registry_digest),
                    verdict_text(verdict),
                )
            )
    return table


def render(report: TickReport, *, label_selector: str = "") -> str:
    """The plan as an aligned text table (or a one-line note when nothing is enrolled)."""
    if not report.decisions:
        where = f" LABEL_SELECTOR={label_selector}" if label_selector else " the label selector"
        return f"No Deployment matches{where}; nothing to roll.\n"
    body = rows(report.decisions)
    widths = [max(len(row[i]) for row in [HEADERS, *body]) for i in range(len(HEADERS))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [HEADERS, *body]
    ]
    deletions = sum(1 for d in report.decisions for _ in d.actions)
    lines.append("")
    lines.append(f"{len(report.decisions)} Deployment(s); {deletions} pod(s) would be deleted now.")
    return "\n".join(lines) + "\n"
