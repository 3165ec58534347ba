"""``autoroll plan``: one reconcile pass in dry-run, shown as a table a person can act on.

It is the same pass the server runs (``Reconciler`` with ``dry_run=True``), so what the
table says is what the controller would do right now — not a separate re-implementation
that could drift from it. Rendering is pure: ``render(report)`` turns a ``TickReport`` into
text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from prometheus_client import CollectorRegistry

from autoroll.decide import ContainerVerdict, Decision, Reason, Settledness, Verdict
from autoroll.metrics import Metrics
from autoroll.model import Digest, Unknown, WorkloadKind
from autoroll.ports import ClusterPort, NodePort, RegistryPort
from autoroll.reconciler import Reconciler, TickReport

#: WORKLOAD is ``namespace/kind/name`` (``shop/statefulset/db``).
HEADERS = ("WORKLOAD", "CONTAINER", "IMAGE", "RUNNING", "REGISTRY", "VERDICT")


def run_plan(
    *,
    cluster: ClusterPort,
    registry: RegistryPort,
    forgejo_host: str,
    now: datetime | None = None,
    nodes: NodePort | None = None,
) -> TickReport:
    """One dry pass: decide everything, delete nothing (Nodes are read as a pass would)."""
    reconciler = Reconciler(
        cluster=cluster,
        nodes=nodes,
        registry=registry,
        metrics=Metrics(CollectorRegistry()),
        forgejo_host=forgejo_host,
        dry_run=True,
        clock=(lambda: now) if now is not None else (lambda: datetime.now(UTC)),
    )
    return reconciler.tick()


def verdict_text(verdict: ContainerVerdict, settledness: Settledness | None = None) -> str:
    """The VERDICT column: what would happen, and why, in a few words. A workload that is
    not settled names the clause that failed (``not-settled: rollout-in-progress``)."""
    detail = f" ({verdict.detail})" if verdict.detail else ""
    match verdict.verdict:
        case Verdict.CURRENT:
            # The detail names pods running the target's content under another name.
            return f"current{detail}"
        case Verdict.STALE:
            return f"stale → would delete pod {verdict.pod}"
        case Verdict.WAITING:
            next_pod = f"{verdict.pod} is stale; " if verdict.pod else ""
            reason = verdict.reason.value
            if verdict.reason is Reason.NOT_SETTLED and settledness is not None:
                reason = f"{reason}: {settledness.reason.value}"
            return f"waiting: {next_pod}{reason}{detail}"
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
    """One row per enrolled workload and container, in the report's order."""
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
                    verdict_text(verdict, decision.settledness),
                )
            )
    return table


def render(
    report: TickReport,
    *,
    label_selector: str = "",
    kinds: Iterable[WorkloadKind] = tuple(WorkloadKind),
) -> str:
    """The plan as an aligned text table (or a one-line note when nothing is enrolled);
    ``kinds`` are the kinds watched (WORKLOAD_KINDS), named in that note."""
    if not report.decisions:
        where = f" LABEL_SELECTOR={label_selector}" if label_selector else " the label selector"
        watched = _kind_list(kinds)
        return f"No {watched} matches{where}; nothing to roll.\n"
    body = rows(report.decisions)
    widths = [max(len(row[i]) for row in [HEADERS, *body]) for i in range(len(HEADERS))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [HEADERS, *body]
    ]
    deletions = sum(1 for d in report.decisions for _ in d.actions)
    lines.append("")
    lines.append(f"{len(report.decisions)} workload(s); {deletions} pod(s) would be deleted now.")
    return "\n".join(lines) + "\n"


def _kind_list(kinds: Iterable[WorkloadKind]) -> str:
    """``Deployment, StatefulSet or DaemonSet``: the watched kinds as the API names them."""
    names = [kind.api_kind for kind in WorkloadKind if kind in set(kinds)]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
